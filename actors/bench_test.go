package actors_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/actors"
)

// Actor runtime micro-benchmarks (`make bench-micro`): Ask round trips, activation and
// passivation through the directory. The actor under test only answers, so the figures are the
// runtime's own cost.

type pong struct{}

func (pong) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*ping); ok {
		actors.Reply(ctx, 1)
	}
}

func benchDir(b *testing.B) *actors.Directory {
	b.Helper()
	sys := actors.NewSystem(nil, nil)
	b.Cleanup(sys.Shutdown)
	d := actors.NewDirectory(sys, actors.Kind{Name: "bench", IdleTimeout: time.Hour, New: func(string) actor.Actor { return pong{} }})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = d.Stop(ctx)
	})
	return d
}

func ask(b *testing.B, d *actors.Directory, id string) {
	if _, err := actors.Ask[int](context.Background(), d.To(id), &ping{}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAsk measures one request and reply with a live actor, one caller at a time.
func BenchmarkAsk(b *testing.B) {
	d := benchDir(b)
	ask(b, d, "live")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ask(b, d, "live")
	}
}

// BenchmarkAskParallel measures Ask with concurrent callers, each talking to its own live actor.
func BenchmarkAskParallel(b *testing.B) {
	d := benchDir(b)
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := "p" + strconv.FormatInt(n.Add(1), 10)
		for pb.Next() {
			ask(b, d, id)
		}
	})
}

// BenchmarkDirectoryActivation measures the first Ask to an id: the directory spawns an
// incarnation, which starts, handles the message and replies.
func BenchmarkDirectoryActivation(b *testing.B) {
	askFresh(b, benchDir(b), "a")
}

// askFresh times one Ask to each of b.N ids that have never been asked.
func askFresh(b *testing.B, d *actors.Directory, prefix string) {
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = prefix + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ask(b, d, ids[i])
	}
}

// pingCreator answers creating pings without an incarnation.
type pingCreator struct{}

func (pingCreator) Creates(msg any) bool   { _, ok := msg.(*ping); return ok }
func (pingCreator) Create(string, any) any { return 1 }

// BenchmarkDirectoryCreator measures the first Ask to an id handled by the kind's Creator, without
// an incarnation (compare BenchmarkDirectoryActivation, which spawns one).
func BenchmarkDirectoryCreator(b *testing.B) {
	sys := actors.NewSystem(nil, nil)
	b.Cleanup(sys.Shutdown)
	d := actors.NewDirectory(sys, actors.Kind{Name: "bench", New: func(string) actor.Actor { return pong{} }, Creator: pingCreator{}})
	askFresh(b, d, "c")
}

// BenchmarkDirectoryPassivation measures passivating live actors: each is poisoned after its
// mailbox, stops, and leaves the directory (Directory.Stop passivates every live actor this way;
// an idle actor goes through the same steps on its own).
func BenchmarkDirectoryPassivation(b *testing.B) {
	d := benchDir(b)
	for i := 0; i < b.N; i++ {
		ask(b, d, "s"+strconv.Itoa(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	if err := d.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if d.Live() != 0 {
		b.Fatalf("%d actors still live", d.Live())
	}
}

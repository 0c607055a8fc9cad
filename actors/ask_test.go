package actors_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
)

// echo answers its id and the request's number: after a delay when asked to, twice when asked to.
type echo struct{ id string }

type say struct {
	n     int
	delay time.Duration
	twice bool
}

func (e *echo) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*say)
	if !ok {
		return
	}
	answer := fmt.Sprintf("%s/%d", e.id, m.n)
	if m.delay == 0 {
		actors.Reply(ctx, answer)
		if m.twice {
			actors.Reply(ctx, answer+" again")
		}
		return
	}
	sender, root := ctx.Sender(), ctx.ActorSystem().Root
	time.AfterFunc(m.delay, func() { root.Send(sender, answer) })
}

// Every Ask gets its own answer: not another Ask's, not a late answer to one that gave up, not a
// second answer to one already answered.
func TestAskGetsItsOwnAnswer(t *testing.T) {
	t.Parallel()
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	d := actors.NewDirectory(sys, actors.Kind{Name: "echo", IdleTimeout: time.Minute, New: func(id string) actor.Actor { return &echo{id: id} }})

	// One that gives up before its answer comes, then many at once on the same actors.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	_, err := actors.Ask[string](ctx, d.To("a"), &say{n: -1, delay: 100 * time.Millisecond})
	cancel()
	require.ErrorIs(t, err, actors.ErrTimeout)
	_, err = actors.Ask[string](context.Background(), d.To("b"), &say{n: -2, twice: true})
	require.NoError(t, err)

	var wg sync.WaitGroup
	deadline := time.Now().Add(300 * time.Millisecond) // past the late answer
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				id := []string{"a", "b", "c"}[(w+i)%3]
				n := w*1_000_000 + i
				got, err := actors.Ask[string](context.Background(), d.To(id), &say{n: n})
				if err != nil {
					t.Error(err)
					return
				}
				if want := fmt.Sprintf("%s/%d", id, n); got != want {
					t.Errorf("asked %s, answered %s", want, got)
					return
				}
			}
		}(w)
	}
	wg.Wait()
}

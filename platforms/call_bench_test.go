package platforms_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
	"github.com/heraldhq/herald/platforms/x"
)

// The cost of one network call on loopback, both sides in this process: the floor that net/http
// sets under every call an adapter makes (bench/RESULTS.md, "Where a job's completion goes").
// Compare ns/op with the CPU the run used (-cpuprofile, or `time`): one call at a time, the
// client and the server take turns.

// BenchmarkSendLoopback is platforms.Send against a server that answers at once.
func BenchmarkSendLoopback(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"data":{"id":"1","text":"ok"}}`))
	}))
	defer srv.Close()
	hc := platforms.DefaultHTTPClient()
	body := []byte(`{"text":"Bench publish: the autumn collection is out today. #launch"}`)
	b.ReportAllocs()
	for b.Loop() {
		a, err := platforms.Send(context.Background(), hc, platforms.X, platforms.Call{Method: http.MethodPost, URL: srv.URL + "/2/tweets", Body: body, Bearer: "token", Create: true,
			Header: http.Header{"Content-Type": {"application/json"}}})
		if err != nil || a.Status != http.StatusCreated {
			b.Fatal(a, err)
		}
	}
}

// BenchmarkPublishX is one X post through the adapter to the simulator at zero latency: the
// adapter's work and the simulated network's on top of the loopback call.
func BenchmarkPublishX(b *testing.B) {
	s, err := sim.Start("127.0.0.1:0", sim.Options{LimitScale: 1e6})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	a := x.New(s.AdapterConfig(platforms.X))
	creds, err := s.NewAccount(platforms.X, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := a.Publish(context.Background(), creds, platforms.Post{Text: fmt.Sprintf("Bench publish %d: the autumn collection is out today. #launch", i)}); err != nil {
			b.Fatal(err)
		}
	}
}

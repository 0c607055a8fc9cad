package platforms_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
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

// BenchmarkPublishCanned is one publish of each network in the bench's publish scenario (X,
// Bluesky, LinkedIn) through its adapter against a server that answers each create at once with
// a canned answer: the adapter's and net/http's client work per call, with little of the
// simulator's (allocs/op and cpu-ns/op, the process's CPU per call, count the server's part too;
// the machine's other load does not).
func BenchmarkPublishCanned(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/2/tweets":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"data":{"id":"1867000000000000001","text":"ok","edit_history_tweet_ids":["1867000000000000001"]}}`))
		case "/xrpc/com.atproto.repo.createRecord":
			_, _ = w.Write([]byte(`{"uri":"at://did:plc:bench/app.bsky.feed.post/3kbench","cid":"bafyreibench","commit":{"cid":"bafyreicommit","rev":"3kbenchrev"},"validationStatus":"valid"}`))
		case "/rest/posts":
			w.Header().Set("X-Restli-Id", "urn:li:share:7000000000000000001")
			w.WriteHeader(http.StatusCreated)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	creds := platforms.Credentials{AccessToken: "token-of-the-bench-account", UserID: "did:plc:bench", Handle: "bench.bsky.social"}
	text := "Bench publish 1: the autumn collection is out today. #launch"
	for _, p := range []platforms.Platform{platforms.X, platforms.Bluesky, platforms.LinkedIn} {
		b.Run(string(p), func(b *testing.B) {
			a := registry.New(map[platforms.Platform]platforms.Config{p: {BaseURL: srv.URL, AuthURL: srv.URL, UploadURL: srv.URL}})[p]
			post := platforms.Post{Text: text, Options: platforms.NewOptions(p)}
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				if _, err := a.Publish(context.Background(), creds, post); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time this process has used (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

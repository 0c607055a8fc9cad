package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/loopbackca"
)

// webhookSubscriptions is how many subscriptions of the sandbox user receive every event: each
// deleted draft is one event and that many deliveries.
const webhookSubscriptions = 10

// benchReceiver is an HTTPS receiver on loopback that records, for every delivery, the time from
// the event's commit (the body's created_at) to its arrival.
type benchReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	lat   []time.Duration
	count atomic.Int64
	last  atomic.Int64 // Unix ns of the latest delivery
	want  int64
	all   chan struct{}
}

func newBenchReceiver(ca *loopbackca.CA, want int64) *benchReceiver {
	r := &benchReceiver{want: want, all: make(chan struct{})}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		now := time.Now()
		var b struct {
			CreatedAt time.Time `json:"created_at"`
		}
		if json.Unmarshal(body, &b) == nil && !b.CreatedAt.IsZero() {
			r.mu.Lock()
			r.lat = append(r.lat, now.Sub(b.CreatedAt))
			r.mu.Unlock()
		}
		r.last.Store(now.UnixNano())
		if r.count.Add(1) == r.want {
			close(r.all)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	r.srv.TLS = ca.TLSConfig()
	r.srv.EnableHTTP2 = true
	r.srv.StartTLS()
	return r
}

// webhooks measures deliveries per second from a real server to a loopback HTTPS receiver, and
// the latency from the committed state change (a deleted draft: post.deleted) to the receiver.
// It runs its own server (fresh data, the receiver's test CA trusted with --webhook-ca-file), with
// webhookSubscriptions subscriptions; the limit beside it is the rate at which this process alone
// can POST to the same receiver over the same kind of connection.
func webhooks(e *Env) (Result, error) {
	drafts := 3000
	if e.Quick {
		drafts = 500
	}
	dir, err := os.MkdirTemp("", "herald-bench-webhooks-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	ca, err := loopbackca.Make(dir)
	if err != nil {
		return Result{}, err
	}
	want := int64(drafts * webhookSubscriptions)
	rcv := newBenchReceiver(ca, want)
	defer rcv.srv.Close()

	prev, had := os.LookupEnv("HERALD_WEBHOOK_CA_FILE")
	os.Setenv("HERALD_WEBHOOK_CA_FILE", ca.File)
	srv, err := StartEnv(e.log)
	if had {
		os.Setenv("HERALD_WEBHOOK_CA_FILE", prev)
	} else {
		os.Unsetenv("HERALD_WEBHOOK_CA_FILE")
	}
	if err != nil {
		return Result{}, err
	}
	defer srv.Close()
	srv.Connections = e.Connections

	for i := 0; i < webhookSubscriptions; i++ {
		body := fmt.Sprintf(`{"url":"%s/hook/%d","events":["post.deleted","post.published","post.failed"]}`, rcv.srv.URL, i)
		if code, out, err := srv.send(http.MethodPost, "/v1/webhooks", []byte(body)); err != nil || code != http.StatusCreated {
			return Result{}, fmt.Errorf("create webhook: %d %s %v", code, out, err)
		}
	}
	ids := make([]string, drafts)
	if err := parallel(e.Connections, drafts, func(i int) error {
		code, out, err := srv.send(http.MethodPost, "/v1/posts", srv.draftBody(i))
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("create draft: %d %s %v", code, out, err)
		}
		var r struct{ ID string }
		if err := json.Unmarshal(out, &r); err != nil {
			return err
		}
		ids[i] = r.ID
		return nil
	}); err != nil {
		return Result{}, err
	}

	done := make(chan struct{})
	go progress(e.log, "webhooks", 10*time.Second, done)
	start := time.Now()
	if err := parallel(e.Connections, drafts, func(i int) error {
		code, out, err := srv.send(http.MethodDelete, "/v1/posts/"+ids[i], nil)
		if err != nil || code != http.StatusNoContent {
			return fmt.Errorf("delete draft: %d %s %v", code, out, err)
		}
		return nil
	}); err != nil {
		close(done)
		return Result{}, err
	}
	deleted := time.Since(start)
	select {
	case <-rcv.all:
	case <-time.After(5 * time.Minute):
	}
	close(done)
	got := rcv.count.Load()
	elapsed := time.Unix(0, rcv.last.Load()).Sub(start).Seconds()
	rcv.mu.Lock()
	lat := latencies{d: rcv.lat}
	rcv.lat = nil
	rcv.mu.Unlock()

	// Latency at a steady rate well below saturation: 50 deletes a second (500 deliveries/s).
	paced, err := pacedDeletes(srv, rcv, 50, 10*time.Second/map[bool]time.Duration{true: 4, false: 1}[e.Quick])
	if err != nil {
		return Result{}, err
	}
	limit := receiverLimit(rcv.srv.URL+"/hook/limit", ca, e.Connections, 2*time.Second)
	r := Result{
		Ops: int(got), Seconds: elapsed, Throughput: float64(got) / elapsed,
		P50ms: lat.pct(0.5), P99ms: lat.pct(0.99), P999ms: lat.pct(0.999), Errors: int(want - got),
		LimitName: "bench's own POSTs to the receiver", Limit: limit,
		Notes: fmt.Sprintf("%d drafts deleted at once in %.2fs (%.0f/s), %d subscriptions each: %d deliveries over HTTPS (HTTP/2) to a loopback receiver; "+
			"latency from the committed delete to the receiver, including the queue of the burst; at a steady %d deliveries/s: p50 %.2f ms, p99 %.2f ms; dedicated server peak RSS %.0f MB",
			drafts, deleted.Seconds(), float64(drafts)/deleted.Seconds(), webhookSubscriptions, want,
			50*webhookSubscriptions, paced.pct(0.5), paced.pct(0.99), srv.PeakRSSMB()),
	}
	return r, nil
}

// pacedDeletes deletes perSecond drafts a second for d and returns the deliveries' latencies.
func pacedDeletes(srv *Env, rcv *benchReceiver, perSecond int, d time.Duration) (*latencies, error) {
	n := int(d.Seconds() * float64(perSecond))
	ids := make([]string, n)
	if err := parallel(srv.Connections, n, func(i int) error {
		code, out, err := srv.send(http.MethodPost, "/v1/posts", srv.draftBody(i))
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("create draft: %d %s %v", code, out, err)
		}
		var r struct{ ID string }
		if err := json.Unmarshal(out, &r); err != nil {
			return err
		}
		ids[i] = r.ID
		return nil
	}); err != nil {
		return nil, err
	}
	before := rcv.count.Load()
	want := before + int64(n*webhookSubscriptions)
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		<-tick.C
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			if code, out, err := srv.send(http.MethodDelete, "/v1/posts/"+id, nil); err != nil || code != http.StatusNoContent {
				errs <- fmt.Errorf("delete draft: %d %s %v", code, out, err)
			}
		}(ids[i])
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for rcv.count.Load() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	return &latencies{d: append([]time.Duration(nil), rcv.lat...)}, nil
}

// send makes one authenticated request.
func (e *Env) send(method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, e.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+e.Key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// parallel runs fn(0..n-1) on conns workers and returns the first error.
func parallel(conns, n int, fn func(i int) error) error {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// receiverLimit is how many POSTs per second this process alone makes to the receiver over
// HTTPS with HTTP/2 and conns requests in flight: the ceiling of any delivery rate here.
func receiverLimit(url string, ca *loopbackca.CA, conns int, d time.Duration) float64 {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: conns}}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	body := []byte(`{"id":"0195f3c0-0000-7000-8000-000000000000","type":"post.deleted","created_at":"` + time.Now().UTC().Format(time.RFC3339Nano) + `","data":{"post_id":"0195f3c0-0000-7000-8000-000000000001","status":"draft","platforms":[]}}`)
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds()
}

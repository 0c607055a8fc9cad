package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/pgtest"
)

// PostgreSQL stopped at once (pg_ctl stop -m immediate, as a crash) and started again under load:
// while it is down every create answers 503 with Retry-After, never another error; once it is
// back creates succeed again without restarting Herald, /readyz is ready again, and every create
// acknowledged with 201, before, during or after, is stored. The test stops the server that the
// whole test binary shares, so it does not run in parallel (the parallel tests start after it).
func TestPostgresRestartUnderLoad(t *testing.T) {
	if !pgtest.Enabled() {
		t.Skip("runs with HERALD_TEST_STORE=postgres (make test-postgres)")
	}
	b := setup(t, bundleOpts{demo: true, planLimits: map[string]int{"pro": 1000000, "free": 1000000}})
	ids := []string{b.accounts[0].ID}
	client := &http.Client{Timeout: 30 * time.Second}
	create := func(n int) (int, string, http.Header, error) {
		body, _ := json.Marshal(map[string]any{"content": fmt.Sprintf("restart %d", n), "platforms": ids})
		req, _ := http.NewRequest("POST", b.url+"/v1/posts", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+b.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", nil, err
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 201 {
			return resp.StatusCode, string(raw), resp.Header, nil
		}
		var r struct{ ID string }
		err = json.Unmarshal(raw, &r)
		return 201, r.ID, resp.Header, err
	}

	var (
		mu          sync.Mutex
		acked       []string
		unexpected  []string
		unavailable atomic.Int64
		stop        atomic.Bool
		seq         atomic.Int64
		wg          sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Bounded: at most 5,000 creates per writer, and the writers stop with the test.
			for i := 0; i < 5000 && !stop.Load(); i++ {
				status, out, hdr, err := create(int(seq.Add(1)))
				mu.Lock()
				switch {
				case err != nil:
					unexpected = append(unexpected, err.Error())
				case status == 201:
					acked = append(acked, out)
				case status == 503 && hdr.Get("Retry-After") != "":
					unavailable.Add(1)
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					continue
				default:
					unexpected = append(unexpected, fmt.Sprintf("%d %s", status, out))
				}
				mu.Unlock()
			}
		}()
	}
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	ackedN := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("no %s within 60 s: %d acknowledged, %d answered 503, unexpected: %.5q", what, len(acked), unavailable.Load(), unexpected)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("creates before the stop", func() bool { return ackedN() >= 50 })
	pgtest.Stop(t)
	stopped := true
	t.Cleanup(func() {
		if stopped {
			pgtest.Start(t)
		}
	})
	waitFor("503 while PostgreSQL is down", func() bool { return unavailable.Load() >= 20 })
	require.Equal(t, 503, b.do("GET", "/readyz", nil).status, "not ready while the database is down")
	before := ackedN()
	pgtest.Start(t)
	stopped = false
	waitFor("creates after the start", func() bool { return ackedN() >= before+50 })
	waitFor("ready again", func() bool { return b.do("GET", "/readyz", nil).status == 200 })
	stop.Store(true)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, unexpected, "only 201 and 503 with Retry-After")
	t.Logf("%d creates acknowledged, %d answered 503", len(acked), unavailable.Load())
	for _, id := range acked {
		r := b.do("GET", "/v1/posts/"+id, nil)
		require.Equal(t, 200, r.status, "acknowledged post %s: %s", id, r.body)
	}
}

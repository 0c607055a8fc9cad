package bench

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A scenario that fails is reported as failed and the ones after it still run.
func TestAFailedScenarioDoesNotStopTheSuite(t *testing.T) {
	ran := []string{}
	selected := []Scenario{
		{Name: "first", Run: func(*Env) (Result, error) {
			ran = append(ran, "first")
			return Result{}, errors.New("the streams opened too late")
		}},
		{Name: "second", Run: func(*Env) (Result, error) {
			ran = append(ran, "second")
			return Result{Ops: 7, Throughput: 70, PeakRSSMB: 12, Limit: 100}, nil
		}},
		{Name: "third", Skip: "not here"},
	}
	var rep Report
	failed := runScenarios(&Env{}, selected, &rep)
	if strings.Join(ran, ",") != "first,second" {
		t.Fatalf("ran %v, want both scenarios", ran)
	}
	if strings.Join(failed, ",") != "first" {
		t.Fatalf("failed = %v, want [first]", failed)
	}
	if len(rep.Results) != 3 {
		t.Fatalf("%d results, want 3: %+v", len(rep.Results), rep.Results)
	}
	if r := rep.Results[0]; r.Scenario != "first" || r.Failed != "the streams opened too late" {
		t.Fatalf("first result %+v", r)
	}
	if r := rep.Results[1]; r.Scenario != "second" || r.Failed != "" || r.Ops != 7 || r.Ratio != 0.7 {
		t.Fatalf("second result %+v", r)
	}
	if r := rep.Results[2]; r.Skipped != "not here" {
		t.Fatalf("third result %+v", r)
	}
	var out bytes.Buffer
	Print(rep, &out)
	if !strings.Contains(out.String(), "first: FAILED: the streams opened too late") {
		t.Fatalf("the table does not say the first failed:\n%s", out.String())
	}
}

// A stream whose first event is done joined after its job had finished: late, and not a delivery.
func TestStreamDoneTellsALateClient(t *testing.T) {
	completed := "2026-11-28T10:00:00.5Z"
	for _, tc := range []struct {
		name   string
		events string
		late   bool
	}{
		{"waiting", "event: progress\ndata: {\"status\":\"processing\"}\n\nevent: done\ndata: {\"completed_at\":\"" + completed + "\"}\n\n", false},
		{"late", "event: done\ndata: {\"completed_at\":\"" + completed + "\"}\n\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/jobs/j1/stream" || r.Header.Get("Authorization") != "Bearer k" {
					http.Error(w, "no", http.StatusNotFound)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, tc.events)
			}))
			defer srv.Close()
			opened := 0
			done, _, late, err := (&Env{URL: srv.URL, Key: "k"}).streamDone("j1", func() { opened++ })
			if err != nil {
				t.Fatal(err)
			}
			if late != tc.late || opened != 1 || done.Format(time.RFC3339Nano) != completed {
				t.Fatalf("late %v (want %v), opened %d times, completed_at %v", late, tc.late, opened, done)
			}
		})
	}
}

// A scenario's own notes keep the first error its load counted.
func TestTheFirstErrorOutlivesAScenariosNotes(t *testing.T) {
	if got, want := keepFirstError("accepted 10/s", "first error: publish: 503"), "accepted 10/s; first error: publish: 503"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := keepFirstError("accepted 10/s", ""); got != "accepted 10/s" {
		t.Fatalf("no error: got %q", got)
	}
}

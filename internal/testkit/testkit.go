// Package testkit holds small helpers that Herald's tests in several packages share.
package testkit

import (
	"bytes"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// Gathered sums the counters and gauges named name whose labels include every given pair
// (label, value, label, value, …) in what g gathers; 0 when there are none.
func Gathered(t testing.TB, g prometheus.Gatherer, name string, labelPairs ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labelPairs); i += 2 {
				if labels[labelPairs[i]] != labelPairs[i+1] {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// SyncBuffer is a bytes.Buffer that a writer goroutine (a logger, a child process's output) and
// the test reading it may use at once.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

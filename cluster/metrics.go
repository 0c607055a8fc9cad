package cluster

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/persistence"
)

// Metrics are a member's leases and what became of them. Labels name kinds of lease and of
// change, never a lease, node or account.
type Metrics struct {
	reg prometheus.Registerer
	// Epochs counts the leases this node took, by how: "takeover" (the previous owner went
	// silent and its lease expired) or "handoff" (it was released, or never held).
	Epochs *prometheus.CounterVec
	// Fenced counts the writes the store refused because the lease they were made under moved.
	Fenced prometheus.Counter
	// HandOff observes how long giving a lease up took: draining its work and releasing it.
	HandOff prometheus.Histogram
}

// NewMetrics registers a member's metrics on reg (nil: kept but not exported).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reg: reg,
		Epochs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_cluster_epochs_bumped_total", Help: "Leases this node took, each under a new epoch, by how: takeover (the owner's lease expired) or handoff (released or new).",
		}, []string{"how"}),
		Fenced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_cluster_fenced_writes_total", Help: "Store writes refused because the lease they were made under had moved to another node.",
		}),
		HandOff: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "herald_cluster_handoff_seconds", Help: "Time to give a lease up: drain the work under it, then release it.",
			Buckets: []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Epochs, m.Fenced, m.HandOff)
	}
	return m
}

// heldBy exports the leases m holds, by kind (shard, singleton).
func (mt *Metrics) heldBy(m *Member) {
	if mt == nil || mt.reg == nil {
		return
	}
	for _, kind := range []string{"shard", "singleton"} {
		mt.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "herald_cluster_leases_held", Help: "Leases this node holds, by kind (shard, singleton).", ConstLabels: prometheus.Labels{"kind": kind},
		}, func() float64 {
			n := 0
			for _, l := range m.Held() {
				if strings.HasPrefix(l.Name, kind+"/") {
					n++
				}
			}
			return float64(n)
		}))
	}
}

func (mt *Metrics) taken(t persistence.Taken) {
	if mt == nil {
		return
	}
	how := "handoff"
	if !t.Released {
		how = "takeover"
	}
	mt.Epochs.WithLabelValues(how).Inc()
}

func (mt *Metrics) handedOff(d time.Duration) {
	if mt != nil {
		mt.HandOff.Observe(d.Seconds())
	}
}

// FencedWrite counts a write the store refused with persistence.ErrFenced.
func (mt *Metrics) FencedWrite() {
	if mt != nil {
		mt.Fenced.Inc()
	}
}

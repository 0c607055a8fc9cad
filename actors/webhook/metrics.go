package webhook

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/persistence"
)

// Attempt outcomes (the outcome label of herald_webhook_attempts_total).
const (
	outcomeSuccess    = "success"
	outcomeGone       = "gone"
	outcomeHTTP3xx    = "http_3xx"
	outcomeHTTP4xx    = "http_4xx"
	outcomeHTTP5xx    = "http_5xx"
	outcomeHTTPOther  = "http_other"
	outcomeTimeout    = "timeout"
	outcomeConnection = "connection_error"
	outcomeBlocked    = "blocked"
)

// Metrics are the webhook metrics, labelled by event type and outcome, never by id or URL.
type Metrics struct {
	Attempts        *prometheus.CounterVec
	Deliveries      *prometheus.CounterVec
	Retries         *prometheus.CounterVec
	AttemptDuration *prometheus.HistogramVec
	Latency         *prometheus.HistogramVec
	Fanout          prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, store *persistence.Store) *Metrics {
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_webhook_attempts_total",
			Help: "Webhook delivery attempts by event type and outcome (success, gone, http_3xx, http_4xx, http_5xx, timeout, connection_error, blocked).",
		}, []string{"event", "outcome"}),
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_webhook_deliveries_total",
			Help: "Webhook deliveries that ended, by event type and outcome (succeeded, failed, cancelled).",
		}, []string{"event", "outcome"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_webhook_retries_total", Help: "Webhook delivery attempts after the first, by event type.",
		}, []string{"event"}),
		AttemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_webhook_attempt_duration_seconds", Help: "Duration of one webhook delivery attempt (connection, request and response).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"outcome"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_webhook_delivery_latency_seconds", Help: "Time from the committed state change to the receiver's 2xx answer, by event type.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21600, 86400},
		}, []string{"event"}),
		Fanout: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_webhook_events_dispatched_total", Help: "Outbox events read by the webhook dispatcher.",
		}),
	}
	if reg == nil {
		return m
	}
	depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_webhook_outbox_depth", Help: "Outbox events not yet fanned out to subscriptions (counted up to 1,000,000).",
	}, func() float64 {
		n := 0
		_ = store.View(func(tx *persistence.Tx) error { n = tx.EventsPending(Consumer, 1_000_000); return nil })
		return float64(n)
	})
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_webhook_deliveries_pending", Help: "Webhook deliveries waiting for their first attempt or a retry (counted up to 1,000,000).",
	}, func() float64 {
		n := 0
		_ = store.View(func(tx *persistence.Tx) error { n = tx.CountPendingDeliveries(1_000_000); return nil })
		return float64(n)
	})
	reg.MustRegister(m.Attempts, m.Deliveries, m.Retries, m.AttemptDuration, m.Latency, m.Fanout, depth, pending)
	return m
}

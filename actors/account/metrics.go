package account

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the account actors' network metrics, by platform, endpoint and outcome.
type Metrics struct {
	Calls          *prometheus.CounterVec
	CallSeconds    *prometheus.HistogramVec
	Refreshes      *prometheus.CounterVec
	BudgetWaits    *prometheus.CounterVec
	BudgetLeft     *prometheus.GaugeVec
	RateLimited    *prometheus.CounterVec
	UnknownOutcome *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_network_calls_total", Help: "Adapter calls to the networks by platform, endpoint (publish, refresh, revoke, lookup) and outcome (ok or an error kind).",
		}, []string{"platform", "endpoint", "outcome"}),
		CallSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_network_call_duration_seconds", Help: "Duration of adapter calls to the networks.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120},
		}, []string{"platform", "endpoint"}),
		Refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_token_refreshes_total", Help: "OAuth token refreshes by platform and outcome.",
		}, []string{"platform", "outcome"}),
		BudgetWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_rate_budget_waits_total", Help: "Times a publish waited because the account's rate budget was spent.",
		}, []string{"platform"}),
		BudgetLeft: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_rate_budget_remaining", Help: "Publishes left in the rate budget of the account most recently used, by platform.",
		}, []string{"platform"}),
		RateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_network_rate_limited_total", Help: "Rate-limit refusals (429s and quota codes) received from the networks.",
		}, []string{"platform"}),
		UnknownOutcome: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_network_unknown_outcomes_total", Help: "Publishes whose outcome was unknown, by how they were resolved (found, not_found, unresolved).",
		}, []string{"platform", "resolution"}),
	}
	if reg != nil {
		reg.MustRegister(m.Calls, m.CallSeconds, m.Refreshes, m.BudgetWaits, m.BudgetLeft, m.RateLimited, m.UnknownOutcome)
	}
	return m
}

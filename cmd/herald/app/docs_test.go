package app_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The Grafana dashboard (docs/grafana/herald.json) and the Prometheus alert rules
// (docs/prometheus/alerts.yml): their shape here, their metric names against a running Herald in
// TestObservabilityOfARepresentativeRun.

type dashboard struct {
	exprs  []string
	titles []string
}

type grafanaPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "grafana", "herald.json"))
	require.NoError(t, err)
	require.True(t, json.Valid(raw), "herald.json is valid JSON")
	var d struct {
		Title         string         `json:"title"`
		UID           string         `json:"uid"`
		SchemaVersion int            `json:"schemaVersion"`
		Panels        []grafanaPanel `json:"panels"`
		Templating    struct {
			List []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &d))
	require.Equal(t, "Herald", d.Title)
	require.NotEmpty(t, d.UID)
	require.GreaterOrEqual(t, d.SchemaVersion, 36)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	require.Equal(t, "datasource", vars["datasource"])
	require.Equal(t, "query", vars["instance"])

	var out dashboard
	ids := map[int]bool{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			require.False(t, ids[p.ID], "panel id %d is unique", p.ID)
			ids[p.ID] = true
			require.NotEmpty(t, p.Title)
			require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "panel %q fits the 24-column grid", p.Title)
			walk(p.Panels)
			if p.Type == "row" {
				out.titles = append(out.titles, p.Title)
				continue
			}
			require.NotEmpty(t, p.Targets, "panel %q has a query", p.Title)
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.RefID)
				require.NotEmpty(t, tg.Expr, "panel %q", p.Title)
				out.exprs = append(out.exprs, tg.Expr)
			}
		}
	}
	walk(d.Panels)
	return out
}

type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadAlertRules(t *testing.T) []alertRule {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "prometheus", "alerts.yml"))
	require.NoError(t, err)
	var f struct {
		Groups []struct {
			Name  string      `yaml:"name"`
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &f), "alerts.yml is YAML")
	require.NotEmpty(t, f.Groups)
	var out []alertRule
	names := map[string]bool{}
	for _, g := range f.Groups {
		require.NotEmpty(t, g.Name)
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s: every rule is an alert", g.Name)
			require.False(t, names[r.Alert], "alert %s is unique", r.Alert)
			names[r.Alert] = true
			require.NotEmpty(t, strings.TrimSpace(r.Expr), r.Alert)
			require.Contains(t, []string{"info", "warning", "critical"}, r.Labels["severity"], r.Alert)
			require.NotEmpty(t, r.Annotations["summary"], r.Alert)
			require.NotEmpty(t, r.Annotations["description"], r.Alert)
			out = append(out, r)
		}
	}
	return out
}

// The dashboard covers every area the operations guide promises.
func TestDashboardCoversHerald(t *testing.T) {
	t.Parallel()
	d := loadDashboard(t)
	all := strings.Join(d.exprs, "\n")
	for _, name := range []string{
		// actors per kind: live, mailbox depth, processing time, restarts
		"herald_actors_live", "herald_actor_mailbox_depth", "herald_actor_message_duration_seconds_bucket", "herald_actor_restarts_total",
		// HTTP
		"herald_http_requests_total", "herald_http_request_duration_seconds_bucket", "herald_sse_subscribers",
		// jobs
		"herald_jobs_finished_total", "herald_job_duration_seconds_bucket", "herald_jobs_oldest_active_age_seconds", "herald_scheduler_lateness_seconds_bucket",
		// networks and budgets
		"herald_network_calls_total", "herald_rate_budget_waits_total", "herald_rate_budget_remaining", "herald_accounts_token_expiring",
		// webhooks
		"herald_webhook_attempts_total", "herald_webhook_outbox_depth",
		// cache
		"herald_live_cache_requests_total",
		// bbolt
		"herald_bbolt_commit_duration_seconds_bucket", "herald_bbolt_commit_batch_size_sum", "herald_bbolt_size_bytes",
	} {
		require.Contains(t, all, name)
	}
	for _, row := range []string{"HTTP", "Actors (per kind)", "Jobs and scheduler", "Networks and rate budgets", "Webhooks", "Live data and cache", "bbolt"} {
		require.Contains(t, d.titles, row)
	}
}

// The alert rules cover what the operations guide promises.
func TestAlertRulesCoverHerald(t *testing.T) {
	t.Parallel()
	have := map[string]bool{}
	for _, r := range loadAlertRules(t) {
		have[r.Alert] = true
	}
	for _, name := range []string{
		"HeraldHighErrorRatio", "HeraldJobFailureRatio", "HeraldJobsStuck", "HeraldAccountTokensExpired",
		"HeraldAccountTokensExpiring", "HeraldTokenRefreshRefused", "HeraldWebhookOutboxBacklog", "HeraldActorRestartStorm",
	} {
		require.True(t, have[name], "alerts.yml has %s", name)
	}
}

// promtool (Debian's prometheus package; .ci/run installs it) checks the alert rules, runs their
// unit tests, checks the example scrape configuration, and parses every dashboard query as a
// recording rule.
func TestPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (apt-get install prometheus provides it; .ci/run installs it): " +
			"the alert rules were parsed as YAML and their metric names checked, but not their PromQL")
	}
	root := repoRoot(t)
	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(promtool, args...).CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	}
	run("check", "rules", filepath.Join(root, "docs", "prometheus", "alerts.yml"))
	run("test", "rules", filepath.Join(root, "docs", "prometheus", "alerts_test.yml"))
	run("check", "config", filepath.Join(root, "docs", "prometheus", "prometheus.yml"))

	// Grafana's variables become what they stand for, then each query is a recording rule.
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, expr := range loadDashboard(t).exprs {
		expr = strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*").Replace(expr)
		q, err := json.Marshal(expr)
		require.NoError(t, err)
		fmt.Fprintf(&b, "      - record: dashboard:query_%d\n        expr: %s\n", i, q)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	run("check", "rules", path)
}

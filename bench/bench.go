// Package bench is Herald's bench suite behind `make bench` (herald bench). It starts a real
// `herald serve` process in sandbox mode on loopback with a fresh data directory, drives it over
// HTTP from this process, and prints for every scenario its throughput and latency beside the
// limit measured on the same machine in the same run (for example the raw bbolt group-commit rate
// for the same records), with the ratio. Scenarios whose feature Herald does not have yet are
// listed as skipped, never faked.
package bench

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// Result is one scenario's figures.
type Result struct {
	Scenario string `json:"scenario"`
	Skipped  string `json:"skipped,omitempty"`
	// Failed is the error of a scenario that could not measure (its other fields are zero).
	Failed     string  `json:"failed,omitempty"`
	Ops        int     `json:"ops"`
	Seconds    float64 `json:"seconds"`
	Throughput float64 `json:"throughput_per_s"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	// P95ms is given by the scenarios whose samples are too few for a p99 (the nodes' failover).
	P95ms     float64 `json:"p95_ms,omitempty"`
	P999ms    float64 `json:"p999_ms"`
	Errors    int     `json:"errors"`
	PeakRSSMB float64 `json:"server_peak_rss_mb"`
	LimitName string  `json:"limit_name,omitempty"`
	Limit     float64 `json:"limit_per_s,omitempty"`
	Ratio     float64 `json:"ratio,omitempty"`
	Notes     string  `json:"notes,omitempty"`
	// Rows are the results of a scenario that measures several things (the nodes scenario: each
	// phase of each round); they are reported in its place, each named after the scenario.
	Rows []Result `json:"-"`
}

// Report is a whole run.
type Report struct {
	StartedAt time.Time `json:"started_at"`
	Machine   string    `json:"machine"`
	Quick     bool      `json:"quick"`
	Results   []Result  `json:"results"`
}

// Scenario is one named measurement.
type Scenario struct {
	Name string
	// Run measures; nil means the feature is not there yet (Skip says why).
	Run  func(e *Env) (Result, error)
	Skip string
}

// Scenarios lists every scenario in the order they run.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "create-drafts", Run: createDrafts},
		{Name: "publish", Run: publishScenario},
		{Name: "account-throughput", Run: accountThroughput},
		{Name: "budget-efficiency", Run: budgetEfficiency},
		{Name: "bulk-agency", Run: bulkAgency},
		{Name: "campaign", Run: campaignScenario},
		{Name: "targets", Run: targetsScenario},
		{Name: "sse-fanout", Run: sseFanout},
		{Name: "sse-delivery", Run: sseDelivery},
		{Name: "scheduler-burst", Run: schedulerBurst},
		{Name: "backlog", Run: backlogScenario},
		{Name: "webhooks", Run: webhooks},
		{Name: "media-upload", Run: mediaUpload},
		{Name: "analytics", Run: analyticsScenario},
		{Name: "dashboard", Run: dashboardScenario},
		{Name: "memory-at-rest", Run: memoryAtRest},
		{Name: "recovery", Run: recoveryScenario},
		{Name: "overload", Run: overloadScenario},
		{Name: "nodes", Run: nodesScenario},
	}
}

// Main is `herald bench`.
func Main(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "compare" {
		if len(args) != 3 {
			return errors.New("usage: herald bench compare A.json B.json")
		}
		return Compare(args[1], args[2], stdout)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "a short smoke run (under 2 minutes)")
	only := fs.String("scenario", "", "run only this scenario (or these, separated by commas)")
	out := fs.String("out", "", "also write the results as JSON to this file")
	conns := fs.Int("connections", 64, "concurrent HTTP connections")
	fs.StringVar(&storeBase, "store", "", "run the servers and the ceilings on this PostgreSQL database (postgres://…), each in a new schema of it, instead of bbolt")
	fs.StringVar(&serverBin, "server-bin", "", "run the scenarios' servers with this herald binary (another build, for an A/B comparison) instead of this one")
	fs.StringVar(&debugAddr, "debug-addr", "", "serve Go's pprof profiles of each scenario's own server on this address (one at a time: each scenario stops its server before the next starts)")
	fs.StringVar(&profileDir, "profile", "", "write the CPU profile, the allocations and each thread's CPU (from /proc) of every measured phase's server to a folder per phase in this directory, and print their top buckets (implies --debug-addr, on a free port when not given)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var baseExtra []string
	if profileDir != "" {
		// The scenarios' own servers get --debug-addr; the base server one of its own.
		var err error
		if debugAddr == "" {
			if debugAddr, err = freeAddr(); err != nil {
				return err
			}
		}
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		baseExtra = []string{"--debug-addr", addr}
	}
	if storeBase != "" && !persistence.IsPostgresURL(storeBase) {
		return fmt.Errorf("--store %q is not a postgres:// URL", storeBase)
	}
	var selected []Scenario
	names := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		names[strings.TrimSpace(n)] = true
	}
	for _, s := range Scenarios() {
		if *only == "" || names[s.Name] {
			selected = append(selected, s)
		}
	}
	if len(selected) == 0 {
		return fmt.Errorf("unknown scenario %q", *only)
	}
	defer dropStores(stderr) // after env.Close: the servers are stopped
	env, err := StartEnv(stderr, baseExtra...)
	if err != nil {
		return err
	}
	defer env.Close()
	env.Quick, env.Connections = *quick, *conns
	env.Duration = 10 * time.Second
	if *quick {
		env.Duration = 2 * time.Second
	}
	rep := Report{StartedAt: time.Now().UTC(), Machine: machine(), Quick: *quick}
	failed := runScenarios(env, selected, &rep)
	Print(rep, stdout)
	if *out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d scenarios failed: %s", len(failed), len(selected), strings.Join(failed, ", "))
	}
	return nil
}

// runScenarios runs the selected scenarios on env in order and appends their results to rep. A
// scenario that fails is reported as failed, with its error, and the suite goes on to the next:
// one scenario that cannot measure on a slow moment of the machine (the SSE streams not all open
// before the jobs they wait on finish, for one) does not take the later scenarios' figures with
// it. It returns the names of the scenarios that failed; `herald bench` then exits non-zero.
func runScenarios(env *Env, selected []Scenario, rep *Report) (failed []string) {
	suffix := ""
	if storeBase != "" {
		suffix = " (postgres)"
	}
	for _, s := range selected {
		if s.Run == nil {
			rep.Results = append(rep.Results, Result{Scenario: s.Name, Skipped: s.Skip})
			continue
		}
		env.childPeakMB = 0 // the peak of the servers this scenario runs of its own (Env.Close)
		r, err := s.Run(env)
		if err != nil {
			failed = append(failed, s.Name)
			rep.Results = append(rep.Results, Result{Scenario: s.Name + suffix, Failed: err.Error()})
			continue
		}
		if len(r.Rows) > 0 {
			for _, row := range r.Rows {
				row.Scenario = s.Name + ": " + row.Scenario + suffix
				if row.Limit > 0 && row.Ratio == 0 {
					row.Ratio = row.Throughput / row.Limit
				}
				rep.Results = append(rep.Results, row)
			}
			continue
		}
		r.Scenario = s.Name + suffix
		switch {
		case r.PeakRSSMB != 0:
		case env.childPeakMB != 0: // the scenario ran its own server
			r.PeakRSSMB = env.childPeakMB
		default:
			r.PeakRSSMB = env.PeakRSSMB()
		}
		if r.Limit > 0 && r.Ratio == 0 {
			r.Ratio = r.Throughput / r.Limit
		}
		rep.Results = append(rep.Results, r)
	}
	return failed
}

func machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, model, _ = strings.Cut(l, ":")
				break
			}
		}
	}
	return fmt.Sprintf("%d cores %s, %s/%s, %s", runtime.NumCPU(), strings.TrimSpace(model), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// Print writes the table.
func Print(rep Report, w io.Writer) {
	fmt.Fprintf(w, "Herald bench — %s — %s%s\n\n", rep.StartedAt.Format(time.RFC3339), rep.Machine, map[bool]string{true: " (quick)"}[rep.Quick])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tops\tops/s\tp50 ms\tp99 ms\tp999 ms\terrors\tpeak RSS MB\tlimit (same run)\tlimit/s\tratio\t")
	for _, r := range rep.Results {
		if r.Skipped != "" || r.Failed != "" {
			why := "failed (below)"
			if r.Skipped != "" {
				why = "skipped: " + r.Skipped
			}
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t%s\t-\t-\t\n", r.Scenario, why)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%d\t%.0f\t%s\t%.0f\t%.2f\t\n",
			r.Scenario, r.Ops, r.Throughput, r.P50ms, r.P99ms, r.P999ms, r.Errors, r.PeakRSSMB, r.LimitName, r.Limit, r.Ratio)
	}
	_ = tw.Flush()
	for _, r := range rep.Results {
		switch {
		case r.Failed != "":
			fmt.Fprintf(w, "\n%s: FAILED: %s", r.Scenario, r.Failed)
		case r.Notes != "":
			fmt.Fprintf(w, "\n%s: %s", r.Scenario, r.Notes)
		}
	}
	fmt.Fprintln(w)
}

// Compare prints the differences between two JSON reports.
func Compare(a, b string, w io.Writer) error {
	load := func(p string) (Report, error) {
		var r Report
		raw, err := os.ReadFile(p)
		if err != nil {
			return r, err
		}
		return r, json.Unmarshal(raw, &r)
	}
	ra, err := load(a)
	if err != nil {
		return fmt.Errorf("read %s: %w", a, err)
	}
	rb, err := load(b)
	if err != nil {
		return fmt.Errorf("read %s: %w", b, err)
	}
	byName := map[string]Result{}
	for _, r := range ra.Results {
		byName[r.Scenario] = r
	}
	names := make([]string, 0)
	for _, r := range rb.Results {
		names = append(names, r.Scenario)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tops/s A\tops/s B\tdelta\tp99 A\tp99 B\tratio A\tratio B\t")
	for _, rb := range rb.Results {
		ra, ok := byName[rb.Scenario]
		if !ok || ra.Skipped != "" || rb.Skipped != "" || ra.Failed != "" || rb.Failed != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t\n", rb.Scenario)
			continue
		}
		delta := 0.0
		if ra.Throughput > 0 {
			delta = (rb.Throughput/ra.Throughput - 1) * 100
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%+.1f%%\t%.2f\t%.2f\t%.2f\t%.2f\t\n", rb.Scenario, ra.Throughput, rb.Throughput, delta, ra.P99ms, rb.P99ms, ra.Ratio, rb.Ratio)
	}
	return tw.Flush()
}

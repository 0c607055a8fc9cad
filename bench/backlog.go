package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/persistence"
)

// backlogWindow and backlogPerWindow are each account's budget in the backlog scenario, on Herald
// and on the simulated network alike: LinkedIn's 150 posts a day per member, shrunk to 5 a minute
// so that windows open within the run.
const (
	backlogWindow    = time.Minute
	backlogPerWindow = 5
)

// backlogScenario: a launch's backlog. 1,000,000 posts (--quick: 100,000), all due at the same
// instant, over 1,000 LinkedIn accounts (--quick: 100) whose budgets let each publish 5 posts a
// minute: nearly all of them wait, for hours. The accounts are connected through the sandbox's
// browser flow; the posts, a thousand per account, are written straight into the stopped
// server's bbolt file as POST /v1/posts/schedule stores them (seeding a million through the API
// takes longer than the scenario: a bench-only path, like memory-at-rest's), interleaved over the
// accounts, and the server starts again on it before they are due. The scheduler fires every one
// of them (each becomes a job whose target waits in the store for its account), the accounts
// publish what their budgets allow, and the run ends once every post has fired and the second
// window's posts are out. Reported: the server's peak RSS with the whole backlog waiting (the
// table's ratio is against the 512 MB target); the lateness of the posts whose budget allowed
// them at once (the first 5 of every account: publication on the network minus the due time,
// the latencies); the fire rate; the network's 429s and duplicates (both must be zero). The
// simulator runs in its own process.
func backlogScenario(base *Env) (Result, error) {
	posts, accounts := 1_000_000, 1000
	if base.Quick {
		posts, accounts = 100_000, 100
	}
	rule := fmt.Sprintf("linkedin:posts=%d/%s", backlogPerWindow, backlogWindow)
	sim, err := startSim()
	if err != nil {
		return Result{}, err
	}
	defer sim.Close()
	limits, _ := json.Marshal(map[string]any{"platform": "linkedin", "bucket": "posts", "limit": backlogPerWindow, "window": backlogWindow.String()})
	resp, err := http.Post(sim.URL+"/_sim/limits", "application/json", bytes.NewReader(limits))
	if err != nil {
		return Result{}, err
	}
	resp.Body.Close()
	e, err := base.Spawn("--sim-url", sim.URL, "--budget-rules", rule)
	if err != nil {
		return Result{}, err
	}
	setupStart := time.Now()
	handles := make([]string, accounts)
	for i := range handles {
		handles[i] = fmt.Sprintf("backlog-%04d", i)
	}
	if err := parallel(8, accounts, func(i int) error { return e.connectBrowser("linkedin", handles[i]) }); err != nil {
		e.Close()
		return Result{}, err
	}
	connected := time.Since(setupStart)
	e.Stop()

	// Due once the server has started again on the seeded file: the seeding's time, with room.
	lead := time.Duration(posts/25_000)*time.Second + 15*time.Second
	due := time.Now().Add(lead).UTC().Truncate(time.Millisecond)
	e, seeded, fileSize, err := seedOffline(e, func(dataDir string) error {
		return writeBacklog(e.log, dataDir, posts, handles, due)
	})
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	if time.Now().After(due) {
		return Result{}, fmt.Errorf("seeding %d posts and starting again took longer than the lead %s", posts, lead)
	}

	// Until every post has fired and the second window's posts are out.
	done := make(chan struct{})
	expected := time.Until(due) + time.Duration(posts/4000)*time.Second
	go progress(e.log, "backlog (fire)", expected, done)
	var allFired time.Time
	for deadline := due.Add(20 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if f, err := e.metric("herald_scheduler_fired_total", ""); err == nil && f >= float64(posts) {
			allFired = time.Now()
			break
		}
	}
	close(done)
	if allFired.IsZero() {
		fired, _ := e.metric("herald_scheduler_fired_total", "")
		return Result{}, fmt.Errorf("only %.0f of %d posts fired in 20 minutes", fired, posts)
	}
	if wait := time.Until(due.Add(backlogWindow + 15*time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	waiting, _ := e.metric("herald_jobs_active", "")
	pubs, err := simPublications(sim.URL, "linkedin")
	if err != nil {
		return Result{}, err
	}
	rejected, _ := e.metric("herald_network_rate_limited_total", "")
	perAccount := map[string][]time.Time{}
	for _, p := range pubs {
		perAccount[p.Account] = append(perAccount[p.Account], p.CreatedAt)
	}
	var late []time.Duration
	for _, ts := range perAccount {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		for _, t := range ts[:min(len(ts), backlogPerWindow)] {
			late = append(late, t.Sub(due))
		}
	}
	dups := duplicates(pubs)
	firing := allFired.Sub(due)
	r := Result{Ops: len(late), Seconds: firing.Seconds(), Throughput: float64(posts) / firing.Seconds(), Errors: dups + int(rejected),
		P50ms: durationsPct(late, 0.5), P99ms: durationsPct(late, 0.99), P999ms: durationsPct(late, 0.999),
		PeakRSSMB: e.PeakRSSMB(), LimitName: "peak RSS target (MB)", Limit: MemoryTarget}
	r.Ratio = r.PeakRSSMB / MemoryTarget
	r.Notes = fmt.Sprintf("%d posts due at one instant over %d LinkedIn accounts (%s on Herald and the simulator; %d accounts connected through the browser flow in %.1fs; the posts written offline into the bbolt file in %.1fs, %.0f MB): every post fired %.1fs after it was due (%.0f/s, the ops/s); %d published once the second window opened, %d of them the first %d of each account, whose lateness (on the network minus due) are the latencies, %d accounts with none; jobs still waiting %.0f; network 429s %.0f, duplicates %d (the errors); %s",
		posts, accounts, rule, accounts, connected.Seconds(), seeded.Seconds(), float64(fileSize)/1e6, firing.Seconds(), float64(posts)/firing.Seconds(),
		len(pubs), len(late), backlogPerWindow, accounts-len(perAccount), waiting, rejected, dups, e.memoryNote())
	return r, nil
}

// writeBacklog writes n scheduled posts of the sandbox user into the store in dir (no server may
// hold it), due at due, each to one of the LinkedIn accounts named by handles, in turn, as POST
// /v1/posts/schedule stores them (the post, its list index and counts, its schedule entry).
func writeBacklog(log io.Writer, dir string, n int, handles []string, due time.Time) error {
	s, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	user, all, err := sandboxUser(s)
	if err != nil {
		return err
	}
	wanted := map[string]bool{}
	for _, h := range handles {
		wanted[h] = true
	}
	var accounts []*persistence.Account
	for _, a := range all {
		if a.Platform == "linkedin" && a.Username != nil && wanted[*a.Username] {
			accounts = append(accounts, a)
		}
	}
	if len(accounts) != len(handles) {
		return fmt.Errorf("%d of the %d connected accounts found", len(accounts), len(handles))
	}
	sort.Slice(accounts, func(i, j int) bool { return *accounts[i].Username < *accounts[j].Username })
	done := make(chan struct{})
	defer close(done)
	go progress(log, "backlog (write)", time.Duration(n/40)*time.Millisecond, done)
	return writePostsOffline(s, n, func(i int) *persistence.Post {
		now := time.Now().UTC()
		a := accounts[i%len(accounts)]
		return &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user.ID, Status: persistence.PostScheduled, ScheduledAt: &due,
			Content:   fmt.Sprintf("Launch post %07d for %s: the new collection is out today. #launch", i, *a.Username),
			CreatedAt: now, UpdatedAt: now, MediaIDs: []string{}, Version: 1,
			Targets: []persistence.Target{{AccountID: a.ID, Platform: a.Platform, Status: persistence.TargetPending}}}
	})
}

package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/cluster"
)

// nodesSecret is the secret key every node of the nodes scenario shares (HERALD_SECRET_KEY): the
// nodes of one Herald open each other's sealed messages and stored tokens with it.
const nodesSecret = "9c4e2b7a1d0f8e6c5b3a29180f7e6d5c4b3a2918f0e1d2c3b4a5968778695a4b"

// nodesFailoverLease is the lease lifetime of the failover's nodes (--lease-ttl): as short as the
// multi-process suite's, so that ten kills take about a minute. The throughput rounds run with
// the default (10 s), since a node that misses its renewals under a load on a shared machine
// steps down and moves all of its shards.
const nodesFailoverLease = 2 * time.Second

// nodesFailoverCallTimeout is the failover's nodes' call time-out (--call-timeout): after a
// takeover, the attempts the killed node may have had on the wire are looked up once it has
// passed; with the default (10 minutes) the posts they belong to would stay open past the run.
const nodesFailoverCallTimeout = 5 * time.Second

// nodesShards is the number of account shards the nodes share (cluster: fixed at 256).
const nodesShards = 256

// nodeSet is one round of the nodes scenario: `herald sim` in its own process, a fresh schema of
// the PostgreSQL database, and the servers over it: one without --node-addr (the single-node
// baseline), or n nodes each with its own --node-addr.
type nodeSet struct {
	base   *Env
	sim    *simProcess
	store  string
	extra  []string // serve flags of every server, --store and --sim-url included
	single bool
	key    string // the sandbox's API key, made by the first server

	mu    sync.Mutex
	nodes []*node
}

type node struct {
	*Env
	addr string // --node-addr ("" for the single node)
	dead atomic.Bool
}

// startNodeSet starts the simulator (simArgs) and n nodes (0: one server without --node-addr)
// with the extra serve flags, and waits until the nodes hold every shard between them.
func startNodeSet(base *Env, n int, simArgs []string, extra ...string) (*nodeSet, error) {
	sim, err := startSim(simArgs...)
	if err != nil {
		return nil, err
	}
	ns := &nodeSet{base: base, sim: sim, single: n == 0}
	store, err := freshStore()
	if err != nil {
		sim.Close()
		return nil, err
	}
	ns.store = store
	ns.extra = append([]string{"--store", store, "--sim-url", sim.URL}, extra...)
	for range max(n, 1) {
		if _, err := ns.add(); err != nil {
			ns.close()
			return nil, err
		}
	}
	if err := ns.settle(); err != nil {
		ns.close()
		return nil, err
	}
	return ns, nil
}

// add starts one more server on a data directory of its own. The first makes the sandbox's demo
// user, key and accounts; the others find them in the store, and are given the key's file.
func (ns *nodeSet) add() (*node, error) {
	dir, err := os.MkdirTemp("", "herald-bench-node-")
	if err != nil {
		return nil, err
	}
	// Made here, since the nodes after the first are given the sandbox key's file in it.
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return nil, err
	}
	if ns.key != "" {
		if err := os.WriteFile(filepath.Join(dir, "data", "sandbox-api-key"), []byte(ns.key+"\n"), 0o600); err != nil {
			return nil, err
		}
	}
	nd := &node{}
	flags := ns.extra
	var environ []string
	if !ns.single {
		if nd.addr, err = freeAddr(); err != nil {
			return nil, err
		}
		flags = append(append([]string(nil), flags...), "--node-addr", nd.addr)
		environ = []string{"HERALD_SECRET_KEY=" + nodesSecret}
	}
	e, err := startIn(dir, ns.base.log, "", flags, environ)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	e.Quick, e.Duration, e.Connections = ns.base.Quick, ns.base.Duration, ns.base.Connections
	nd.Env = e
	ready := make(chan time.Time, 1)
	go pollReady(e.URL, ready)
	select {
	case <-ready:
	case <-time.After(time.Minute):
		nd.Kill()
		nd.Close()
		return nil, fmt.Errorf("node %s never turned ready", nd.addr)
	}
	ns.mu.Lock()
	ns.nodes = append(ns.nodes, nd)
	if ns.key == "" {
		ns.key = e.Key
	}
	ns.mu.Unlock()
	return nd, nil
}

// live are the servers not killed, in the order they started.
func (ns *nodeSet) live() []*node {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var out []*node
	for _, nd := range ns.nodes {
		if !nd.dead.Load() {
			out = append(out, nd)
		}
	}
	return out
}

// settle waits until the live nodes hold every shard between them, each its share, the shares
// stayed the same for a second, and every lease rests with the node rendezvous hashing names
// (atRest): a node that joined is ready before the others handed it its shards, a lease between
// two owners counts for neither, and hand-offs go one member step at a time.
func (ns *nodeSet) settle() error {
	if ns.single {
		return nil
	}
	var held []float64
	var same time.Time
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		now := make([]float64, 0, 3)
		sum, all := 0.0, true
		for _, nd := range ns.live() {
			v, err := nd.metric("herald_cluster_leases_held", `kind="shard"`)
			if err != nil {
				return err
			}
			now = append(now, v)
			sum += v
			all = all && v > 0
		}
		if sum != nodesShards || !all || !slices.Equal(now, held) {
			held, same = now, time.Time{}
			continue
		}
		if same.IsZero() {
			same = time.Now()
		}
		if time.Since(same) < time.Second {
			continue
		}
		// A node hands shards off one member step (a quarter of a lease lifetime) at a time:
		// the shares can stand still for a second in between. At rest, every lease is held by
		// the node rendezvous hashing names among the live ones.
		if rest, err := ns.atRest(); err != nil {
			return err
		} else if rest {
			return nil
		}
	}
	return fmt.Errorf("the live nodes' shards did not settle within a minute (they hold %v of %d)", held, nodesShards)
}

// atRest reports whether every lease is held, unexpired, by the live node that rendezvous
// hashing names for it among the live nodes (cluster.Owner): no hand-off is left to make.
func (ns *nodeSet) atRest() (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ns.store)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	addrs := map[string]bool{}
	for _, nd := range ns.live() {
		addrs[nd.addr] = true
	}
	rows, err := conn.Query(ctx, `SELECT DISTINCT ON (addr) id::text, addr FROM cluster_nodes ORDER BY addr, heartbeat_at DESC`)
	if err != nil {
		return false, err
	}
	var ids []string
	for rows.Next() {
		var id, addr string
		if err := rows.Scan(&id, &addr); err != nil {
			rows.Close()
			return false, err
		}
		if addrs[addr] {
			ids = append(ids, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	if len(ids) != len(addrs) {
		return false, nil
	}
	rows, err = conn.Query(ctx, `SELECT name, coalesce(owner::text, ''), expires_at > now() FROM cluster_leases`)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		var name, owner string
		var unexpired bool
		if err := rows.Scan(&name, &owner, &unexpired); err != nil {
			return false, err
		}
		if !unexpired || owner != cluster.Owner(name, ids) {
			return false, nil
		}
	}
	return true, rows.Err()
}

// kill ends a node with SIGKILL.
func (ns *nodeSet) kill(nd *node) {
	nd.dead.Store(true)
	nd.Kill()
}

// close kills every server (the round's data is thrown away), removes their directories and
// stops the simulator.
func (ns *nodeSet) close() {
	var wg sync.WaitGroup
	for _, nd := range ns.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd.dead.Store(true)
			nd.Kill()
			nd.Close()
		}()
	}
	wg.Wait()
	ns.sim.Close()
}

// peakRSSMB is the highest peak RSS of the round's servers.
func (ns *nodeSet) peakRSSMB() float64 {
	peak := 0.0
	for _, nd := range ns.nodes {
		if !nd.dead.Load() {
			peak = max(peak, nd.PeakRSSMB())
		}
	}
	return peak
}

// sum adds a metric's samples (those containing match) over the live servers.
func (ns *nodeSet) sum(name, match string) (float64, error) {
	total := 0.0
	for _, nd := range ns.live() {
		v, err := nd.metric(name, match)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

// forwards reads herald_cluster_forwards_total of every live node, summed by "kind/outcome",
// and herald_cluster_forwards_received_total by "received:kind/outcome".
func (ns *nodeSet) forwards() (map[string]float64, error) {
	out := map[string]float64{}
	for _, nd := range ns.live() {
		for prefix, name := range map[string]string{"": "herald_cluster_forwards_total", "received:": "herald_cluster_forwards_received_total"} {
			s, err := nd.samples(name)
			if err != nil {
				return nil, err
			}
			for labels, v := range s {
				out[prefix+labelValue(labels, "kind")+"/"+labelValue(labels, "outcome")] += v
			}
		}
	}
	return out, nil
}

func roundCounts(m map[string]float64) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = int(v + 0.5)
	}
	return out
}

// owner is the live node holding lease, by the lease table (nil when none holds it).
func (ns *nodeSet) owner(lease string) (*node, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ns.store)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	var addr string
	err = conn.QueryRow(ctx, `SELECT n.addr FROM cluster_leases l JOIN cluster_nodes n ON n.id = l.owner
		WHERE l.name = $1 AND l.expires_at > now()`, lease).Scan(&addr)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, nd := range ns.live() {
		if nd.addr == addr {
			return nd, nil
		}
	}
	return nil, nil
}

// forwardShare is what the forwards of a phase say: the share of the HTTP requests whose post
// actor ran on another node (the post requests forwarded: answered or unavailable), and the
// messages forwarded per request, by kind.
type forwardShare struct {
	requests float64
	perKind  map[string]float64 // forwarded messages of each kind (every outcome)
	// failed counts the forwards by outcome other than sent and answered (unavailable, dropped,
	// unencodable), and the received ones the owner refused or could not read ("refused" …).
	failed map[string]float64
}

func forwardDelta(before, after map[string]float64, requests int) forwardShare {
	f := forwardShare{perKind: map[string]float64{}, failed: map[string]float64{}}
	for k, v := range after {
		d := v - before[k]
		if rest, ok := strings.CutPrefix(k, "received:"); ok {
			if _, outcome, _ := strings.Cut(rest, "/"); outcome != "delivered" && d > 0 {
				f.failed["received "+outcome] += d
			}
			continue
		}
		kind, outcome, _ := strings.Cut(k, "/")
		if outcome != "sent" && outcome != "answered" && d > 0 {
			f.failed[outcome] += d
		}
		f.perKind[kind] += d
		if kind == "post" && (outcome == "answered" || outcome == "unavailable") {
			f.requests += d
		}
	}
	if requests > 0 {
		f.requests /= float64(requests)
		for k := range f.perKind {
			f.perKind[k] /= float64(requests)
		}
	}
	return f
}

func (f forwardShare) String() string {
	kinds := make([]string, 0, len(f.perKind))
	for k, v := range f.perKind {
		if v > 0 {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	total := 0.0
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %.2f", k, f.perKind[k])
		total += f.perKind[k]
	}
	s := fmt.Sprintf("%.0f%% of the requests forwarded to their post's node", f.requests*100)
	if total > 0 {
		s += fmt.Sprintf(", %.2f messages forwarded between nodes per request (%s)", total, strings.Join(parts, ", "))
	}
	if len(f.failed) > 0 {
		s += " (forwards failed: " + countList(roundCounts(f.failed)) + ")"
	}
	return s
}

// nodesRound measures one round: durable creates, then publishes, for the scenario's duration
// each, from e.Connections workers spread over the round's servers (worker w on server w mod n).
func nodesRound(base *Env, n int) (create, publish Result, err error) {
	ns, err := startNodeSet(base, n, []string{"--limit-scale", "100000"}, unlimited[2:]...)
	if err != nil {
		return create, publish, err
	}
	defer ns.close()
	label := map[bool]string{true: "single node"}[n == 0]
	if n > 0 {
		label = fmt.Sprintf("%d node%s", n, map[bool]string{true: "s"}[n > 1])
	}
	servers := ns.live()
	ids, err := servers[0].accountIDs("twitter_x", "bluesky", "linkedin")
	if err != nil {
		return create, publish, err
	}
	targets := quoteAll(ids)
	phase := func(name string, body func(w, i int) []byte, want int) (Result, forwardShare, error) {
		ws := make([]*wire, base.Connections)
		for w := range ws {
			if ws[w], err = servers[w%len(servers)].newWire(); err != nil {
				return Result{}, forwardShare{}, err
			}
		}
		defer closeWires(ws)
		before, err := ns.forwards()
		if err != nil {
			return Result{}, forwardShare{}, err
		}
		r, err := drive(base.log, fmt.Sprintf("nodes %s, %s", name, label), base.Connections, base.Duration, func(w, i int) error {
			st, b, err := ws[w].do(http.MethodPost, map[bool]string{true: "/v1/posts/publish", false: "/v1/posts"}[name == "publish"], body(w, i))
			if err != nil {
				return err
			}
			if st != want {
				return fmt.Errorf("%s: %d %s", name, st, b)
			}
			return nil
		})
		if err != nil {
			return r, forwardShare{}, err
		}
		after, err := ns.forwards()
		if err != nil {
			return r, forwardShare{}, err
		}
		return r, forwardDelta(before, after, r.Ops+r.Errors), nil
	}

	// Warm-up, not measured: a few creates through each server open the connections between
	// the nodes (a node dials another at its first forward there) and the store's pools.
	for k, nd := range servers {
		for i := range 32 {
			_, _, _ = nd.post("/v1/posts", fmt.Sprintf(`{"content":"warm-up %d-%d","platforms":[%s]}`, k, i, targets), nil)
		}
	}
	r, fw, err := phase("create", func(w, i int) []byte {
		return fmt.Appendf(nil, `{"content":"Bench nodes draft %d-%d: our autumn collection is out today, with free shipping on every order this week. #launch","platforms":[%s]}`, w, i, targets)
	}, http.StatusCreated)
	if err != nil {
		return create, publish, err
	}
	create = r
	create.Scenario = "create, " + label
	create.Notes = strings.TrimPrefix(strings.Join([]string{create.Notes, fw.String()}, "; "), "; ")

	finished0, err := ns.sum("herald_jobs_finished_total", "")
	if err != nil {
		return create, publish, err
	}
	start := time.Now()
	r, fw, err = phase("publish", func(w, i int) []byte {
		return fmt.Appendf(nil, `{"content":"Bench nodes publish %d-%d: the autumn collection is out today. #launch","platforms":[%s]}`, w, i, targets)
	}, http.StatusAccepted)
	if err != nil {
		return create, publish, err
	}
	publish = r
	publish.Scenario = "publish, " + label
	// Every accepted job finishes; how soon says the rate the nodes complete them at.
	loadEnd := time.Now()
	var drained time.Time
	wait := 3 * time.Minute
	if base.Quick {
		wait = 30 * time.Second
	}
	// A backlog that stopped shrinking for stall is not waited for to the end.
	stall := 20 * time.Second
	if base.Quick {
		stall = 10 * time.Second
	}
	last, lastAt := -1.0, time.Now()
	for deadline := time.Now().Add(wait); time.Now().Before(deadline) && time.Since(lastAt) < stall; time.Sleep(100 * time.Millisecond) {
		f, err := ns.sum("herald_jobs_finished_total", "")
		if err != nil {
			continue
		}
		if f-finished0 >= float64(r.Ops) {
			drained = time.Now()
			break
		}
		if f > last {
			last, lastAt = f, time.Now()
		}
	}
	pubs, err := simPublications(ns.sim.URL, "")
	if err != nil {
		return create, publish, err
	}
	dups := duplicates(pubs)
	publish.Errors += dups
	var completed string
	if drained.IsZero() {
		f, _ := ns.sum("herald_jobs_finished_total", "")
		var open struct {
			Pagination struct {
				Total int `json:"total"`
			} `json:"pagination"`
		}
		_ = servers[0].getJSON("/v1/posts?status=publishing&limit=1", &open)
		completed = fmt.Sprintf("NOT DRAINED: %.0f of the %d accepted jobs finished %.0fs after the load stopped (none more in the last %s), %d posts still publishing", f-finished0, r.Ops, time.Since(loadEnd).Seconds(), stall, open.Pagination.Total)
	} else {
		completed = fmt.Sprintf("jobs completed %.0f/s (start to last done, drained %.1fs after the load stopped)", float64(r.Ops)/drained.Sub(start).Seconds(), drained.Sub(loadEnd).Seconds())
	}
	publish.Notes = strings.TrimPrefix(strings.Join([]string{publish.Notes, fmt.Sprintf("accepted %.0f/s, each to X, Bluesky and LinkedIn; %s; %s; %d publications on the simulator, duplicated %d",
		publish.Throughput, completed, fw, len(pubs), dups)}, "; "), "; ")
	create.PeakRSSMB = ns.peakRSSMB()
	publish.PeakRSSMB = create.PeakRSSMB
	return create, publish, nil
}

// nodesFailover kills the owner of an account's shard kills times among three nodes (the lease
// lifetime nodesFailoverLease) under a light publish load spread over the live nodes, starting a
// new node after each kill. Each failover is the time from the SIGKILL to the first publication,
// on the simulator, of a post to that account sent after the kill; the shard moved to another
// node in between. At the end every accepted post must be final and no (post, target) published
// twice.
func nodesFailover(base *Env, kills int) (Result, error) {
	ns, err := startNodeSet(base, 3, []string{"--limit-scale", "100000", "--latency", "2ms"},
		append([]string{"--lease-ttl", nodesFailoverLease.String(), "--call-timeout", nodesFailoverCallTimeout.String()}, unlimited[2:]...)...)
	if err != nil {
		return Result{}, err
	}
	defer ns.close()
	platforms := []string{"twitter_x", "bluesky", "linkedin"}
	ids, err := ns.live()[0].accountIDs(platforms...)
	if err != nil {
		return Result{}, err
	}
	var mu sync.Mutex
	acked := map[string]string{} // post id → text
	publish := func(i int, text string, targets []string) {
		live := ns.live()
		if len(live) == 0 {
			return
		}
		st, b, err := live[i%len(live)].post("/v1/posts/publish", fmt.Sprintf(`{"content":%q,"platforms":[%s]}`, text, quoteAll(targets)), nil)
		if err != nil || st != http.StatusAccepted {
			return // the node died under it, or a shard was moving (503): the client would retry
		}
		var acc struct {
			PostID string `json:"post_id"`
		}
		if json.Unmarshal(b, &acc) == nil && acc.PostID != "" {
			mu.Lock()
			acked[acc.PostID] = text
			mu.Unlock()
		}
	}
	ctx, stopLoad := context.WithCancel(context.Background())
	var load sync.WaitGroup
	for w := range 2 {
		load.Add(1)
		go func() {
			defer load.Done()
			for i := 0; ctx.Err() == nil; i++ {
				publish(i, fmt.Sprintf("nodes failover load %d-%d", w, i), ids)
				time.Sleep(25 * time.Millisecond)
			}
		}()
	}
	start := time.Now()
	done := make(chan struct{})
	go progress(base.log, "nodes failover", time.Duration(kills)*6*time.Second, done)
	var took []time.Duration
	var killLog []string
	fail := func(err error) (Result, error) {
		close(done)
		stopLoad()
		load.Wait()
		return Result{}, err
	}
	for k := range kills {
		acc, platform := ids[k%len(ids)], platforms[k%len(ids)]
		// The lease table names the owner; a lease between two owners (handed off, not yet
		// taken) names none for a moment.
		var victim *node
		for deadline := time.Now().Add(15 * time.Second); victim == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if victim, err = ns.owner(cluster.ShardName(cluster.ShardOf(acc, nodesShards))); err != nil {
				return fail(err)
			}
		}
		if victim == nil {
			return fail(fmt.Errorf("kill %d: no live node holds the shard of the %s account", k, platform))
		}
		killed := time.Now()
		ns.kill(victim)
		killLog = append(killLog, fmt.Sprintf("kill %d at %s: %s, owner of the %s account's shard", k, killed.UTC().Format("15:04:05.000"), victim.addr, platform))
		prefix := fmt.Sprintf("nodes failover probe %d-", k)
		probeCtx, stopProbes := context.WithCancel(ctx)
		var probes sync.WaitGroup
		probes.Add(1)
		go func() { // a post to the account every 50 ms through the live nodes
			defer probes.Done()
			for i := 0; probeCtx.Err() == nil; i++ {
				publish(i, fmt.Sprintf("%s%d", prefix, i), []string{acc})
				time.Sleep(50 * time.Millisecond)
			}
		}()
		var first time.Time
		for deadline := time.Now().Add(time.Minute); first.IsZero() && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			pubs, err := simPublications(ns.sim.URL, platform)
			if err != nil {
				continue
			}
			for _, p := range pubs {
				if strings.HasPrefix(p.Text, prefix) && (first.IsZero() || p.CreatedAt.Before(first)) {
					first = p.CreatedAt
				}
			}
		}
		stopProbes()
		probes.Wait()
		if first.IsZero() {
			return fail(fmt.Errorf("kill %d: nothing was published on the %s account within a minute of killing its shard's owner", k, platform))
		}
		took = append(took, first.Sub(killed))
		if _, err := ns.add(); err != nil {
			return fail(err)
		}
		if err := ns.settle(); err != nil {
			return fail(err)
		}
	}
	close(done)
	stopLoad()
	load.Wait()
	elapsed := time.Since(start)
	loadEnd := time.Now()

	// Every accepted post is final, whichever node finished it. Posts left open are not waited
	// for once none became final for stall (the count says they stalled).
	var statuses map[string]int
	lost, notFinal := 0, 0
	wait, stall := 2*time.Minute, 30*time.Second
	if base.Quick {
		wait, stall = 30*time.Second, 10*time.Second
	}
	open, openSince := -1, time.Now()
	for deadline := time.Now().Add(wait); time.Now().Before(deadline) && time.Since(openSince) < stall; time.Sleep(200 * time.Millisecond) {
		statuses, lost, notFinal, err = checkFinal(ns.live()[0].Env, acked)
		if err != nil {
			continue
		}
		if lost == 0 && notFinal == 0 {
			break
		}
		if open < 0 || notFinal < open {
			open, openSince = notFinal, time.Now()
		}
	}
	stalled := ""
	if notFinal > 0 && time.Since(openSince) >= stall {
		stalled = fmt.Sprintf("; none became final in the last %s", stall)
	}
	pubs, err := simPublications(ns.sim.URL, "")
	if err != nil {
		return Result{}, err
	}
	dups := duplicates(pubs)
	if dups > 0 {
		// What a failure needs to be explained: each publication of a text published twice, and
		// when each node was killed (the nodes' logs are kept with HERALD_BENCH_LOGS).
		for _, p := range duplicated(pubs) {
			fmt.Fprintf(base.log, "published twice: %s %q by %s at %s (%s)\n", p.Platform, p.Text, p.Account, p.CreatedAt.UTC().Format("15:04:05.000"), p.ID)
		}
		for _, k := range killLog {
			fmt.Fprintln(base.log, k)
		}
	}
	takeovers, _ := ns.sum("herald_cluster_epochs_bumped_total", `how="takeover"`)
	r := Result{Scenario: "failover, 3 nodes", Ops: len(took), Seconds: elapsed.Seconds(), Throughput: float64(len(took)) / elapsed.Seconds(),
		P50ms: durationsPct(took, 0.5), P99ms: durationsPct(took, 0.99), P95ms: durationsPct(took, 0.95), Errors: dups + lost + notFinal,
		PeakRSSMB: ns.peakRSSMB(), LimitName: "lease lifetime (ms)", Limit: ms(nodesFailoverLease)}
	r.Ratio = r.P50ms / r.Limit
	sorted := append([]time.Duration(nil), took...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	r.Notes = fmt.Sprintf("%d SIGKILLs of the node owning an account's shard (X, Bluesky, LinkedIn in turn; a new node started after each), lease lifetime %s: from the kill to the first publication on the simulator of a post to that account sent after it, p50 %.0f ms, p95 %.0f ms, max %.0f ms (ops/s is kills per second of the phase); a light load of publishes to the three accounts through the live nodes meanwhile; %d accepted posts (%s, %s after the last kill's failover%s), lost %d, not final %d; %d publications on the simulator, duplicated %d; takeovers counted by the live nodes %.0f",
		len(took), nodesFailoverLease, r.P50ms, r.P95ms, ms(sorted[len(sorted)-1]), len(acked), countList(statuses), time.Since(loadEnd).Round(time.Second), stalled, lost, notFinal, len(pubs), dups, takeovers)
	return r, nil
}

// nodesScenario: one, two and three `herald serve --node-addr` nodes on loopback over one
// PostgreSQL schema each round, beside a single server without --node-addr on the same database
// in the same run: durable creates and publishes with the load spread over the nodes, the share
// of the requests forwarded between them, and the failover from a SIGKILL of a shard's owner to
// the next publication on one of its accounts.
func nodesScenario(base *Env) (Result, error) {
	if storeBase == "" {
		return Result{Skipped: "needs PostgreSQL (--store postgres://…; bench/postgres.sh runs it)"}, nil
	}
	kills := 10
	if base.Quick {
		kills = 2
	}
	var out Result
	var single [2]Result
	for _, n := range []int{0, 1, 2, 3} {
		create, publish, err := nodesRound(base, n)
		if err != nil {
			return Result{}, fmt.Errorf("%d nodes: %w", n, err)
		}
		if n == 0 {
			single = [2]Result{create, publish}
		}
		for i, r := range []Result{create, publish} {
			r.LimitName, r.Limit = "single node, same run", single[i].Throughput
			if r.Limit > 0 {
				r.Ratio = r.Throughput / r.Limit
			}
			out.Rows = append(out.Rows, r)
		}
	}
	fo, err := nodesFailover(base, kills)
	if err != nil {
		return Result{}, fmt.Errorf("failover: %w", err)
	}
	out.Rows = append(out.Rows, fo)
	return out, nil
}

// samples reads a metric family's samples from the server's metrics listener, keyed by their
// labels as exported ("" for a sample without labels).
func (e *Env) samples(name string) (map[string]float64, error) {
	resp, err := e.Client.Get(e.MetricsURL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		labels, value := "", rest
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels, value = rest[:end+1], rest[end+1:]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err == nil {
			out[labels] += v
		}
	}
	return out, sc.Err()
}

// labelValue returns the value of one label in an exported label set ({a="x",b="y"}; the values
// of Herald's labels hold no commas or quotes).
func labelValue(labels, name string) string {
	for _, pair := range strings.Split(strings.Trim(labels, "{}"), ",") {
		if v, ok := strings.CutPrefix(pair, name+`="`); ok {
			return strings.TrimSuffix(v, `"`)
		}
	}
	return ""
}

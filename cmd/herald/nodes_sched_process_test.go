package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cluster"
)

// balanced waits until the cluster is at rest: every lease (the shards and the singletons) is
// held, unexpired, by the live node that rendezvous hashing names for it among the live nodes,
// and the live nodes hold every shard by their own count. No hand-off is left to make, so no
// shard moves until a node joins, leaves or dies. (settle's sum of the shards held is reached
// before that: a node that should give a shard to a newcomer still holds it.)
func (ns *nodes) balanced() {
	t := ns.t
	t.Helper()
	ns.settle()
	var why string
	require.Eventually(t, func() bool {
		why = ns.unbalanced()
		return why == ""
	}, 30*time.Second, 50*time.Millisecond, "the leases rest with the nodes rendezvous hashing names")
	_ = why
}

// unbalanced says why the cluster is not at rest ("" when it is).
func (ns *nodes) unbalanced() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ns.pgURL)
	require.NoError(ns.t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT id::text FROM cluster_nodes WHERE heartbeat_at > now() - make_interval(secs => $1)`, nodesLease.Seconds())
	require.NoError(ns.t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(ns.t, err)
	if len(ids) != len(ns.live()) {
		return fmt.Sprintf("%d live nodes in the table, %d processes", len(ids), len(ns.live()))
	}
	rows, err = conn.Query(ctx, `SELECT name, coalesce(owner::text, ''), expires_at > now() FROM cluster_leases`)
	require.NoError(ns.t, err)
	shards := 0
	for rows.Next() {
		var name, owner string
		var unexpired bool
		require.NoError(ns.t, rows.Scan(&name, &owner, &unexpired))
		if want := cluster.Owner(name, ids); owner != want || !unexpired {
			rows.Close()
			return fmt.Sprintf("%s is held by %q (unexpired %v), not by %s", name, owner, unexpired, want)
		}
		if strings.HasPrefix(name, "shard/") {
			shards++
		}
	}
	require.NoError(ns.t, rows.Err())
	if shards != 256 {
		return fmt.Sprintf("%d shard leases", shards)
	}
	return ""
}

// Posts scheduled through every node fire once each while the node that runs the scheduler is
// killed as they fall due: another node takes the scheduler's lease over and fires what is left.
// Every create is answered 201 on a cluster at rest, wherever the post's shard is.
func TestNodesAScheduledPostFiresOnceAcrossASchedulerTakeover(t *testing.T) {
	needNodes(t)
	ns := startNodes(t, 3)
	ns.balanced()
	targets := quotedIDs(accountsByPlatform(t, ns.nodes[0].p, ns.key), "bluesky")
	due := time.Now().Add(4 * time.Second).UTC()
	posts := map[string]string{}
	var texts []string
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range 60 {
		text := fmt.Sprintf("nodes scheduled %03d", i)
		at := due.Add(time.Duration(i) * 50 * time.Millisecond).Format(time.RFC3339Nano)
		nd := ns.nodes[i%len(ns.nodes)]
		req, _ := http.NewRequest("POST", nd.p.url+"/v1/posts/schedule", strings.NewReader(`{"content":"`+text+`","platforms":[`+strings.Join(targets, ",")+`],"scheduledAt":"`+at+`"}`))
		req.Header.Set("Authorization", "Bearer "+ns.key)
		resp, err := client.Do(req)
		require.NoError(t, err)
		var p struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
		resp.Body.Close()
		require.Equal(t, 201, resp.StatusCode, "a schedule on a cluster at rest, through node %s", nd.addr)
		require.Equal(t, "scheduled", p.Status)
		posts[p.ID] = text
		texts = append(texts, text)
	}
	require.Less(t, time.Now(), due, "every post was created before the first fell due")
	sched := ns.owner(cluster.SingletonName("scheduler"))
	require.NotNil(t, sched, "a node runs the scheduler")
	time.Sleep(time.Until(due.Add(1500 * time.Millisecond)))
	sched.p.kill9()
	ns.waitFinal(posts, 60*time.Second)
	ns.noneTwice(texts, "bluesky")
	after := ns.owner(cluster.SingletonName("scheduler"))
	require.NotNil(t, after)
	require.NotEqual(t, sched.addr, after.addr, "another node took the scheduler over")
	require.Positive(t, after.gathered(t, "herald_cluster_epochs_bumped_total", `{how="takeover"}`))
}

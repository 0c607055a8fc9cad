package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cluster"
)

// Nodes SIGKILLed under load: what they were doing is finished by the others, once.

// nodesCallTimeout is the publishing call time-out of the nodes of these tests: after a
// takeover, the attempts the dead node left in doubt are looked up once it has passed.
const nodesCallTimeout = 5 * time.Second

// A shard owner SIGKILLed in the middle of a bulk publish sent to every node: every accepted post
// is finished by the others, and no target is published twice.
func TestNodesSIGKILLAShardOwnerDuringABulkPublish(t *testing.T) {
	needNodes(t)
	ns := startNodes(t, 3, "--call-timeout", nodesCallTimeout.String())
	targets := quotedIDs(accountsByPlatform(t, ns.nodes[0].p, ns.key), "twitter_x", "bluesky", "linkedin")
	require.Len(t, targets, 3)
	// The victim owns the shard of the X account, so that its calls move.
	var xID string
	require.NoError(t, json.Unmarshal([]byte(targets[0]), &xID))
	victim := ns.owner(cluster.ShardName(cluster.ShardOf(xID, 256)))
	require.NotNil(t, victim, "the X account's shard has an owner")

	const total = 300
	var mu sync.Mutex
	accepted := map[string]string{}
	var n atomic.Int64
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += 9 {
				text := fmt.Sprintf("nodes bulk %04d", i)
				live := ns.live()
				nd := live[i%len(live)]
				id, status, err := ns.publish(client, nd, text, targets, "")
				if err != nil || status == 503 {
					continue // the node died under the request, or it answered retry later
				}
				if !assert.Equal(t, 202, status, "publish %s", text) {
					continue
				}
				mu.Lock()
				accepted[id] = text
				mu.Unlock()
				if n.Add(1) == total/3 {
					once.Do(func() { close(killed) })
				}
			}
		}()
	}
	<-killed
	victim.p.kill9()
	wg.Wait()
	t.Logf("%d posts accepted, node %s killed after %d", len(accepted), victim.addr, total/3)
	ns.waitFinal(accepted, 60*time.Second)
	var texts []string
	for _, text := range accepted {
		texts = append(texts, text)
	}
	ns.logTwice()
	ns.noneTwice(texts, "twitter_x", "bluesky", "linkedin")
}

// logTwice logs every publication of a text published more than once on one network, with its
// time, so that a failure says when each happened.
func (ns *nodes) logTwice() {
	resp, err := http.Get(ns.sim + "/_sim/publications")
	require.NoError(ns.t, err)
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			ID, Platform, Account, Text string
			CreatedAt                   string `json:"created_at"`
		}
	}
	require.NoError(ns.t, json.NewDecoder(resp.Body).Decode(&out))
	seen := map[string]int{}
	for _, r := range out.Data {
		seen[r.Platform+"|"+r.Text]++
	}
	for _, r := range out.Data {
		if seen[r.Platform+"|"+r.Text] > 1 {
			ns.t.Logf("published twice: %s %q by %s at %s (%s)", r.Platform, r.Text, r.Account, r.CreatedAt, r.ID)
		}
	}
}

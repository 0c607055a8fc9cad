package app_test

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// campaignPost is one post of a campaign's JSON body (apptest.CampaignPost).
func campaignPost(content string, accounts ...*persistence.Account) map[string]any {
	return apptest.CampaignPost(content, accounts...)
}

func (b *testBundle) createCampaign(body map[string]any, hdr http.Header) *response {
	b.t.Helper()
	return b.doKey(b.key, "POST", "/v1/campaigns", body, hdr)
}

// followCampaign follows a campaign's stream (apptest.Herald.FollowCampaign).
func (b *testBundle) followCampaign(ctx context.Context, id, lastEventID string, each func(sseEvent)) ([]sseEvent, error) {
	return b.h.FollowCampaign(ctx, id, lastEventID, each)
}

// A campaign whose commit fails is answered 503 and leaves nothing: no campaign, no post, no
// job, no Idempotency-Key answer; sent again once the store writes, it is created and published.
func TestCampaignStoreFault(t *testing.T) {
	t.Parallel()
	faults := &persistence.Faults{}
	b := setup(t, bundleOpts{demo: true, config: withFaults(faults)})
	bsky := b.account(platforms.Bluesky)
	body := map[string]any{"publish": "now", "posts": []any{campaignPost("one", bsky), campaignPost("two", bsky)}}
	key := http.Header{"Idempotency-Key": {"fault-1"}}
	faults.FailCommits(syscall.EIO)
	requireStoreFailure(t, "create a campaign", b.createCampaign(body, key))
	faults.ClearCommits()
	require.Equal(t, 0, b.countPosts())
	require.Equal(t, 0.0, b.do("GET", "/v1/campaigns", nil).json(t)["pagination"].(map[string]any)["total"])

	r := b.createCampaign(body, key)
	require.Equal(t, 202, r.status, string(r.body))
	require.Empty(t, r.header.Get("Idempotent-Replayed"), "the failed request stored no answer")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, err := b.followCampaign(ctx, r.json(t)["campaign_id"].(string), "", nil)
	require.NoError(t, err)
	require.Equal(t, 2.0, events[len(events)-1].Data["totals"].(map[string]any)["published"])
}

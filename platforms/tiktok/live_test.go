package tiktok

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

// setMetrics sets a post's counters through the simulator's admin API.
func setMetrics(t *testing.T, srv *sim.Server, body map[string]any) int {
	return platformstest.Admin(t, srv, http.MethodPost, "/_sim/metrics", body, nil)
}

func publishVideo(t *testing.T, b *testBundle, creds platforms.Credentials, text string) string {
	t.Helper()
	res, err := b.a.Publish(context.Background(), creds, platforms.Post{Text: text, Media: []platforms.Media{videoMedia(randomBytes(t, 4000))}, Options: selfOnly})
	require.NoError(t, err)
	return res.Publication.ID
}

func TestMetricsReadBack(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publishVideo(t, b, b.creds, "counted")
	other := publishVideo(t, b, b.creds, "also counted")
	require.Equal(t, http.StatusOK, setMetrics(t, b.srv, map[string]any{"platform": "tiktok", "post_id": id, "views": 70000, "likes": 6000, "comments": 500, "shares": 40}))

	m, err := b.a.Metrics(ctx, b.creds, id)
	require.NoError(t, err)
	require.Equal(t, int64(70000), *m.Views)
	require.Equal(t, int64(6000), *m.Likes)
	require.Equal(t, int64(500), *m.Comments)
	require.Equal(t, int64(40), *m.Shares)

	all, err := b.a.BatchMetrics(ctx, b.creds, []string{id, other, "7000000000000000001"})
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, int64(0), *all[other].Views)

	// Another creator's video is not this creator's to read.
	bob := connect(t, b.a, "bob")
	bobs := publishVideo(t, b, bob, "bob's")
	_, err = b.a.Metrics(ctx, b.creds, bobs)
	require.ErrorIs(t, err, platforms.ErrNotFound, "%v", err)
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	_, err = b.a.Metrics(ctx, b.creds, "")
	require.ErrorIs(t, err, platforms.ErrNotFound, "%v", err)
}

func TestMetricsClassified(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	id := publishVideo(t, b, b.creds, "classified")
	platformstest.MetricsClassified(t, b.srv, platforms.TikTok, "display", sim.Limit{Count: 600, Window: time.Minute}, func() error {
		_, err := b.a.Metrics(context.Background(), b.creds, id)
		return err
	})
}

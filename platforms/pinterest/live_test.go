package pinterest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

// setMetrics sets a Pin's counters through the simulator's admin API.
func setMetrics(t *testing.T, srv *sim.Server, body map[string]any) int {
	return platformstest.Admin(t, srv, http.MethodPost, "/_sim/metrics", body, nil)
}

func publishPin(t *testing.T, b *testBundle, creds platforms.Credentials, name string) string {
	t.Helper()
	img, _ := b.files.image(t, name)
	res, err := b.a.Publish(context.Background(), creds, platforms.Post{Text: "Pin " + name, Media: []platforms.Media{img}, Options: onBoard(creds)})
	require.NoError(t, err)
	return res.Publication.ID
}

func TestMetricsReadBack(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publishPin(t, b, b.creds, "one.png")
	require.Equal(t, http.StatusOK, setMetrics(t, b.srv, map[string]any{"platform": "pinterest", "post_id": id, "views": 800, "likes": 30, "comments": 2, "shares": 17}))

	m, err := b.a.Metrics(ctx, b.creds, id)
	require.NoError(t, err)
	require.Equal(t, int64(800), *m.Views)
	require.Equal(t, int64(30), *m.Likes)
	require.Equal(t, int64(2), *m.Comments)
	require.Equal(t, int64(17), *m.Shares)

	fresh := publishPin(t, b, b.creds, "two.png")
	all, err := b.a.BatchMetrics(ctx, b.creds, []string{id, fresh, "999999999999999999"})
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, int64(0), *all[fresh].Views)

	_, err = b.a.Metrics(ctx, b.creds, "999999999999999999")
	require.ErrorIs(t, err, platforms.ErrNotFound, "%v", err)
	require.Equal(t, platforms.Permanent, kindOf(t, err))

	// Another user's Pin: 403 code 29, not the account's to read.
	bob := connect(t, b.a, "bob")
	bobs := publishPin(t, b, bob, "bob.png")
	_, err = b.a.Metrics(ctx, b.creds, bobs)
	require.ErrorIs(t, err, platforms.ErrNotFound, "%v", err)
}

func TestMetricsMissingCountersAreNil(t *testing.T) {
	t.Parallel()
	srv := newPartialAnalytics(t)
	a := New(platforms.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	m, err := a.Metrics(context.Background(), platforms.Credentials{AccessToken: "t"}, "123")
	require.NoError(t, err)
	require.Equal(t, int64(5), *m.Views)
	require.Equal(t, int64(3), *m.Shares, "a fractional number is rounded")
	require.Nil(t, m.Likes)
	require.Nil(t, m.Comments)
}

// newPartialAnalytics answers Pin analytics with only some metrics and no lifetime totals.
func newPartialAnalytics(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v5/pins/123/analytics" || r.URL.Query().Get("metric_types") != "IMPRESSION,TOTAL_REACTIONS,TOTAL_COMMENTS,SAVE" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"all":{"daily_metrics":[],"summary_metrics":{"IMPRESSION":5,"SAVE":2.6}}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestMetricsClassified(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	id := publishPin(t, b, b.creds, "c.png")
	platformstest.MetricsClassified(t, b.srv, platforms.Pinterest, "org_analytics", sim.Limit{Count: 300, Window: time.Minute}, func() error {
		_, err := b.a.Metrics(context.Background(), b.creds, id)
		return err
	})
}

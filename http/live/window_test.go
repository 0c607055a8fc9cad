package live

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

func TestParseWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 10, 15, 30, 0, 0, time.UTC)
	cases := []struct {
		rng, since, until string
		want              Window
		err               string
	}{
		{"", "", "", Window{Range: "7d", Since: now.AddDate(0, 0, -7), Until: now}, ""},
		{"90d", "", "", Window{Range: "90d", Since: now.AddDate(0, 0, -90), Until: now}, ""},
		{"365d", "", "", Window{Range: "365d", Since: now.AddDate(0, 0, -365), Until: now}, ""},
		{"custom", "2026-05-01T00:00:00+02:00", "2026-05-02T00:00:00Z", Window{Range: "custom", Since: time.Date(2026, 4, 30, 22, 0, 0, 0, time.UTC), Until: time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)}, ""},
		{"custom", "2026-05-01T00:00:00Z", "", Window{Range: "custom", Since: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), Until: now}, ""},
		{"custom", "2025-05-10T15:30:00Z", "2026-05-10T15:30:00Z", Window{Range: "custom", Since: time.Date(2025, 5, 10, 15, 30, 0, 0, time.UTC), Until: now}, ""},
		{"30d", "", "", Window{}, "range: must be one of 7d, 14d, 28d, 90d, 365d, custom"},
		{"7d", "2026-05-01T00:00:00Z", "", Window{}, "since: only allowed with range=custom"},
		{"", "", "2026-05-01T00:00:00Z", Window{}, "until: only allowed with range=custom"},
		{"custom", "", "2026-05-01T00:00:00Z", Window{}, "since: Required with range=custom"},
		{"custom", "2026-05-01", "", Window{}, "since: Invalid datetime"},
		{"custom", "2026-05-01T00:00:00Z", "tomorrow", Window{}, "until: Invalid datetime"},
		{"custom", "2026-05-02T00:00:00Z", "2026-05-01T00:00:00Z", Window{}, "until: must be after since"},
		{"custom", "2026-05-01T00:00:00Z", "2026-05-01T00:00:00Z", Window{}, "until: must be after since"},
		{"custom", "2025-05-10T15:29:59Z", "2026-05-10T15:30:00Z", Window{}, "at most 365 days"},
	}
	for _, c := range cases {
		w, err := ParseWindow(c.rng, c.since, c.until, now)
		if c.err != "" {
			var ae *apierr.Error
			require.ErrorAs(t, err, &ae, "%+v", c)
			require.Equal(t, 400, ae.Status)
			require.Contains(t, ae.Message, c.err)
			continue
		}
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c.want, w)
	}
	// A named range is keyed by its name (it moves with the clock), a custom one by its instants.
	a, _ := ParseWindow("7d", "", "", now)
	b, _ := ParseWindow("7d", "", "", now.Add(time.Minute))
	require.Equal(t, a.key(), b.key())
	c, _ := ParseWindow("custom", "2026-05-01T00:00:00Z", "2026-05-02T00:00:00Z", now)
	d, _ := ParseWindow("custom", "2026-05-01T00:00:00Z", "2026-05-03T00:00:00Z", now)
	require.NotEqual(t, c.key(), d.key())
}

func TestThreads(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	pub := persistence.Publication{ID: "pub-1", PostID: "post-1", Platform: "twitter_x", AccountID: "acct", NetworkID: "tw"}
	cs := []platforms.Comment{
		{ID: "a", ParentID: "tw", Author: "ann", CreatedAt: at},
		{ID: "b", ParentID: "", Author: "bob", CreatedAt: at.Add(time.Minute)},
		{ID: "a1", ParentID: "a", Author: "me", ByAccount: true, CreatedAt: at.Add(3 * time.Minute)},
		{ID: "a2", ParentID: "a1", Author: "ann", CreatedAt: at.Add(4 * time.Minute)},
		{ID: "a0", ParentID: "a", Author: "cid", CreatedAt: at.Add(2 * time.Minute)},
		{ID: "mine", ParentID: "tw", Author: "me", ByAccount: true, CreatedAt: at.Add(5 * time.Minute)},
		{ID: "mine1", ParentID: "mine", Author: "dan", CreatedAt: at.Add(6 * time.Minute)},
		{ID: "orphan", ParentID: "unknown", Author: "eve", CreatedAt: at},
	}
	got := threads(pub, cs)
	require.Len(t, got, 2)
	require.Equal(t, "b", got[0].Comment.ID, "newest thread first")
	require.False(t, got[0].Answered)
	require.Empty(t, got[0].Replies)
	require.Equal(t, "a", got[1].Comment.ID)
	require.Equal(t, "pub-1", got[1].Comment.PublicationID)
	require.True(t, got[1].Answered)
	var ids []string
	for _, r := range got[1].Replies {
		ids = append(ids, r.ID)
	}
	require.Equal(t, []string{"a0", "a1", "a2"}, ids, "every depth, oldest first")
}

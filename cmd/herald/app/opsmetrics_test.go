package app_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

// v7At is a UUIDv7 whose timestamp is at.
func v7At(at time.Time) string {
	u := uuid.Must(uuid.NewV7())
	ms := uint64(at.UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u.String()
}

// sample returns the value of one series of an exposition ("" when absent).
func sample(text, series string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

func sampleFloat(t *testing.T, text, series string) float64 {
	t.Helper()
	v := sample(text, series)
	require.NotEmpty(t, v, "%s is exposed", series)
	f, err := strconv.ParseFloat(v, 64)
	require.NoError(t, err)
	return f
}

// /metrics reads token expiry, unfinished jobs and the bbolt file from the store.
func TestStoreMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{}) // three accounts whose tokens expire in 30 days: ok
	now := time.Now().UTC()
	past, soon := now.Add(-time.Hour), now.Add(48*time.Hour)
	ctx := context.Background()
	for _, a := range []struct {
		platform string
		expires  *time.Time
	}{{"linkedin", &past}, {"linkedin", &past}, {"threads", &soon}, {"bluesky", nil}, {"pinterest", &soon}} {
		name := "acct"
		acc := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: b.user.ID, Platform: a.platform, Username: &name,
			IsActive: true, TokenExpiresAt: a.expires, CreatedAt: now}
		require.NoError(t, b.app.Store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutAccount(acc) }))
	}
	// A job created two hours ago whose post has not taken its outcome.
	job := &persistence.Job{TrackingID: v7At(now.Add(-2 * time.Hour)), PostID: uuid.Must(uuid.NewV7()).String(), UserID: b.user.ID,
		Status: persistence.JobProcessing, CreatedAt: now.Add(-2 * time.Hour),
		Targets: []persistence.JobTarget{{Platform: "linkedin", AccountID: b.accounts[0].ID, Phase: persistence.PhaseUploading}}}
	require.NoError(t, b.app.Store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutJob(job) }))

	text := scrape(t, b.app.MetricsURL())
	for series, want := range map[string]string{
		`herald_accounts_token_expiring{platform="linkedin",state="expired"}`:        "2",
		`herald_accounts_token_expiring{platform="linkedin",state="expiring_soon"}`:  "0",
		`herald_accounts_token_expiring{platform="threads",state="expiring_soon"}`:   "1",
		`herald_accounts_token_expiring{platform="pinterest",state="expiring_soon"}`: "1",
		`herald_accounts_token_expiring{platform="bluesky",state="expired"}`:         "0",
		`herald_accounts_token_expiring{platform="twitter_x",state="expired"}`:       "0",
		`herald_jobs_active`: "1",
	} {
		require.Equal(t, want, sample(text, series), series)
	}
	age := sampleFloat(t, text, "herald_jobs_oldest_active_age_seconds")
	require.GreaterOrEqual(t, age, 7200.0)
	require.Less(t, age, 7200.0+600)
	require.Greater(t, sampleFloat(t, text, "herald_bbolt_size_bytes"), 0.0)
	require.GreaterOrEqual(t, sampleFloat(t, text, "herald_bbolt_free_bytes"), 0.0)
	require.GreaterOrEqual(t, sampleFloat(t, text, "herald_bbolt_read_transactions_open"), 0.0)
}

package app_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/http/auth"
)

func TestMe(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	r := b.do("GET", "/v1/me", nil)
	require.Equal(t, 200, r.status)
	m := r.json(t)
	require.Equal(t, b.user.ID, m["id"])
	require.Equal(t, "owner@example.com", m["email"])
	require.Equal(t, "pro", m["plan"])
	require.Equal(t, "UTC", m["timezone"])
	k := m["api_key"].(map[string]any)
	require.Equal(t, "test", k["name"])
	require.Equal(t, b.key[:12], k["prefix"])
}

func TestKeyFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	ctx := context.Background()
	revoked, err := auth.CreateKey(ctx, b.app.Store, "owner@example.com", "to revoke", 0, time.Now())
	require.NoError(t, err)
	_, err = auth.RevokeKey(ctx, b.app.Store, revoked.ID, time.Now())
	require.NoError(t, err)
	regen, err := auth.CreateKey(ctx, b.app.Store, "owner@example.com", "to regenerate", 0, time.Now())
	require.NoError(t, err)
	fresh, err := auth.RegenerateKey(ctx, b.app.Store, regen.ID)
	require.NoError(t, err)
	expired, err := auth.CreateKey(ctx, b.app.Store, "owner@example.com", "short", time.Millisecond, time.Now())
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)
	b.app.Auth.Invalidate()

	wrong, _, _ := auth.GenerateKey()
	// The message says which failure it was (docs/decisions.md, API keys).
	for name, c := range map[string]struct{ header, message string }{
		"missing":     {"", "missing API key"},
		"not bearer":  {"Basic " + b.key, "malformed API key"},
		"malformed":   {"Bearer sk_live_short", "malformed API key"},
		"bad prefix":  {"Bearer pk_live_0123456789012345678901234567890123456789", "malformed API key"},
		"bad chars":   {"Bearer sk_live_0123456789012345678901234567890123456789!", "malformed API key"},
		"wrong":       {"Bearer " + wrong, "invalid API key"},
		"revoked":     {"Bearer " + revoked.Key, "API key has been revoked"},
		"regenerated": {"Bearer " + regen.Key, "invalid API key"},
		"expired":     {"Bearer " + expired.Key, "API key has expired"},
	} {
		for range 2 { // the second request is answered from the key cache
			r := b.doKey("", "GET", "/v1/me", nil, http.Header{"Authorization": {c.header}})
			require.Equal(t, 401, r.status, name)
			require.Equal(t, "invalid_api_key", r.errorCode(t), name)
			require.NotEmpty(t, r.header.Get("WWW-Authenticate"), name)
			require.Contains(t, r.errorMessage(t), c.message, name)
		}
	}
	r := b.doKey(fresh.Key, "GET", "/v1/me", nil, nil)
	require.Equal(t, 200, r.status, "the regenerated key works")
	require.Equal(t, regen.ID, r.json(t)["api_key"].(map[string]any)["id"])

	legacy := auth.LegacyPrefix + "abcdefghijklmnopqrstuvwxyz0123456789"
	require.True(t, auth.WellFormed(legacy))
}

func TestRateLimitHeadersAndExactQuota(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{plan: "free"})
	// A second key of the same user shares the quota.
	k2, err := auth.CreateKey(context.Background(), b.app.Store, "owner@example.com", "second", 0, time.Now())
	require.NoError(t, err)

	r := b.do("GET", "/v1/me", nil)
	require.Equal(t, 200, r.status)
	require.Equal(t, "60", r.header.Get("RateLimit-Limit"))
	require.Equal(t, "59", r.header.Get("RateLimit-Remaining"))
	reset, err := strconv.Atoi(r.header.Get("RateLimit-Reset"))
	require.NoError(t, err)
	require.True(t, reset > 3500 && reset <= 3600, reset)
	require.Equal(t, `"free";q=60;w=3600`, r.header.Get("RateLimit-Policy"))
	require.Equal(t, `"free";r=59;t=`+strconv.Itoa(reset), r.header.Get("RateLimit"))

	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			key := b.key
			if i%2 == 1 {
				key = k2.Key
			}
			r := b.doKey(key, "GET", "/v1/accounts", nil, nil)
			switch r.status {
			case 200:
				ok.Add(1)
			case 429:
				limited.Add(1)
				if r.errorCode(t) != "rate_limit_exceeded" || r.header.Get("Retry-After") == "" {
					t.Errorf("429 without its code or Retry-After: %s", r.body)
				}
			default:
				t.Errorf("unexpected %d", r.status)
			}
		}(i)
	}
	wg.Wait()
	require.Equal(t, int64(59), ok.Load(), "60 requests per hour in all, one spent above")
	require.Equal(t, int64(141), limited.Load())
}

func TestRevocationThroughAdminSocketIsImmediate(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{adminSocket: true})
	require.Equal(t, 200, b.do("GET", "/v1/me", nil).status) // warms the key cache
	c := admin.Dial(b.app.Cfg.DataDir)
	require.NotNil(t, c, "the server answers on its admin socket")
	var keys []auth.KeyInfo
	require.NoError(t, c.Do("GET", "/keys?email=owner@example.com", nil, &keys))
	require.Len(t, keys, 1)
	var info auth.KeyInfo
	require.NoError(t, c.Do("POST", "/keys/"+keys[0].ID+"/revoke", nil, &info))
	require.NotNil(t, info.RevokedAt)
	r := b.do("GET", "/v1/me", nil)
	require.Equal(t, 401, r.status, "refused on the very next request")
	require.Equal(t, "API key has been revoked", r.errorMessage(t))
}

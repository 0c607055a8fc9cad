// Package platformstest holds what the adapters' tests share: the conformance suite every adapter
// runs (Run: 5xx, time-out, refused connection, garbage answers, post-then-error lookup, refresh
// and retry, validate, revoke, rate limits, failed processing), test bytes and media, error-kind
// assertions, and calls to the simulator's admin API.
//
// An adapter's test file runs the suite once, saying only what differs between networks:
//
//	platformstest.Run(t, platformstest.Adapter{
//		Platform: platforms.X,
//		New:      func(cfg platforms.Config) platforms.Adapter { return x.New(cfg) },
//		Account:  alice,
//		ServerError: platformstest.Faults{Steps: ...},
//		Refresh:     platformstest.Refresh{NotApplicable: "why the network has no such thing"},
//		...
//	})
package platformstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// RandomBytes returns n random bytes (a hash then names one file).
func RandomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// SHA256 is the hex SHA-256 of b, as the simulator records media.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Media is a media file held in memory; Size is left zero unless knownSize.
func Media(id, contentType, filename string, data []byte, knownSize bool) platforms.Media {
	m := platforms.Media{ID: id, ContentType: contentType, Filename: filename, Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}}
	if knownSize {
		m.Size = int64(len(data))
	}
	return m
}

// KindOf asserts that err is a *platforms.Error of platform p and returns its kind.
func KindOf(t *testing.T, err error, p platforms.Platform) platforms.Kind {
	t.Helper()
	require.Error(t, err)
	var e *platforms.Error
	require.ErrorAs(t, err, &e, "error is not classified: %v", err)
	require.Equal(t, p, e.Platform)
	return e.Kind
}

// Admin calls the simulator's admin API and decodes the answer into out; it returns the status.
func Admin(t *testing.T, srv *sim.Server, method, path string, body, out any) int {
	t.Helper()
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(t, err)
	}
	req, err := http.NewRequest(method, srv.BaseURL()+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

// NotFound asserts that err is platform p's permanent platforms.ErrNotFound.
func NotFound(t *testing.T, err error, p platforms.Platform) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, platforms.ErrNotFound, "want ErrNotFound, got %v", err)
	require.Equal(t, platforms.Permanent, KindOf(t, err, p))
}

// AddComment adds a comment (a reply to parentID when set) under a post through the simulator's
// admin API and returns its id.
func AddComment(t *testing.T, srv *sim.Server, p platforms.Platform, postID, parentID, author, text string) string {
	t.Helper()
	var out struct {
		ID string `json:"id"`
	}
	require.Equal(t, http.StatusOK, Admin(t, srv, http.MethodPost, "/_sim/comments", map[string]string{
		"platform": string(p), "post_id": postID, "parent_id": parentID, "author": author, "text": text,
	}, &out))
	require.NotEmpty(t, out.ID)
	return out.ID
}

// MetricsClassified checks how an adapter's metrics read classifies the network's failures: an
// injected 429, the rate window named limit running out (one read allowed, then a 429 with its
// reset; restore is the window put back), a 5xx, and expired tokens. read reads one post's
// metrics.
func MetricsClassified(t *testing.T, srv *sim.Server, p platforms.Platform, limit string, restore sim.Limit, read func() error) {
	t.Helper()
	require.NoError(t, srv.InjectFault(p, sim.FaultRateLimit, 1))
	require.Equal(t, platforms.RateLimited, KindOf(t, read(), p))

	srv.SetLimit(p, limit, sim.Limit{Count: 1, Window: time.Minute})
	require.NoError(t, read())
	err := read()
	require.Equal(t, platforms.RateLimited, KindOf(t, err, p))
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	require.False(t, e.ResetAt.IsZero())
	srv.SetLimit(p, limit, restore)

	require.NoError(t, srv.InjectFault(p, sim.FaultError5xx, 1))
	require.Equal(t, platforms.Transient, KindOf(t, read(), p))

	require.NoError(t, srv.InjectFault(p, sim.FaultExpireTokens, 0))
	require.Equal(t, platforms.AuthExpired, KindOf(t, read(), p))
}

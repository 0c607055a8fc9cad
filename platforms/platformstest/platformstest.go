// Package platformstest holds what the adapters' tests share: test bytes and media, error-kind
// assertions, and calls to the simulator's admin API.
package platformstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	require.True(t, errors.As(err, &e), "error is not classified: %v", err)
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

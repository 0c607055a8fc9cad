package apptest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
	"github.com/heraldhq/herald/persistence/blob/blobtest"
	"github.com/stretchr/testify/require"
)

// The media file route answers the media's own type; the validator reads such bodies as files.
func init() {
	for _, ct := range blob.ContentTypes {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
	}
}

type Presigned struct {
	UploadURL, Key, StorageFilename string
}

// Presign asks for an upload URL with key.
func (h *Herald) Presign(key, filename, ctype string, size int) Presigned {
	h.T.Helper()
	r := h.DoKey(key, "POST", "/v1/media/presign", map[string]any{"filename": filename, "content_type": ctype, "size_bytes": size}, nil)
	require.Equal(h.T, 200, r.Status, string(r.Body))
	m := r.JSON(h.T)
	return Presigned{UploadURL: m["upload_url"].(string), Key: m["key"].(string), StorageFilename: m["storage_filename"].(string)}
}

// RawPut PUTs bytes to an upload URL the way curl -T does: no Authorization, the given
// Content-Type, a Content-Length unless length < 0 (then chunked). Responses of Herald's own
// route are validated against the document.
func (h *Herald) RawPut(u, ctype string, body []byte, length int64, hdr http.Header) *Response {
	h.T.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if length < 0 {
		rd = io.MultiReader(rd) // hides the length: chunked
	}
	req, err := http.NewRequest(http.MethodPut, u, rd)
	require.NoError(h.T, err)
	if length >= 0 {
		req.ContentLength = length
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	r := h.send(req, hdr)
	if strings.HasPrefix(u, h.URL) {
		require.NotEmpty(h.T, r.Header.Get("X-Request-Id"))
		h.Validate(req, r)
	}
	return r
}

// RawGet fetches a URL without Authorization, validating Herald's answers.
func (h *Herald) RawGet(u string, hdr http.Header) *Response {
	h.T.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(h.T, err)
	r := h.send(req, hdr)
	h.Validate(req, r)
	return r
}

// Confirm confirms the upload p with key.
func (h *Herald) Confirm(key string, p Presigned, ctype string, size int) *Response {
	h.T.Helper()
	return h.DoKey(key, "POST", "/v1/media/confirm", map[string]any{
		"key": p.Key, "storage_filename": p.StorageFilename, "original_filename": "my " + p.StorageFilename, "content_type": ctype, "size_bytes": size,
	}, nil)
}

// MediaRecord is the stored media of a storage key (nil when there is none).
func (h *Herald) MediaRecord(key string) *persistence.Media {
	h.T.Helper()
	var m *persistence.Media
	require.NoError(h.T, h.App.Store.View(func(tx *persistence.Tx) error {
		var err error
		if m, err = tx.MediaByKey(key); err == persistence.ErrNotFound {
			m, err = nil, nil
		}
		return err
	}))
	return m
}

// S3Media starts versitygw with a bucket and returns the media configuration that uses it.
func S3Media(t testing.TB) app.MediaConfig {
	t.Helper()
	srv := blobtest.Start(t)
	cfg := srv.Bucket(t, "herald-media")
	return app.MediaConfig{S3: &cfg}
}

// SHA256 is the hex SHA-256 of b.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// send sends req with the extra headers hdr through the client and reads the whole answer.
func (h *Herald) send(req *http.Request, hdr http.Header) *Response {
	h.T.Helper()
	for k, v := range h.Header {
		req.Header[k] = v
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := h.Client.Do(req)
	require.NoError(h.T, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(h.T, err)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: out}
}

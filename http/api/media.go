package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
)

// Herald's own media routes, outside the authenticated API: the local backend's upload URL (one
// PUT, authorised by its signature) and the signed file URL. Both stream large bodies, so the
// server exempts them from the JSON body cap and the per-request deadline (server.Config's
// LongRunning); they set their own deadlines instead.
const (
	MediaUploadRoute = "/v1/media/uploads/:userId/:storageFilename"
	MediaFileRoute   = "/v1/media/files/:storageFilename"
)

// uploadIdleTimeout is how long an upload may go without receiving a byte.
const uploadIdleTimeout = time.Minute

// minServeRate is the slowest download a file URL allows for: its write deadline is one minute
// plus the file's size at this rate.
const minServeRate = 64 << 10 // bytes per second

// MediaResponse is GET /v1/media/:id.
type MediaResponse struct {
	ID               string    `json:"id"`
	URL              string    `json:"url"`
	ContentType      string    `json:"content_type"`
	SizeBytes        int64     `json:"size_bytes"`
	OriginalFilename string    `json:"original_filename"`
	CreatedAt        time.Time `json:"created_at"`
	// AltText describes the media for people who cannot see it ("" when none was given).
	AltText string `json:"alt_text"`
}

// PresignResponse is POST /v1/media/presign.
type PresignResponse struct {
	UploadURL       string    `json:"upload_url"`
	Key             string    `json:"key"`
	StorageFilename string    `json:"storage_filename"`
	ExpiresAt       time.Time `json:"expires_at"`
}

// registerMedia adds the upload and file URLs, outside both doors (their signature authorises
// them). Presign, confirm and GET /media/:id are the doors' routes (routes.go).
func (h *handlers) registerMedia(e *echo.Echo) {
	if h.Media == nil {
		return
	}
	e.PUT(MediaUploadRoute, h.uploadMedia)
	e.GET(MediaFileRoute, h.mediaFile)
}

// integer reads a required integer field ("size_bytes: Expected integer, received float").
func (o object) integer(field string) (int64, error) {
	raw, ok := o[field]
	if !ok {
		return 0, apierr.Validation("%s: Required", field)
	}
	if jsonType(raw) != "number" {
		return 0, typeError(field, "number", raw)
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, typeError(field, "number", raw)
	}
	if v, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
		return v, nil
	}
	f, err := n.Float64()
	if err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f), nil
	}
	return 0, apierr.Validation("%s: Expected integer, received float", field)
}

// mediaError maps a refusal of the media flow to the API's error; anything else is logged and
// answered 500.
func (h *handlers) mediaError(c *echo.Context, err error) error {
	var me *blob.Error
	if errors.As(err, &me) {
		var e *apierr.Error
		switch me.Kind {
		case blob.Forbidden:
			e = apierr.New(http.StatusForbidden, apierr.CodeForbidden, "%s", me.Message)
		case blob.NotFound:
			e = apierr.New(http.StatusNotFound, apierr.CodeNotFound, "%s", me.Message)
		case blob.Conflict:
			e = apierr.New(http.StatusConflict, apierr.CodeValidation, "%s", me.Message)
		case blob.TooLarge:
			e = apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeValidation, "%s", me.Message)
		case blob.TimedOut:
			e = apierr.New(http.StatusRequestTimeout, apierr.CodeValidation, "%s", me.Message).WithHeader("Connection", "close")
		case blob.Full:
			e = apierr.Unavailable(me.Message)
		default:
			e = apierr.Validation("%s", me.Message)
		}
		if me.Details != nil {
			e = e.WithDetails(me.Details)
		}
		return e
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if e := server.StoreFailure(c, h.Log, err); e != nil {
		return e
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		// The file system of the local media storage is full: the upload is not kept.
		h.Log.Warn("media refused: the disk is full", append(server.LogAttrs(c), "route", c.Path(), "error", err)...)
		return apierr.Unavailable("Herald could not store the file: its storage is full; nothing was stored, retry later")
	}
	h.Log.Error("media request failed", append(server.LogAttrs(c), "route", c.Path(), "error", err)...)
	return apierr.Internal()
}

func (h *handlers) presignMedia(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	filename, err := o.str("filename", true)
	if err != nil {
		return err
	}
	contentType, err := o.str("content_type", true)
	if err != nil {
		return err
	}
	size, err := o.integer("size_bytes")
	if err != nil {
		return err
	}
	p, err := h.Media.Presign(c.Request().Context(), server.Principal(c).User.ID, server.Principal(c).ObjectWorkspace(), *filename, *contentType, size)
	if err != nil {
		return h.mediaError(c, err)
	}
	return c.JSON(http.StatusOK, PresignResponse{UploadURL: p.UploadURL, Key: p.Key, StorageFilename: p.StorageFilename, ExpiresAt: p.ExpiresAt})
}

func (h *handlers) confirmMedia(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	var in blob.ConfirmInput
	for _, f := range []struct {
		name string
		dst  *string
	}{{"key", &in.Key}, {"storage_filename", &in.StorageFilename}, {"original_filename", &in.OriginalFilename}, {"content_type", &in.ContentType}} {
		v, err := o.str(f.name, true)
		if err != nil {
			return err
		}
		*f.dst = *v
	}
	if in.Size, err = o.integer("size_bytes"); err != nil {
		return err
	}
	if in.AltText, err = o.str("alt_text", false); err != nil {
		return err
	}
	m, err := h.Media.Confirm(c.Request().Context(), server.Principal(c).Scope(), in)
	if err != nil {
		return h.mediaError(c, err)
	}
	return c.JSON(http.StatusCreated, map[string]string{"id": m.ID, "url": h.Media.URL(m)})
}

func (h *handlers) getMedia(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	m, err := h.Media.Get(server.Principal(c).Scope(), id)
	if err != nil {
		return h.mediaError(c, err)
	}
	return c.JSON(http.StatusOK, mediaResponse(m, h.Media.URL(m)))
}

func mediaResponse(m *persistence.Media, url string) MediaResponse {
	created := m.CreatedAt
	if m.ConfirmedAt != nil {
		created = *m.ConfirmedAt
	}
	return MediaResponse{ID: m.ID, URL: url, ContentType: m.ContentType, SizeBytes: m.Size, OriginalFilename: m.OriginalFilename, CreatedAt: created, AltText: m.AltText}
}

// uploadBody is an upload's request body under two read deadlines: the upload's own
// (blob.TimedBody: its presigned size at the minimum rate, plus a grace, set by Receive), which
// does not move, and uploadIdleTimeout after the last read, which does. A client that stops
// sending is cut off after a minute, one that trickles a byte now and then when the upload's
// deadline passes, whatever it sends.
type uploadBody struct {
	r    io.Reader
	rc   *http.ResponseController
	idle time.Duration
	end  time.Time // the upload's deadline (zero: none yet)
	set  time.Time // the connection's read deadline as last set
	last time.Time // when it was set
}

var _ blob.TimedBody = (*uploadBody)(nil)

// Until sets the upload's deadline.
func (r *uploadBody) Until(deadline time.Time) {
	r.end = deadline
	r.last = time.Time{}
}

func (r *uploadBody) Read(p []byte) (int, error) {
	now := time.Now()
	if !r.end.IsZero() && !now.Before(r.end) {
		return 0, blob.ErrTooSlow
	}
	// The connection's deadline moves at most once a second (each move is a system call).
	if now.Sub(r.last) > time.Second {
		d := now.Add(r.idle)
		if !r.end.IsZero() && r.end.Before(d) {
			d = r.end
		}
		if !d.Equal(r.set) {
			_ = r.rc.SetReadDeadline(d)
			r.set = d
		}
		r.last = now
	}
	n, err := r.r.Read(p)
	if err != nil && !r.end.IsZero() && !time.Now().Before(r.end) && errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w: %w", blob.ErrTooSlow, err)
	}
	return n, err
}

// uploadMedia is the local backend's upload URL: one PUT of the file, authorised by the URL's
// signature (no Authorization header), with the presigned Content-Type, streamed to disk. A
// second PUT to the same URL while one is in progress is refused (409), as is an upload that
// would leave the disk nearly full (503); one that passes its deadline is cut off (408).
func (h *handlers) uploadMedia(c *echo.Context) error {
	r := c.Request()
	key := blob.Key(c.Param("userId"), c.Param("storageFilename"))
	body := &uploadBody{r: r.Body, rc: http.NewResponseController(c.Response()), idle: uploadIdleTimeout}
	if _, err := h.Media.Receive(r.Context(), key, r.URL.Query(), r.Header.Get("Content-Type"), r.ContentLength, body); err != nil {
		return h.mediaError(c, err)
	}
	return c.NoContent(http.StatusOK)
}

// mediaFile serves a confirmed media file to the holder of a signed, unexpired URL (networks
// that fetch media themselves), with range requests.
func (h *handlers) mediaFile(c *echo.Context) error {
	o, info, m, err := h.Media.OpenFile(c.Request().Context(), c.Param("storageFilename"), c.Request().URL.Query())
	if err != nil {
		return h.mediaError(c, err)
	}
	defer func() { _ = o.Close() }()
	w := c.Response()
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Minute + time.Duration(info.Size/minServeRate)*time.Second))
	hdr := w.Header()
	hdr.Set("Content-Type", m.ContentType)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Cache-Control", "private, max-age=3600")
	http.ServeContent(w, c.Request(), m.StorageFilename, info.ModTime, o)
	return nil
}

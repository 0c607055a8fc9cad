package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/heraldhq/herald/actors/webhook"
)

// MaxMediaBytes caps what upload_media takes from a URL, a file or base64 data; the media flow's
// own per-type limits apply too (the presign refuses a size over them before anything is read).
const MaxMediaBytes = 64 << 20

// uploadRequests is how many /v1 requests upload_media makes after its quota check (presign and
// confirm): a URL is fetched only when the plan's hourly quota still allows them.
const uploadRequests = 2

func (t *Tools) addMediaTools() {
	add(t, write("upload_media", "Upload media").params("filename", "filename", "content_type", "content_type", "size_bytes", "size of the file"),
		"Uploads an image, a video or a PDF document (LinkedIn only) for a post from a public URL, base64 data or (local server only) a file path; answers the media_id to pass in media_ids. "+
			"A URL is fetched only when the plan's quota allows the upload, and streamed to storage (at most 64 MiB); a user may run 2 fetches at once.",
		t.uploadMedia)
}

type uploadIn struct {
	URL         string `json:"url,omitempty" jsonschema:"fetch the file from this public https URL"`
	Data        string `json:"data,omitempty" jsonschema:"or the file's bytes, base64-encoded"`
	Path        string `json:"path,omitempty" jsonschema:"or a local file path (only with the local stdio server, herald mcp)"`
	Filename    string `json:"filename,omitempty" jsonschema:"the file's name (default: from the URL or path)"`
	ContentType string `json:"content_type,omitempty" jsonschema:"the media type, e.g. image/png (default: from the name, the URL's answer or the bytes)"`
}

// Media answers upload_media.
type Media struct {
	MediaID     string `json:"media_id"`
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	SizeBytes   int64  `json:"size_bytes"`
	Filename    string `json:"filename"`
}

// source is a file to upload: its bytes as a stream of a known size.
type source struct {
	body  io.Reader
	size  int64
	name  string
	ctype string // from the URL's answer ("" when none)
}

func (t *Tools) uploadMedia(ctx context.Context, in uploadIn) (Media, error) {
	given := 0
	for _, s := range []string{in.URL, in.Data, in.Path} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return Media{}, refuse("give exactly one of url, data or path")
	}
	switch {
	case in.URL != "":
		release, err := t.fetches.acquire(userOf(ctx))
		if err != nil {
			return Media{}, err
		}
		defer release()
		// Ask the API before fetching anything: a caller over quota costs no download.
		if err := t.checkQuota(ctx, uploadRequests); err != nil {
			return Media{}, err
		}
		src, closeSrc, err := t.fetch(ctx, in.URL)
		if err != nil {
			return Media{}, err
		}
		defer closeSrc()
		return t.upload(ctx, in, src)
	case in.Data != "":
		data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(in.Data))
		if err != nil {
			if data, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(in.Data)); err != nil {
				return Media{}, refuse("data: not base64: %v", err)
			}
		}
		return t.upload(ctx, in, source{body: bytes.NewReader(data), size: int64(len(data))})
	default:
		if !t.cfg.LocalFiles {
			return Media{}, refuse("path: only available with the local server (herald mcp); give url or data")
		}
		f, err := os.Open(in.Path)
		if err != nil {
			return Media{}, refuse("path: %v", err)
		}
		defer func() { _ = f.Close() }()
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return Media{}, refuse("path: %s is not a regular file", in.Path)
		}
		return t.upload(ctx, in, source{body: f, size: st.Size(), name: filepath.Base(in.Path)})
	}
}

// upload presigns, streams the file to the upload URL and confirms it.
func (t *Tools) upload(ctx context.Context, in uploadIn, src source) (Media, error) {
	if src.size > MaxMediaBytes {
		return Media{}, refuse("the file is %d bytes; upload_media takes at most %d", src.size, MaxMediaBytes)
	}
	if src.size == 0 {
		return Media{}, refuse("the file is empty")
	}
	name := in.Filename
	if name == "" {
		name = src.name
	}
	if name == "" || name == "/" || name == "." {
		name = "upload"
	}
	ctype := in.ContentType
	if ctype == "" {
		ctype = mime.TypeByExtension(filepath.Ext(name))
	}
	if ctype == "" {
		ctype = src.ctype
	}
	body := bufio.NewReaderSize(src.body, 512)
	if ctype == "" {
		head, _ := body.Peek(512)
		ctype = http.DetectContentType(head)
	}
	if mt, _, err := mime.ParseMediaType(ctype); err == nil {
		ctype = mt
	}
	var presigned struct {
		UploadURL       string `json:"upload_url"`
		Key             string `json:"key"`
		StorageFilename string `json:"storage_filename"`
	}
	if _, err := t.call(ctx, Request{Method: http.MethodPost, Path: "/v1/media/presign",
		Body: map[string]any{"filename": name, "content_type": ctype, "size_bytes": src.size}}, &presigned); err != nil {
		return Media{}, err
	}
	rd := &readErr{r: io.LimitReader(body, src.size)}
	resp, err := t.cfg.API.Put(ctx, presigned.UploadURL, ctype, rd, src.size)
	if fetched, ok := src.body.(*readErr); ok && fetched.err != nil {
		return Media{}, fetched.describe()
	}
	if rd.err != nil {
		return Media{}, rd.describe()
	}
	if err != nil {
		// The store's address is Herald's own business: logged, not shown.
		t.cfg.Log.Warn("mcp upload_media: the upload to storage failed", "error", err)
		return Media{}, refuse("the upload to storage failed; nothing was kept, retry later")
	}
	if resp.Status >= 300 {
		return Media{}, decodeError(resp)
	}
	var confirmed struct {
		ID  string `json:"id"`
		URL string `json:"url"`
	}
	if _, err := t.call(ctx, Request{Method: http.MethodPost, Path: "/v1/media/confirm", Body: map[string]any{
		"key": presigned.Key, "storage_filename": presigned.StorageFilename, "original_filename": name,
		"content_type": ctype, "size_bytes": src.size,
	}}, &confirmed); err != nil {
		return Media{}, err
	}
	return Media{MediaID: confirmed.ID, URL: confirmed.URL, ContentType: ctype, SizeBytes: src.size, Filename: name}, nil
}

// checkQuota asks the API how many requests the plan's hourly quota still allows (the
// RateLimit-Remaining of a /v1 answer) and refuses when fewer than need.
func (t *Tools) checkQuota(ctx context.Context, need int) error {
	resp, err := t.call(ctx, get("/v1/me", nil), nil)
	if err != nil {
		return err
	}
	rem, err := strconv.Atoi(resp.Header.Get("RateLimit-Remaining"))
	if err != nil {
		return nil // no quota on this server's answers
	}
	if rem < need {
		return refuse("the plan's hourly request quota has %d requests left and an upload takes %d; it resets in %s seconds; nothing was fetched",
			rem, need, resp.Header.Get("RateLimit-Reset"))
	}
	return nil
}

// fetch opens a media URL through the webhooks' egress (the same URL rules and dial-time address
// checks, no redirects, one shared transport) and returns its body as a stream of known size: the
// Content-Length when the server states it, else the body spooled to a temporary file (at most
// MaxMediaBytes). Nothing of the file is held in memory.
func (t *Tools) fetch(ctx context.Context, raw string) (source, func(), error) {
	if t.cfg.Egress == nil {
		return source{}, nil, refuse("url: fetching URLs is not available here; give data")
	}
	u, err := t.cfg.Egress.CheckURL(ctx, raw)
	var ue *webhook.URLError
	if errors.As(err, &ue) {
		return source{}, nil, refuse("url refused: %s", ue.Reason)
	}
	if err != nil {
		return source{}, nil, refuse("url refused: %v", err)
	}
	pu, _ := url.Parse(u)
	host := pu.Hostname()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return source{}, nil, refuse("url refused: %v", err)
	}
	req.Header.Set("User-Agent", "Herald-Media-Fetch")
	resp, err := t.cfg.Egress.Client().Do(req)
	if err != nil {
		return source{}, nil, refuse("url: fetching it failed: %s", webhook.DescribeError(err, host))
	}
	closeBody := func() { _ = resp.Body.Close() }
	if resp.StatusCode != http.StatusOK {
		closeBody()
		return source{}, nil, refuse("url: %s answered HTTP %d", host, resp.StatusCode)
	}
	src := source{body: resp.Body, size: resp.ContentLength, name: path.Base(pu.Path), ctype: resp.Header.Get("Content-Type")}
	if src.size > MaxMediaBytes {
		closeBody()
		return source{}, nil, refuse("url: the file is %d bytes; upload_media takes at most %d", src.size, MaxMediaBytes)
	}
	if src.size >= 0 {
		src.body = &readErr{r: resp.Body, host: host}
		return src, closeBody, nil
	}
	// No length stated: spool to a temporary file, so that the presign can name the size.
	f, err := os.CreateTemp("", "herald-media-*")
	if err != nil {
		closeBody()
		t.cfg.Log.Warn("mcp upload_media: spooling a download failed", "error", err)
		return source{}, nil, refuse("url: the server could not hold the file; retry later")
	}
	cleanup := func() { closeBody(); _ = f.Close(); _ = os.Remove(f.Name()) }
	n, err := io.Copy(f, io.LimitReader(resp.Body, MaxMediaBytes+1))
	if err != nil {
		cleanup()
		return source{}, nil, refuse("url: reading it failed: %s", webhook.DescribeError(err, host))
	}
	if n > MaxMediaBytes {
		cleanup()
		return source{}, nil, refuse("url: the file is larger than %d bytes, which upload_media takes at most", MaxMediaBytes)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		cleanup()
		t.cfg.Log.Warn("mcp upload_media: spooling a download failed", "error", err)
		return source{}, nil, refuse("url: the server could not hold the file; retry later")
	}
	src.body, src.size = f, n
	return src, cleanup, nil
}

// readErr remembers the first read error of a stream handed to the upload, so that a failed
// fetch is told as such rather than as the store's refusal of a short body.
type readErr struct {
	r    io.Reader
	host string
	err  error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

func (r *readErr) describe() error {
	if r.host == "" {
		return refuse("reading the file failed: %v", r.err)
	}
	return refuse("url: reading it failed: %s", webhook.DescribeError(r.err, r.host))
}

// slots caps work in progress: at most total at once, and at most perUser for one user.
type slots struct {
	mu      sync.Mutex
	total   int
	perUser int
	inUse   int
	byUser  map[string]int
}

func newSlots(total, perUser int) *slots {
	return &slots{total: total, perUser: perUser, byUser: map[string]int{}}
}

// acquire takes a slot for user, or refuses at once when none is free: a host retries a tool
// call, it does not wait on one.
func (s *slots) acquire(user string) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byUser[user] >= s.perUser {
		return nil, refuse("url: %d media fetches of this user are already in progress (at most %d at once); retry when one has finished", s.byUser[user], s.perUser)
	}
	if s.inUse >= s.total {
		return nil, refuse("url: the server is fetching %d media files, its limit; retry in a moment", s.inUse)
	}
	s.inUse++
	s.byUser[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.inUse--
			if s.byUser[user]--; s.byUser[user] <= 0 {
				delete(s.byUser, user)
			}
		})
	}, nil
}

// userOf is the user a tool call acts for ("" over stdio, where the process is one user's).
func userOf(ctx context.Context) string {
	if p := principalOf(ctx); p != nil && p.User != nil {
		return p.User.ID
	}
	return ""
}

package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob/photo"
	"github.com/heraldhq/herald/platforms"
)

// Default limits and lifetimes.
const (
	DefaultMaxImageBytes = 50 << 20  // 50 MiB
	DefaultMaxVideoBytes = 500 << 20 // 500 MiB
	// DefaultUploadTTL is how long an upload URL works.
	DefaultUploadTTL = 15 * time.Minute
	// DefaultURLTTL is how long a signed file URL works.
	DefaultURLTTL = 24 * time.Hour
	// DefaultPendingTTL is how long an unconfirmed upload is kept.
	DefaultPendingTTL = 24 * time.Hour
	// MaxFilenameBytes bounds an original filename.
	MaxFilenameBytes = 255
	// DefaultUploadGrace and DefaultUploadMinRate size an upload's deadline (Options).
	DefaultUploadGrace   = time.Minute
	DefaultUploadMinRate = 64 << 10 // bytes per second
	// DefaultMinFreeBytes is the free space uploads leave on the media directory's file system.
	DefaultMinFreeBytes = 1 << 30 // 1 GiB
)

// Limits are the largest sizes accepted per kind of media.
type Limits struct {
	MaxImageBytes int64
	MaxVideoBytes int64
	// MaxDocumentBytes bounds a PDF: at most (and by default) platforms.MaxDocumentBytes, the
	// most LinkedIn, the one network that takes documents, accepts.
	MaxDocumentBytes int64
}

// For returns the limit of a content type.
func (l Limits) For(contentType string) int64 {
	switch {
	case IsVideo(contentType):
		return l.MaxVideoBytes
	case IsDocument(contentType):
		return l.MaxDocumentBytes
	}
	return l.MaxImageBytes
}

// Options configure a Service.
type Options struct {
	Store *persistence.Store
	Blob  Store
	// Signer signs Herald's own media URLs (file URLs, and Local's upload URLs).
	Signer *Signer
	// BaseURL returns Herald's public base URL, for the signed file URLs.
	BaseURL func() string
	Limits  Limits
	// UploadTTL is how long an upload URL works (default 15 minutes).
	UploadTTL time.Duration
	// URLTTL is how long a signed file URL works (default 24 hours).
	URLTTL time.Duration
	// PendingTTL is how long an unconfirmed upload is kept before the janitor deletes it
	// (default 24 hours).
	PendingTTL time.Duration
	// Now is the clock of expiries and of the janitor (default time.Now).
	Now func() time.Time
	Log *slog.Logger
	// MaxConvertPixels is the largest image converted for a network (default
	// photo.DefaultMaxPixels, 50 megapixels); a larger one fails its target (derive.go).
	MaxConvertPixels int
	// UploadGrace and UploadMinRate bound how long a PUT to a local upload URL may take: its
	// grace plus its presigned size at the minimum rate, in bytes a second (defaults
	// DefaultUploadGrace and DefaultUploadMinRate: a 50 MiB image has 14 minutes, a 500 MiB video
	// 2 h 14 min). The deadline does not move as bytes arrive, so a client trickling a byte now
	// and then is cut off when it passes (Receive).
	UploadGrace   time.Duration
	UploadMinRate int64
	// MinFreeBytes is the space a local upload must leave free on the file system of the media
	// directory, counting the uploads in progress at their full size (0: DefaultMinFreeBytes;
	// negative: no floor). The data directory's store usually shares that file system: a full
	// disk would stop every write of every user, so uploads are refused well before.
	MinFreeBytes int64
	// FreeSpace reports the bytes free on the file system holding dir (default: statfs).
	FreeSpace func(dir string) (uint64, error)
}

// Service is Herald's media flow over a Store and the media records.
type Service struct {
	o Options
	// flights makes one derivation per media at a time; converting lets one run in the process.
	flights    singleflight.Group
	converting chan struct{}
	// counting lets one PDF's pages be counted at a time in the process (document.go).
	counting chan struct{}

	// receiving holds the local uploads in progress, key to presigned size: an upload URL takes
	// one PUT at a time, and the free-space floor counts what they will write.
	mu        sync.Mutex
	receiving map[string]int64
}

// NewService builds the service.
func NewService(o Options) (*Service, error) {
	if o.Store == nil || o.Blob == nil || o.Signer == nil || o.BaseURL == nil {
		return nil, errors.New("blob: a service needs a store, a blob backend, a signer and a base URL")
	}
	if o.Limits.MaxImageBytes <= 0 {
		o.Limits.MaxImageBytes = DefaultMaxImageBytes
	}
	if o.Limits.MaxVideoBytes <= 0 {
		o.Limits.MaxVideoBytes = DefaultMaxVideoBytes
	}
	if o.Limits.MaxDocumentBytes <= 0 || o.Limits.MaxDocumentBytes > platforms.MaxDocumentBytes {
		o.Limits.MaxDocumentBytes = platforms.MaxDocumentBytes
	}
	if o.UploadTTL <= 0 {
		o.UploadTTL = DefaultUploadTTL
	}
	if o.URLTTL <= 0 {
		o.URLTTL = DefaultURLTTL
	}
	if o.PendingTTL <= 0 {
		o.PendingTTL = DefaultPendingTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MaxConvertPixels <= 0 {
		o.MaxConvertPixels = photo.DefaultMaxPixels
	}
	if o.UploadGrace <= 0 {
		o.UploadGrace = DefaultUploadGrace
	}
	if o.UploadMinRate <= 0 {
		o.UploadMinRate = DefaultUploadMinRate
	}
	if o.MinFreeBytes == 0 {
		o.MinFreeBytes = DefaultMinFreeBytes
	}
	if o.FreeSpace == nil {
		o.FreeSpace = statfsFree
	}
	return &Service{o: o, converting: make(chan struct{}, 1), counting: make(chan struct{}, 1), receiving: map[string]int64{}}, nil
}

// Blob is the service's storage backend.
func (s *Service) Blob() Store { return s.o.Blob }

// Limits are the service's size limits.
func (s *Service) Limits() Limits { return s.o.Limits }

// Kind classifies a refusal of the media flow; the HTTP edge maps it to a status.
type Kind int

// Kinds of refusal.
const (
	Invalid   Kind = iota + 1 // 400
	Forbidden                 // 403: another user's upload, or an upload URL that is not valid
	NotFound                  // 404
	Conflict                  // 409: an upload URL already used, or in use by another PUT
	TooLarge                  // 413: more bytes than declared
	TimedOut                  // 408: an upload slower than its deadline allows
	Full                      // 503: the storage is (nearly) full
)

// Error is a refusal with a message safe to show to the client.
type Error struct {
	Kind    Kind
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return e.Message }

func refuse(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// CheckFilename validates a client's file name: 1 to 255 bytes of UTF-8, no path separator, no
// control character, not "." or "..".
func CheckFilename(field, name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return refuse(Invalid, "%s: must not be empty", field)
	case len(name) > MaxFilenameBytes:
		return refuse(Invalid, "%s: is %d bytes; at most %d are allowed", field, len(name), MaxFilenameBytes)
	case !utf8.ValidString(name):
		return refuse(Invalid, "%s: must be valid UTF-8", field)
	case strings.ContainsAny(name, `/\`):
		return refuse(Invalid, "%s: must be a file name without path separators (/ or \\)", field)
	case name == "." || name == "..":
		return refuse(Invalid, "%s: must name a file", field)
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return refuse(Invalid, "%s: must not contain control characters (found U+%04X)", field, r)
		}
	}
	return nil
}

// CheckContentType validates a declared content type.
func CheckContentType(field, contentType string) error {
	if Extension(contentType) == "" {
		return refuse(Invalid, "%s: %q is not accepted; send one of %s", field, truncate(contentType, 64), strings.Join(ContentTypes, ", "))
	}
	return nil
}

func (s *Service) checkSize(field, contentType string, size int64) error {
	if size <= 0 {
		return refuse(Invalid, "%s: must be a positive number of bytes", field)
	}
	if limit := s.o.Limits.For(contentType); size > limit {
		kind := "images"
		switch {
		case IsVideo(contentType):
			kind = "videos"
		case IsDocument(contentType):
			kind = "documents"
		}
		e := refuse(Invalid, "%s: %d bytes is over the limit for %s (%d bytes)", field, size, kind, limit)
		e.Details = map[string]any{"limit_bytes": limit}
		return e
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Presigned is the answer to a presign.
type Presigned struct {
	UploadURL       string
	Key             string
	StorageFilename string
	ExpiresAt       time.Time
}

// Presign validates a planned upload, issues its key and upload URL, and records it pending, in
// the user's workspace workspaceID ("" for main).
func (s *Service) Presign(ctx context.Context, userID, workspaceID, filename, contentType string, size int64) (*Presigned, error) {
	if err := CheckFilename("filename", filename); err != nil {
		return nil, err
	}
	if err := CheckContentType("content_type", contentType); err != nil {
		return nil, err
	}
	if err := s.checkSize("size_bytes", contentType, size); err != nil {
		return nil, err
	}
	id := uuid.Must(uuid.NewV7()).String()
	storage := id + Extension(contentType)
	key := Key(userID, storage)
	now := s.o.Now().UTC()
	expires := now.Add(s.o.UploadTTL).Truncate(time.Second)
	u, err := s.o.Blob.PresignPut(ctx, key, contentType, size, expires)
	if err != nil {
		return nil, err
	}
	m := &persistence.Media{
		ID: id, UserID: userID, WorkspaceID: workspaceID, Key: key, StorageFilename: storage, OriginalFilename: filename,
		ContentType: contentType, Size: size, CreatedAt: now, UploadExpiresAt: expires,
	}
	if err := s.o.Store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutMedia(m) }); err != nil {
		return nil, err
	}
	return &Presigned{UploadURL: u, Key: key, StorageFilename: storage, ExpiresAt: expires}, nil
}

// ConfirmInput is the body of a confirm.
type ConfirmInput struct {
	Key              string
	StorageFilename  string
	OriginalFilename string
	ContentType      string
	Size             int64
	// AltText, when given, describes the media for people who cannot see it (CheckAltText).
	AltText *string
}

// MaxAltText is the longest alt text Herald keeps, in characters: the most any network takes
// (LinkedIn's). Each network's own limit is checked when a post goes to it
// (platforms.AltTextMax).
var MaxAltText = platforms.AltTextMax(platforms.LinkedIn)

// CheckAltText checks an alt text on its own: text a network may be sent (platforms.CheckText),
// at most MaxAltText characters.
func CheckAltText(field, s string) error {
	if err := platforms.CheckText(s); err != nil {
		return refuse(Invalid, "%s: %s", field, err.Error())
	}
	if n := utf8.RuneCountInString(s); n > MaxAltText {
		return refuse(Invalid, "%s: is %d characters; at most %d", field, n, MaxAltText)
	}
	return nil
}

// SetAltText replaces the alt text of a confirmed media of the user ("" removes it).
func (s *Service) SetAltText(ctx context.Context, scope, id, alt string) (*persistence.Media, error) {
	if err := CheckAltText("alt_text", alt); err != nil {
		return nil, err
	}
	var out *persistence.Media
	err := s.o.Store.Update(ctx, func(tx *persistence.Tx) error {
		m, err := tx.ConfirmedMedia(scope, id)
		if err != nil {
			return err
		}
		m.AltText = alt
		out = m
		return tx.PutMedia(m)
	})
	if errors.Is(err, persistence.ErrNotFound) || errors.Is(err, persistence.ErrMediaUnconfirmed) {
		return nil, refuse(NotFound, "media not found")
	}
	return out, err
}

// Confirm checks an upload against its presign and what was actually stored — owner, key, type,
// size, and the file's first bytes — and makes it a confirmed media. Confirming again returns the
// same media. scope is the request's workspace (persistence.Scope): the upload must be its.
func (s *Service) Confirm(ctx context.Context, scope string, in ConfirmInput) (*persistence.Media, error) {
	if err := CheckFilename("original_filename", in.OriginalFilename); err != nil {
		return nil, err
	}
	if err := CheckContentType("content_type", in.ContentType); err != nil {
		return nil, err
	}
	if err := s.checkSize("size_bytes", in.ContentType, in.Size); err != nil {
		return nil, err
	}
	if in.AltText != nil {
		if err := CheckAltText("alt_text", *in.AltText); err != nil {
			return nil, err
		}
	}
	var m *persistence.Media
	if err := s.o.Store.View(func(tx *persistence.Tx) error {
		var err error
		m, err = tx.MediaByKey(in.Key)
		return err
	}); errors.Is(err, persistence.ErrNotFound) {
		return nil, refuse(Invalid, "key: no upload was presigned with this key (or it was never confirmed and has been deleted)")
	} else if err != nil {
		return nil, err
	}
	if m.Scope() != scope {
		return nil, refuse(Forbidden, "key: the upload belongs to another user or workspace")
	}
	if in.StorageFilename != m.StorageFilename {
		return nil, refuse(Invalid, "storage_filename: does not match the key; send the storage_filename presign returned")
	}
	if in.ContentType != m.ContentType {
		return nil, refuse(Invalid, "content_type: the upload was presigned as %s", m.ContentType)
	}
	if in.Size != m.Size {
		return nil, refuse(Invalid, "size_bytes: the upload was presigned for %d bytes", m.Size)
	}
	if m.Confirmed() {
		if in.AltText != nil && *in.AltText != m.AltText {
			return s.SetAltText(ctx, scope, m.ID, *in.AltText)
		}
		return m, nil
	}
	info, err := s.o.Blob.Stat(ctx, m.Key)
	if errors.Is(err, ErrNotFound) {
		return nil, refuse(Invalid, "nothing was uploaded for this key: PUT the file to upload_url first")
	}
	if err != nil {
		return nil, err
	}
	if info.Size != m.Size {
		e := refuse(Invalid, "size_bytes: the stored file is %d bytes, not %d", info.Size, m.Size)
		e.Details = map[string]any{"stored_bytes": info.Size}
		return nil, e
	}
	if info.ContentType != "" && !sameMediaType(info.ContentType, m.ContentType) {
		return nil, refuse(Invalid, "content_type: the file was stored as %s, not %s", truncate(info.ContentType, 64), m.ContentType)
	}
	head, err := s.head(ctx, m.Key)
	if err != nil {
		return nil, err
	}
	if err := Sniff(m.ContentType, head); err != nil {
		return nil, refuse(Invalid, "%s; upload a real %s file", err.Error(), m.ContentType)
	}
	if IsDocument(m.ContentType) {
		if err := s.checkPages(ctx, m); err != nil {
			return nil, err
		}
	}
	now := s.o.Now().UTC()
	var out *persistence.Media
	err = s.o.Store.Update(ctx, func(tx *persistence.Tx) error {
		cur, err := tx.MediaByKey(m.Key)
		if err != nil {
			return err
		}
		if cur.Confirmed() {
			out = cur
			return nil
		}
		cur.ConfirmedAt = &now
		cur.OriginalFilename = in.OriginalFilename
		if in.AltText != nil {
			cur.AltText = *in.AltText
		}
		out = cur
		return tx.PutMedia(cur)
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, refuse(Invalid, "key: the upload was deleted before it was confirmed")
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// head reads the first SniffLen bytes of a stored file.
func (s *Service) head(ctx context.Context, key string) ([]byte, error) {
	o, _, err := s.o.Blob.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = o.Close() }()
	buf := make([]byte, SniffLen)
	n, err := io.ReadFull(o, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("blob: read the file's first bytes: %w", err)
	}
	return buf[:n], nil
}

func sameMediaType(a, b string) bool {
	mt, _, err := mime.ParseMediaType(a)
	return err == nil && strings.EqualFold(mt, b)
}

// Get returns the user's confirmed media; NotFound for anything else, another user's media
// included.
func (s *Service) Get(scope, id string) (*persistence.Media, error) {
	var m *persistence.Media
	err := s.o.Store.View(func(tx *persistence.Tx) error {
		var err error
		m, err = tx.ConfirmedMedia(scope, id)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) || errors.Is(err, persistence.ErrMediaUnconfirmed) {
		return nil, refuse(NotFound, "media not found")
	}
	return m, err
}

// URL is a signed URL of the media's file, served by Herald, valid for URLTTL.
func (s *Service) URL(m *persistence.Media) string {
	return s.o.Signer.FileURL(s.o.BaseURL(), m.Key, s.o.Now().Add(s.o.URLTTL))
}

// Receive stores the body of a PUT to a local upload URL: the URL must be one Herald signed for
// this key and not expired, the Content-Type the presigned one, and the body exactly the
// presigned size. It answers NotFound when the backend is not Local (uploads then go to S3).
func (s *Service) Receive(ctx context.Context, key string, q url.Values, contentType string, contentLength int64, body io.Reader) (int64, error) {
	local, ok := s.o.Blob.(*Local)
	if !ok || !ValidKey(key) {
		return 0, refuse(NotFound, "no upload URL here")
	}
	var m *persistence.Media
	if err := s.o.Store.View(func(tx *persistence.Tx) error {
		var err error
		m, err = tx.MediaByKey(key)
		return err
	}); errors.Is(err, persistence.ErrNotFound) {
		return 0, refuse(NotFound, "no upload was presigned for this URL")
	} else if err != nil {
		return 0, err
	}
	switch err := s.o.Signer.CheckUpload(q, s.o.Now(), key, m.ContentType, m.Size); {
	case errors.Is(err, ErrExpired):
		return 0, refuse(Forbidden, "the upload URL expired at %s; presign again", m.UploadExpiresAt.UTC().Format(time.RFC3339))
	case err != nil:
		return 0, refuse(Forbidden, "the upload URL's signature does not match; use upload_url exactly as presign returned it")
	}
	if mt, _, err := mime.ParseMediaType(contentType); err != nil || !strings.EqualFold(mt, m.ContentType) {
		return 0, refuse(Invalid, "Content-Type: must be %s, as presigned (got %q)", m.ContentType, truncate(contentType, 64))
	}
	if m.Confirmed() {
		return 0, refuse(Conflict, "this upload URL was already used: the file is uploaded and confirmed")
	}
	if contentLength > m.Size {
		return 0, refuse(TooLarge, "the body is %d bytes; the upload was presigned for %d", contentLength, m.Size)
	}
	if !s.claim(key, m.Size) {
		return 0, refuse(Conflict, "another PUT to this upload URL is in progress: an upload URL takes one PUT at a time")
	}
	defer s.release(key)
	if err := s.checkFree(local); err != nil {
		return 0, err
	}
	limit := s.UploadTime(m.Size)
	if tb, ok := body.(TimedBody); ok {
		tb.Until(time.Now().Add(limit))
	}
	n, err := local.Write(ctx, key, body, m.Size)
	switch {
	case errors.Is(err, ErrExists):
		return 0, refuse(Conflict, "this upload URL was already used: an upload URL accepts one PUT")
	case errors.Is(err, ErrTooSlow):
		return 0, refuse(TimedOut, "the upload did not end within %s (%d bytes at %d bytes a second at least, plus %s); %d bytes were received and nothing was stored",
			limit.Round(time.Second), m.Size, s.o.UploadMinRate, s.o.UploadGrace, n)
	case errors.Is(err, ErrTooLarge):
		return 0, refuse(TooLarge, "the body is larger than the presigned %d bytes; nothing was stored", m.Size)
	case errors.Is(err, ErrShort):
		return 0, refuse(Invalid, "the body ended after %d bytes; the upload was presigned for %d; nothing was stored", n, m.Size)
	case errors.Is(err, ErrInterrupted):
		return 0, refuse(Invalid, "the upload was interrupted after %d bytes; nothing was stored", n)
	case err != nil:
		return 0, err
	}
	// The janitor may have deleted the record while the body streamed (an upload that started
	// within its URL's lifetime and ran past the pending lifetime): then the file goes too.
	var gone bool
	_ = s.o.Store.View(func(tx *persistence.Tx) error {
		_, err := tx.MediaByKey(key)
		gone = errors.Is(err, persistence.ErrNotFound)
		return nil
	})
	if gone {
		_ = local.Delete(ctx, key)
		return 0, refuse(NotFound, "the upload was deleted while it was being received")
	}
	return n, nil
}

// TimedBody is an upload body whose reads can be bounded in time: the upload route's request
// body, through its connection's read deadline. Receive gives it the upload's deadline; a read
// after it fails with ErrTooSlow.
type TimedBody interface {
	io.Reader
	Until(deadline time.Time)
}

// UploadTime is how long a PUT of size bytes to a local upload URL may take: UploadGrace plus the
// size at UploadMinRate.
func (s *Service) UploadTime(size int64) time.Duration {
	return s.o.UploadGrace + time.Duration(float64(size)/float64(s.o.UploadMinRate)*float64(time.Second))
}

// claim marks key's upload in progress; false when another PUT holds it.
func (s *Service) claim(key string, size int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.receiving[key]; busy {
		return false
	}
	s.receiving[key] = size
	return true
}

func (s *Service) release(key string) {
	s.mu.Lock()
	delete(s.receiving, key)
	s.mu.Unlock()
}

// checkFree refuses an upload (Full) when the file system of the media directory would keep less
// than MinFreeBytes free once every upload in progress, this one included, is written at its
// presigned size. A file system whose free space cannot be read does not hold uploads back: a
// write that finds the disk full is still refused, and nothing of it kept.
func (s *Service) checkFree(local *Local) error {
	if s.o.MinFreeBytes < 0 {
		return nil
	}
	free, err := s.o.FreeSpace(local.Dir())
	if err != nil {
		s.o.Log.Warn("media: could not read the free space of the media directory", "dir", local.Dir(), "error", err)
		return nil
	}
	s.mu.Lock()
	var pending int64
	for _, n := range s.receiving {
		pending += n
	}
	s.mu.Unlock()
	if left := int64(min(free, math.MaxInt64)) - pending; left < s.o.MinFreeBytes {
		s.o.Log.Warn("media: upload refused: the media storage is nearly full",
			"free_bytes", free, "uploads_in_progress_bytes", pending, "min_free_bytes", s.o.MinFreeBytes)
		return refuse(Full, "Herald's media storage is nearly full: the upload was refused before anything was stored; retry later")
	}
	return nil
}

// OpenFile opens the confirmed media file a signed file URL names, after checking its signature
// and expiry.
//
// A derived file's name ({media id}.derived.jpg) opens the JPEG Herald made of the media for the
// networks that take no other form; the media returned then describes that file (its key, name,
// type and size), not the upload.
func (s *Service) OpenFile(ctx context.Context, storageFilename string, q url.Values) (Object, Info, *persistence.Media, error) {
	if id := derivedMediaID(storageFilename); id != "" {
		return s.openDerived(ctx, id, storageFilename, q)
	}
	id := MediaIDOf(storageFilename)
	if id == "" {
		return nil, Info{}, nil, refuse(NotFound, "media not found")
	}
	var m *persistence.Media
	err := s.o.Store.View(func(tx *persistence.Tx) error {
		var err error
		m, err = tx.Media(id)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) || (err == nil && (!m.Confirmed() || m.StorageFilename != storageFilename)) {
		return nil, Info{}, nil, refuse(NotFound, "media not found")
	}
	if err != nil {
		return nil, Info{}, nil, err
	}
	switch err := s.o.Signer.CheckFile(q, s.o.Now(), m.Key); {
	case errors.Is(err, ErrExpired):
		return nil, Info{}, nil, refuse(Forbidden, "the media URL has expired; ask for the media again for a fresh URL")
	case err != nil:
		return nil, Info{}, nil, refuse(Forbidden, "the media URL's signature does not match")
	}
	o, info, err := s.o.Blob.Open(ctx, m.Key)
	if errors.Is(err, ErrNotFound) {
		return nil, Info{}, nil, refuse(NotFound, "media not found")
	}
	if err != nil {
		return nil, Info{}, nil, err
	}
	return o, info, m, nil
}

// openDerived opens a media's derived file for a signed file URL.
func (s *Service) openDerived(ctx context.Context, id, filename string, q url.Values) (Object, Info, *persistence.Media, error) {
	var m *persistence.Media
	err := s.o.Store.View(func(tx *persistence.Tx) error {
		var err error
		m, err = tx.Media(id)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) || (err == nil && (!m.Confirmed() || m.Derived == nil)) {
		return nil, Info{}, nil, refuse(NotFound, "media not found")
	}
	if err != nil {
		return nil, Info{}, nil, err
	}
	switch err := s.o.Signer.CheckFile(q, s.o.Now(), m.Derived.Key); {
	case errors.Is(err, ErrExpired):
		return nil, Info{}, nil, refuse(Forbidden, "the media URL has expired; ask for the media again for a fresh URL")
	case err != nil:
		return nil, Info{}, nil, refuse(Forbidden, "the media URL's signature does not match")
	}
	o, info, err := s.o.Blob.Open(ctx, m.Derived.Key)
	if errors.Is(err, ErrNotFound) {
		return nil, Info{}, nil, refuse(NotFound, "media not found")
	}
	if err != nil {
		return nil, Info{}, nil, err
	}
	file := *m
	file.Key, file.StorageFilename, file.ContentType, file.Size = m.Derived.Key, filename, m.Derived.ContentType, m.Derived.Size
	return o, info, &file, nil
}

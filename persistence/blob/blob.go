// Package blob stores the bytes of uploaded media and runs Herald's media flow around them.
//
// Two backends implement Store: Local (the default: files under DIR/media, uploaded through a
// Herald URL signed with an HMAC) and S3 (any S3-compatible service through minio-go, uploaded
// with a presigned PUT whose Content-Type is signed). Service is the flow the API exposes —
// presign, receive the upload (Local), confirm, read — with every check the API promises: type,
// size, ownership, one issued key per presign, and magic-byte sniffing of what was actually
// stored. The janitor (Service.Sweep) deletes uploads never confirmed, and Service.Resolve turns
// a user's media ids into platforms.Media for the network adapters.
//
// Keys have the fixed form uploads/{user id}/{media id}.{ext}, and derived/{user id}/{media
// id}.derived.jpg for the JPEG Herald makes of an image for a network that takes no other form
// (Service.Resolve, derive.go); no part of a key comes from the client, so no client input ever
// names a path or an object.
package blob

import (
	"context"
	"errors"
	"io"
	"regexp"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Backend errors.
var (
	// ErrNotFound means nothing is stored under the key.
	ErrNotFound = errors.New("blob: not found")
	// ErrExists means the key was already written (an upload URL accepts one PUT).
	ErrExists = errors.New("blob: already uploaded")
	// ErrTooLarge means the body went past the declared size; nothing was stored.
	ErrTooLarge = errors.New("blob: more bytes than declared")
	// ErrShort means the body ended before the declared size; nothing was stored.
	ErrShort = errors.New("blob: fewer bytes than declared")
	// ErrBadKey means a key is not of the form Herald issues.
	ErrBadKey = errors.New("blob: malformed key")
	// ErrInterrupted means reading the body failed (the client went away); nothing was stored.
	ErrInterrupted = errors.New("blob: upload interrupted")
	// ErrTooSlow means the body did not arrive before the upload's deadline (TimedBody); nothing
	// was stored.
	ErrTooSlow = errors.New("blob: upload slower than its deadline allows")
)

// Info describes a stored object.
type Info struct {
	Size int64
	// ContentType is the type the storage recorded ("" when the backend does not record one; the
	// local backend enforces the presigned type at upload instead).
	ContentType string
	ModTime     time.Time
}

// Object is a stored object opened for reading; it seeks, so that it can serve range requests.
type Object interface {
	io.ReadSeekCloser
}

// Store is a media storage backend.
type Store interface {
	// Name is "local" or "s3".
	Name() string
	// PresignPut returns the URL that accepts one PUT of the object's bytes with this exact
	// Content-Type until expires.
	PresignPut(ctx context.Context, key, contentType string, size int64, expires time.Time) (string, error)
	// Stat describes the stored object; ErrNotFound when there is none.
	Stat(ctx context.Context, key string) (Info, error)
	// Open opens the object for reading; ErrNotFound when there is none.
	Open(ctx context.Context, key string) (Object, Info, error)
	// Delete removes the object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// Put stores exactly size bytes of r under key with this content type. Herald stores its own
	// derived files with it (DerivedKey), never a client's upload; a key already written keeps
	// its bytes (a derived file is the same whoever made it).
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
}

// Content types Herald accepts, and the extension each gets in its storage filename.
var extensions = map[string]string{
	"image/jpeg":      ".jpg",
	"image/png":       ".png",
	"video/mp4":       ".mp4",
	"video/quicktime": ".mov",
	"application/pdf": ".pdf",
}

// ContentTypes lists the accepted content types, images first, then videos, then documents.
var ContentTypes = []string{"image/jpeg", "image/png", "video/mp4", "video/quicktime", "application/pdf"}

// Extension returns the storage extension of an accepted content type ("" when not accepted).
func Extension(contentType string) string { return extensions[contentType] }

// IsVideo reports whether an accepted content type is a video.
func IsVideo(contentType string) bool {
	return contentType == "video/mp4" || contentType == "video/quicktime"
}

// IsDocument reports whether an accepted content type is a document (a PDF).
func IsDocument(contentType string) bool { return contentType == platforms.PDF }

const uuidRE = `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`

var (
	keyRE             = regexp.MustCompile(`^uploads/` + uuidRE + `/` + uuidRE + `\.(jpg|png|mp4|mov|pdf)$`)
	filenameRE        = regexp.MustCompile(`^(` + uuidRE + `)\.(jpg|png|mp4|mov|pdf)$`)
	derivedKeyRE      = regexp.MustCompile(`^derived/` + uuidRE + `/` + uuidRE + derivedSuffix + `$`)
	derivedFilenameRE = regexp.MustCompile(`^(` + uuidRE + `)` + derivedSuffix + `$`)
)

// derivedSuffix ends a derived file's name: {media id}.derived.jpg, which no upload's storage
// filename can be, so that a file URL names one file.
const derivedSuffix = `\.derived\.jpg`

// DerivedKey is the storage key of the JPEG Herald derives from a user's media:
// derived/{user id}/{media id}.derived.jpg. One per media, whatever network asked for it.
func DerivedKey(userID, mediaID string) string {
	return "derived/" + userID + "/" + mediaID + ".derived.jpg"
}

// storable reports whether a backend may hold key: an upload's or a derived file's.
func storable(key string) bool { return keyRE.MatchString(key) || derivedKeyRE.MatchString(key) }

// Key is the storage key of a user's file.
func Key(userID, storageFilename string) string {
	return "uploads/" + userID + "/" + storageFilename
}

// ValidKey reports whether key has the form Herald issues.
func ValidKey(key string) bool { return keyRE.MatchString(key) }

// MediaIDOf returns the media id a storage filename was issued for, or "".
func MediaIDOf(storageFilename string) string {
	m := filenameRE.FindStringSubmatch(storageFilename)
	if m == nil {
		return ""
	}
	return m[1]
}

// derivedMediaID returns the media id a derived file's name belongs to, or "".
func derivedMediaID(filename string) string {
	m := derivedFilenameRE.FindStringSubmatch(filename)
	if m == nil {
		return ""
	}
	return m[1]
}

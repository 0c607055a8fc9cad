package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"
)

// Media is one uploaded file: created pending by a presign, confirmed once its bytes are checked.
// Only confirmed media can be attached to posts; pending ones are deleted after a while.
type Media struct {
	ID     string `json:"id"`
	UserID string `json:"user_id"`
	// WorkspaceID is the workspace it belongs to ("" for its user's main workspace; Scope).
	WorkspaceID string `json:"workspace_id,omitempty"`
	// Key is where the bytes live in blob storage: uploads/{user id}/{storage filename}.
	Key              string `json:"key"`
	StorageFilename  string `json:"storage_filename"`
	OriginalFilename string `json:"original_filename"`
	ContentType      string `json:"content_type"`
	// Size is the declared size at presign, which the stored object must match at confirm.
	Size      int64     `json:"size_bytes"`
	CreatedAt time.Time `json:"created_at"`
	// UploadExpiresAt is when the presigned upload URL stops working.
	UploadExpiresAt time.Time  `json:"upload_expires_at"`
	ConfirmedAt     *time.Time `json:"confirmed_at,omitempty"`
	// Derived is the JPEG re-encoding Herald made of the file for the networks that take no other
	// form (docs/media.md, "Conversions"); nil until a publish needed one. Its bytes go with the
	// media's when the media is deleted.
	Derived *Derived `json:"derived,omitempty"`
	// AltText describes the media for people who cannot see it.
	AltText string `json:"alt_text,omitempty"`
}

// Derived is a file Herald made from a media's file and keeps beside it.
type Derived struct {
	// Key is where its bytes live in blob storage: derived/{user id}/{media id}.derived.jpg.
	Key         string    `json:"key"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size_bytes"`
	CreatedAt   time.Time `json:"created_at"`
}

// Confirmed reports whether the media's upload was confirmed.
func (m *Media) Confirmed() bool { return m.ConfirmedAt != nil }

// ErrMediaUnconfirmed means the media exists but its upload was never confirmed.
var ErrMediaUnconfirmed = errors.New("persistence: media is not confirmed")

// The media buckets:
//
//	media          media id → Media (JSON)
//	media_key      storage key (string) → media id; a key is issued once, by presign
//	media_user     user id | media id → empty
//	media_pending  presign time (8, unix nanoseconds) | media id → empty; only unconfirmed media
//	media_orphans  storage key (string) → empty; blobs whose record is gone but whose deletion
//	               from blob storage has not succeeded yet
var (
	bMedia        = []byte("media")
	bMediaKey     = []byte("media_key")
	bMediaUser    = []byte("media_user")
	bMediaPending = []byte("media_pending")
	bMediaOrphans = []byte("media_orphans")
)

func init() { registerBuckets(bMedia, bMediaKey, bMediaUser, bMediaPending, bMediaOrphans) }

func pendingKey(m *Media) []byte {
	k := make([]byte, 8, 24)
	binary.BigEndian.PutUint64(k, uint64(m.CreatedAt.UnixNano()))
	return append(k, mustID(m.ID)...)
}

// PutMedia stores a media record and its indexes; ErrExists when its key belongs to another
// media.
func (t *Tx) PutMedia(m *Media) error {
	id := mustID(m.ID)
	keys := t.kv.Bucket(bMediaKey)
	if owner := keys.Get([]byte(m.Key)); owner != nil && !bytes.Equal(owner, id) {
		return ErrExists
	}
	if err := keys.Put([]byte(m.Key), id); err != nil {
		return err
	}
	if err := t.kv.Bucket(bMediaUser).Put(join(mustID(m.Scope()), id), nil); err != nil {
		return err
	}
	pending := t.kv.Bucket(bMediaPending)
	if m.Confirmed() {
		if err := pending.Delete(pendingKey(m)); err != nil {
			return err
		}
	} else if err := pending.Put(pendingKey(m), nil); err != nil {
		return err
	}
	return t.put(bMedia, id, m)
}

// Media returns a media record by id.
func (t *Tx) Media(id string) (*Media, error) {
	var m Media
	if err := t.get(bMedia, mustID(id), &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// MediaByKey returns the media record a storage key was issued for.
func (t *Tx) MediaByKey(key string) (*Media, error) {
	id := t.kv.Bucket(bMediaKey).Get([]byte(key))
	if id == nil {
		return nil, ErrNotFound
	}
	var m Media
	if err := t.get(bMedia, id, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ConfirmedMedia returns the workspace's confirmed media with this id (scope: Scope):
// ErrNotFound when there is no such media or it belongs to another workspace,
// ErrMediaUnconfirmed when it was never confirmed.
func (t *Tx) ConfirmedMedia(scope, id string) (*Media, error) {
	m, err := t.Media(id)
	if err != nil {
		return nil, err
	}
	if m.Scope() != scope {
		return nil, ErrNotFound
	}
	if !m.Confirmed() {
		return nil, ErrMediaUnconfirmed
	}
	return m, nil
}

// DeleteMedia removes a media record and its indexes, and records its key (and its derived
// file's) as an orphan until the caller has deleted the bytes (ForgetOrphan).
func (t *Tx) DeleteMedia(m *Media) error {
	id := mustID(m.ID)
	if err := t.kv.Bucket(bMediaKey).Delete([]byte(m.Key)); err != nil {
		return err
	}
	if err := t.kv.Bucket(bMediaUser).Delete(join(mustID(m.Scope()), id)); err != nil {
		return err
	}
	if err := t.kv.Bucket(bMediaPending).Delete(pendingKey(m)); err != nil {
		return err
	}
	if err := t.kv.Bucket(bMediaOrphans).Put([]byte(m.Key), nil); err != nil {
		return err
	}
	if m.Derived != nil {
		if err := t.kv.Bucket(bMediaOrphans).Put([]byte(m.Derived.Key), nil); err != nil {
			return err
		}
	}
	return t.kv.Bucket(bMedia).Delete(id)
}

// PendingMediaBefore lists up to limit unconfirmed media presigned before t, oldest first.
func (t *Tx) PendingMediaBefore(before time.Time, limit int) ([]*Media, error) {
	end := make([]byte, 8)
	binary.BigEndian.PutUint64(end, uint64(before.UnixNano()))
	var out []*Media
	c := t.kv.Bucket(bMediaPending).Cursor()
	for k, _ := c.First(); k != nil && len(out) < limit && bytes.Compare(k[:8], end) < 0; k, _ = c.Next() {
		var m Media
		if err := t.get(bMedia, k[8:], &m); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, err
		}
		out = append(out, &m)
	}
	return out, nil
}

// MediaOrphans lists up to limit storage keys whose bytes still await deletion.
func (t *Tx) MediaOrphans(limit int) []string {
	var out []string
	c := t.kv.Bucket(bMediaOrphans).Cursor()
	for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
		out = append(out, string(k))
	}
	return out
}

// ForgetOrphan records that an orphan's bytes are deleted.
func (t *Tx) ForgetOrphan(key string) error {
	return t.kv.Bucket(bMediaOrphans).Delete([]byte(key))
}

// MediaInUse reports whether a post of the workspace (scope: Scope) that is not final (draft,
// scheduled or publishing) references the media.
func (t *Tx) MediaInUse(scope, mediaID string) (bool, error) {
	user := mustID(scope)
	final := map[byte]bool{statusCode(PostPublished): true, statusCode(PostPartial): true, statusCode(PostFailed): true}
	posts := t.kv.Bucket(bPosts)
	c := t.kv.Bucket(bPostsUser).Cursor()
	for k, v := c.Seek(user); k != nil && bytes.HasPrefix(k, user); k, v = c.Next() {
		if len(v) > 0 && final[v[0]] {
			continue
		}
		raw := posts.Get(k[16:])
		if raw == nil {
			continue
		}
		var p struct {
			Status   string   `json:"status"`
			MediaIDs []string `json:"media_ids"`
		}
		if err := Decode(raw, &p); err != nil {
			return false, err
		}
		if p.Status == PostPublished || p.Status == PostPartial || p.Status == PostFailed {
			continue
		}
		for _, id := range p.MediaIDs {
			if id == mediaID {
				return true, nil
			}
		}
	}
	return false, nil
}

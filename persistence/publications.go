package persistence

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"fmt"
	"slices"
	"time"
)

// Publication is one published target of a post: what analytics and the inbox read live from
// the network. It is derived from the post record; nothing of it is stored apart.
type Publication struct {
	// ID is the publication's own id (PublicationUUID of the post and target).
	ID        string
	PostID    string
	AccountID string
	Platform  string
	// Target is the index of the target in the post's targets.
	Target int
	// NetworkID is the network's id of the published post (Target.PublicationID).
	NetworkID string
	// PublishedAt is when Herald recorded the post's publish outcome (the post's updated_at once
	// published; a published post changes no more).
	PublishedAt time.Time
	// TrackingID is the post's latest publish job, which holds the publication's link.
	TrackingID string
}

// PublicationFilter selects a workspace's publications.
type PublicationFilter struct {
	Scope string // the workspace (Scope)
	// Platforms keeps only these platforms (nil: all).
	Platforms []string
	// AccountID keeps only this connected account ("" for all).
	AccountID string
	// Since and Until bound PublishedAt (inclusive; zero: unbounded).
	Since, Until time.Time
}

// publicationRecord is the part of a post record a publication needs; decoding only it skips
// the post's content.
type publicationRecord struct {
	Status     string    `json:"status"`
	UpdatedAt  time.Time `json:"updated_at"`
	TrackingID *string   `json:"tracking_id"`
	Targets    []struct {
		AccountID     string `json:"connected_account_id"`
		Platform      string `json:"platform"`
		Status        string `json:"status"`
		PublicationID string `json:"publication_id"`
	} `json:"targets"`
}

// Publications returns the user's publications that match f, newest first (by PublishedAt, then
// post id, then target). Only posts whose index summary says published or partial, on one of
// the wanted platforms, are decoded, and only the fields a publication needs.
func (t *Tx) Publications(f PublicationFilter) ([]Publication, error) {
	user := mustID(f.Scope)
	published, partial := statusCode(PostPublished), statusCode(PostPartial)
	var mask uint16
	for _, p := range f.Platforms {
		mask |= 1 << platformCodes[p]
	}
	wanted := func(p string) bool { return len(f.Platforms) == 0 || slices.Contains(f.Platforms, p) }
	posts := t.kv.Bucket(bPosts)
	var out []Publication
	c := t.kv.Bucket(bPostsUser).Cursor()
	for k, v := c.Seek(user); k != nil && bytes.HasPrefix(k, user); k, v = c.Next() {
		if len(v) == 3 {
			if v[0] != published && v[0] != partial {
				continue
			}
			if mask != 0 && (uint16(v[1])<<8|uint16(v[2]))&mask == 0 {
				continue
			}
		}
		raw := posts.Get(k[16:])
		if raw == nil {
			continue
		}
		if at, ok := updatedAt(raw); ok && ((!f.Since.IsZero() && at.Before(f.Since)) || (!f.Until.IsZero() && at.After(f.Until))) {
			continue // outside the window: not decoded
		}
		var rec publicationRecord
		if err := Decode(raw, &rec); err != nil {
			return nil, err
		}
		if rec.Status != PostPublished && rec.Status != PostPartial {
			continue
		}
		at := rec.UpdatedAt.UTC()
		if (!f.Since.IsZero() && at.Before(f.Since)) || (!f.Until.IsZero() && at.After(f.Until)) {
			continue
		}
		postID := idString(k[16:])
		tracking := ""
		if rec.TrackingID != nil {
			tracking = *rec.TrackingID
		}
		for i, tg := range rec.Targets {
			if tg.Status != TargetPublished || tg.PublicationID == "" || !wanted(tg.Platform) {
				continue
			}
			if f.AccountID != "" && tg.AccountID != f.AccountID {
				continue
			}
			out = append(out, Publication{ID: idString(publicationKey(k[16:], i)), PostID: postID, AccountID: tg.AccountID, Platform: tg.Platform, Target: i,
				NetworkID: tg.PublicationID, PublishedAt: at, TrackingID: tracking})
		}
	}
	slices.SortStableFunc(out, func(a, b Publication) int {
		if c := b.PublishedAt.Compare(a.PublishedAt); c != 0 {
			return c
		}
		if c := cmp.Compare(b.PostID, a.PostID); c != 0 {
			return c
		}
		return cmp.Compare(a.Target, b.Target)
	})
	return out, nil
}

// updatedAtField opens a post record's updated_at member. Inside a JSON string every quote is
// escaped, so the sequence cannot occur in a string value (the content): its first occurrence is
// the member itself.
var updatedAtField = []byte(`"updated_at":"`)

// updatedAt reads a post record's updated_at without decoding the record: a window's filter
// then costs a byte search, not a JSON decode, for the posts outside it.
func updatedAt(raw []byte) (time.Time, bool) {
	i := bytes.Index(raw, updatedAtField)
	if i < 0 {
		return time.Time{}, false
	}
	v := raw[i+len(updatedAtField):]
	j := bytes.IndexByte(v, '"')
	if j < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(v[:j]))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// PublicationLink returns the link the network gave a publication when it was published (from
// its publish job), or "".
func (t *Tx) PublicationLink(trackingID string, target int) string {
	if trackingID == "" {
		return ""
	}
	j, err := t.Job(trackingID)
	if err != nil {
		return ""
	}
	for _, jt := range j.Targets {
		if jt.Target == target {
			return jt.URL
		}
	}
	return ""
}

// Publication ids. A publication (one published target of a post) has a UUID of its own, the
// publication_id that post detail, the inbox and analytics hand out. It is derived from the post
// id and the target's index (PublicationUUID), so it is never stored in the post record; the
// publications bucket maps it back:
//
//	publications  publication id (16) → post id (16) | target index (2, big-endian)
//
// PutPost adds the entry when a target is first stored as published (in the transaction that
// commits the outcome: no write of its own), DeletePost removes it, and schema 4 indexed the
// publications stored before it.
var bPublications = []byte("publications")

func init() { registerBuckets(bPublications) }

// publicationIDSalt separates publication ids from any other hash of a post id.
const publicationIDSalt = "herald publication v1"

// PublicationUUID returns the publication id of a post's target: a version 8 UUID whose first
// 48 bits are the post id's (its creation time, so publication ids sort with their posts) and
// whose other bits come from SHA-256 of the post id and the target index.
func PublicationUUID(postID string, target int) string {
	return idString(publicationKey(mustID(postID), target))
}

func publicationKey(post []byte, target int) []byte {
	h := sha256.New()
	h.Write([]byte(publicationIDSalt))
	h.Write(post)
	h.Write([]byte{byte(target >> 8), byte(target)})
	sum := h.Sum(nil)
	k := make([]byte, 16)
	copy(k[:6], post[:6])
	copy(k[6:], sum[:10])
	k[6] = k[6]&0x0f | 0x80 // version 8
	k[8] = k[8]&0x3f | 0x80 // RFC 9562 variant
	return k
}

// indexPublications adds the publications entries of a post's published targets that are not
// there yet.
func indexPublications(b kvBucket, post []byte, targets []publicationTarget) error {
	for i, tg := range targets {
		if tg.Status != TargetPublished || tg.PublicationID == "" {
			continue
		}
		k := publicationKey(post, i)
		if b.Get(k) != nil {
			continue
		}
		if err := b.Put(k, join(post, []byte{byte(i >> 8), byte(i)})); err != nil {
			return err
		}
	}
	return nil
}

// publicationTarget is what indexing needs of a target.
type publicationTarget struct {
	Status        string `json:"status"`
	PublicationID string `json:"publication_id"`
}

func targetsOf(p *Post) []publicationTarget {
	out := make([]publicationTarget, len(p.Targets))
	for i, t := range p.Targets {
		out[i] = publicationTarget{Status: t.Status, PublicationID: t.PublicationID}
	}
	return out
}

// indexStoredPublications indexes every published target of the stored posts (schema 4).
func indexStoredPublications(tx kvTx) error {
	b := tx.Bucket(bPublications)
	c := tx.Bucket(bPosts).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var rec struct {
			Targets []publicationTarget `json:"targets"`
		}
		if err := Decode(v, &rec); err != nil {
			return fmt.Errorf("persistence: index publications of post %s: %w", idString(k), err)
		}
		if err := indexPublications(b, k, rec.Targets); err != nil {
			return err
		}
	}
	return nil
}

// PublicationOf resolves a publication_id sent by a client: a publication id (PublicationUUID)
// gives its post and target; a post id, as the inbox handed out before publication ids existed,
// gives the post and target -1 (any of its publications). ErrNotFound when neither names a post
// of the workspace (scope: Scope).
func (t *Tx) PublicationOf(scope, id string) (*Post, int, error) {
	key, err := ID(id)
	if err != nil {
		return nil, 0, ErrNotFound
	}
	target := -1
	if v := t.kv.Bucket(bPublications).Get(key); len(v) == 18 {
		key, target = v[:16], int(v[16])<<8|int(v[17])
	}
	p, err := t.Post(idString(key))
	if err != nil {
		return nil, 0, err
	}
	if p.Scope() != scope || target >= len(p.Targets) {
		return nil, 0, ErrNotFound
	}
	return p, target, nil
}

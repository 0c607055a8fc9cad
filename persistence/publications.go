package persistence

import (
	"bytes"
	"cmp"
	"slices"
	"time"
)

// Publication is one published target of a post: what analytics and the inbox read live from
// the network. It is derived from the post record; nothing of it is stored apart.
type Publication struct {
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

// PublicationFilter selects a user's publications.
type PublicationFilter struct {
	UserID string
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
	user := mustID(f.UserID)
	published, partial := statusCode(PostPublished), statusCode(PostPartial)
	var mask uint16
	for _, p := range f.Platforms {
		mask |= 1 << platformCodes[p]
	}
	wanted := func(p string) bool { return len(f.Platforms) == 0 || slices.Contains(f.Platforms, p) }
	posts := t.tx.Bucket(bPosts)
	var out []Publication
	c := t.tx.Bucket(bPostsUser).Cursor()
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
			out = append(out, Publication{PostID: postID, AccountID: tg.AccountID, Platform: tg.Platform, Target: i,
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

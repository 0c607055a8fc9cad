package live

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cache"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Inbox limits.
const (
	MinInboxLimit     = 1
	MaxInboxLimit     = 24
	DefaultInboxLimit = 10
)

// InboxPage is GET /v1/inbox/comments: the comment threads of up to limit publications, newest
// publication first. A page covers publications, not comments: it may be empty while HasMore is
// true (its publications have no comments yet).
type InboxPage struct {
	Range     string    `json:"range"`
	Since     time.Time `json:"since"`
	Until     time.Time `json:"until"`
	FetchedAt time.Time `json:"fetched_at"`
	Threads   []Thread  `json:"threads"`
	HasMore   bool      `json:"has_more"`
	// NextBefore is the cursor of the next page, empty on the last page (has_more false): the
	// spec types it a string (docs/decisions.md).
	NextBefore  string `json:"next_before"`
	Sampled     bool   `json:"sampled"`
	SampleLimit int    `json:"sample_limit"`
	// Partial: the page stopped early because a publication could not be read in time; the
	// next page starts with it.
	Partial                  bool        `json:"partial"`
	AccountsNeedingReconnect []Reconnect `json:"accounts_needing_reconnect"`
}

// Thread is a comment on a publication and the replies under it.
type Thread struct {
	Comment ThreadComment `json:"comment"`
	Replies []ThreadReply `json:"replies"`
	// Answered: the connected account replied in the thread.
	Answered bool `json:"answered"`
}

// ThreadComment is a top-level comment. PublicationID is the publication's id (the
// publication_id of post detail): keep it with ID to reply, like or hide.
type ThreadComment struct {
	ID            string    `json:"id"`
	PublicationID string    `json:"publication_id"`
	Platform      string    `json:"platform"`
	AccountID     string    `json:"account_id"`
	Author        string    `json:"author"`
	Text          string    `json:"text"`
	CreatedAt     time.Time `json:"created_at"`
	CanReply      bool      `json:"can_reply"`
	// AuthorHandle is Author, and PostSnippet the start of the commented post's text (Snippet),
	// in the element shape the service's own clients read.
	AuthorHandle string `json:"author_handle"`
	PostSnippet  string `json:"post_snippet"`
	postID       string
}

// ThreadReply is a reply under a comment, oldest first.
type ThreadReply struct {
	ID        string    `json:"id"`
	Author    string    `json:"author"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
	// ByAccount: the connected account wrote it. IsOwn says the same, in the element shape the
	// service's own clients read.
	ByAccount bool `json:"by_account"`
	IsOwn     bool `json:"is_own"`
}

// InboxQuery is a validated inbox request.
type InboxQuery struct {
	Window    Window
	AccountID string
	Platform  string // "" for every comments network
	Before    string // cursor, as received
	Limit     int
	Fresh     bool
	// cur is the decoded cursor (set by ParseCursor).
	cur *cursor
}

func (q InboxQuery) key(scope string, gen uint64) string {
	return cache.Key(scope, "inbox;"+strconv.FormatUint(gen, 36)+";"+q.Window.key()+";a="+q.AccountID+";p="+q.Platform+
		";n="+strconv.Itoa(q.Limit)+";b="+q.Before)
}

// cursor is the position after the last publication of a page, and the window it was computed
// in (a named range is fixed at the first page, so that pages do not shift as time passes).
type cursor struct {
	Range     string `json:"r"`
	Since     int64  `json:"s"`
	Until     int64  `json:"u"`
	AccountID string `json:"a,omitempty"`
	Platform  string `json:"p,omitempty"`
	// Position: the last publication passed (zero At: none yet).
	At     int64  `json:"t,omitempty"`
	PostID string `json:"i,omitempty"`
	Target int    `json:"g,omitempty"`
}

// cursorKeyInfo separates the cursor key from every other use of the data directory's secret.
const cursorKeyInfo = "herald inbox cursor v1"

// A cursor is base64url (no padding) of its JSON followed by HMAC-SHA256(key, user id | JSON):
// a cursor changed in any way, or another user's, is refused.
func (s *Service) signCursor(scope string, c any) string {
	payload, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(append(payload, s.cursorMAC(scope, payload)...))
}

// openCursor checks a cursor's signature (signCursor) and decodes its JSON into v, refusing
// unknown fields; false when either fails.
func (s *Service) openCursor(scope, before string, v any) bool {
	raw, err := base64.RawURLEncoding.DecodeString(before)
	if err != nil || len(raw) <= sha256.Size {
		return false
	}
	payload, mac := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if !hmac.Equal(mac, s.cursorMAC(scope, payload)) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	return dec.Decode(v) == nil
}

func (s *Service) cursorMAC(scope string, payload []byte) []byte {
	m := hmac.New(sha256.New, s.cursorKey)
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)
}

// ParseCursor checks the before cursor of q against the user and the query, and fixes q's window
// to the cursor's.
func (s *Service) ParseCursor(scope string, q *InboxQuery) error {
	if q.Before == "" {
		return nil
	}
	bad := apierr.Validation("before: invalid cursor; use next_before of the previous page as it was returned")
	var c cursor
	if !s.openCursor(scope, q.Before, &c) {
		return bad
	}
	if c.Range != q.Window.Range || c.AccountID != q.AccountID || c.Platform != q.Platform {
		return apierr.Validation("before: the cursor belongs to another query (range, account_id and platform must stay the same across pages)")
	}
	if q.Window.Range == "custom" && (c.Since != q.Window.Since.UnixNano() || c.Until != q.Window.Until.UnixNano()) {
		return apierr.Validation("before: the cursor belongs to another query (since and until must stay the same across pages)")
	}
	q.Window.Since, q.Window.Until = time.Unix(0, c.Since).UTC(), time.Unix(0, c.Until).UTC()
	q.cur = &c
	return nil
}

// after reports whether p comes after the cursor's position in newest-first order.
func (c *cursor) after(p persistence.Publication) bool {
	if c == nil || c.At == 0 {
		return true
	}
	at := p.PublishedAt.UnixNano()
	switch {
	case at != c.At:
		return at < c.At
	case p.PostID != c.PostID:
		return p.PostID < c.PostID
	}
	return p.Target > c.Target
}

// Inbox answers an inbox request (q validated, its cursor parsed): the cached body when the
// cache's rules allow, else a fan-out over the page's publications. The body is the JSON of
// InboxPage.
func (s *Service) Inbox(ctx context.Context, scope string, q InboxQuery) ([]byte, error) {
	e, err := s.inboxes.Get(ctx, q.key(scope, s.generation(scope)), q.Fresh, func(ctx context.Context) ([]byte, error) {
		return s.fillInbox(ctx, scope, q)
	})
	return e.Value, err
}

func (s *Service) fillInbox(ctx context.Context, scope string, q InboxQuery) ([]byte, error) {
	w := q.Window
	if q.cur == nil && w.Range != "custom" {
		w, _ = ParseWindow(w.Range, "", "", s.cfg.Now())
	}
	names := []string{q.Platform}
	if q.Platform == "" {
		names = names[:0]
		for _, p := range CommentsPlatforms {
			names = append(names, string(p))
		}
	}
	var all []persistence.Publication
	if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		all, err = tx.Publications(persistence.PublicationFilter{Scope: scope, Platforms: names, AccountID: q.AccountID, Since: w.Since, Until: w.Until})
		return err
	}); err != nil {
		return nil, err
	}
	page := &InboxPage{Range: w.Range, Since: w.Since, Until: w.Until, SampleLimit: s.cfg.SampleLimit, Threads: []Thread{}}
	if len(all) > s.cfg.SampleLimit {
		page.Sampled = true
		all = all[:s.cfg.SampleLimit]
	}
	rest := all
	for len(rest) > 0 && !q.cur.after(rest[0]) {
		rest = rest[1:]
	}
	pubs := rest[:min(q.Limit, len(rest))]
	fctx, cancel := context.WithTimeout(ctx, s.cfg.Deadline)
	outcomes := s.fanOut(fctx, "inbox", scope, account.OpComments, pubs, s.cfg.Calls)
	cancel()

	next := cursor{Range: w.Range, Since: w.Since.UnixNano(), Until: w.Until.UnixNano(), AccountID: q.AccountID, Platform: q.Platform}
	if q.cur != nil {
		next.At, next.PostID, next.Target = q.cur.At, q.cur.PostID, q.cur.Target
	}
	reconnectIDs := map[string]bool{}
	passed := 0
	for i, o := range outcomes {
		p := pubs[i]
		if o.state == notRead {
			// Pages stay contiguous: stop here; the next page starts with this publication.
			page.Partial = true
			break
		}
		passed++
		next.At, next.PostID, next.Target = p.PublishedAt.UnixNano(), p.PostID, p.Target
		switch o.state {
		case reconnect:
			reconnectIDs[p.AccountID] = true
		case read:
			page.Threads = append(page.Threads, threads(p, o.reply.Comments)...)
		}
	}
	if len(page.Threads) > 0 {
		if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
			snippets := map[string]string{}
			for i := range page.Threads {
				c := &page.Threads[i].Comment
				id := c.postID
				if _, ok := snippets[id]; !ok {
					snippets[id] = postSnippet(tx, id)
				}
				c.PostSnippet = snippets[id]
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if passed < len(rest) {
		page.HasMore = true
		c := s.signCursor(scope, next)
		page.NextBefore = c
	}
	if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		page.AccountsNeedingReconnect, err = reconnectList(tx, scope, names, q.AccountID, reconnectIDs, s.cfg.Now())
		return err
	}); err != nil {
		return nil, err
	}
	for _, r := range page.AccountsNeedingReconnect {
		s.metrics.reconnect.WithLabelValues(r.Platform).Inc()
	}
	if page.Partial {
		s.metrics.partial.WithLabelValues("inbox").Inc()
	}
	if page.Sampled {
		s.metrics.sampled.WithLabelValues("inbox").Inc()
	}
	page.FetchedAt = s.cfg.Now().UTC()
	return json.Marshal(page)
}

// threads groups a publication's comments into threads: a top-level comment (on the publication
// itself) and every comment below it, at any depth, as its replies. The account's own top-level
// comments (a thread it started under its own post) are not inbox threads.
func threads(p persistence.Publication, comments []platforms.Comment) []Thread {
	byID := map[string]platforms.Comment{}
	for _, c := range comments {
		byID[c.ID] = c
	}
	top := func(c platforms.Comment) bool { return c.ParentID == "" || c.ParentID == p.NetworkID }
	root := func(c platforms.Comment) string {
		for range len(comments) + 1 {
			if top(c) {
				return c.ID
			}
			parent, ok := byID[c.ParentID]
			if !ok {
				return ""
			}
			c = parent
		}
		return ""
	}
	index := map[string]int{}
	var out []Thread
	for _, c := range comments {
		if !top(c) || c.ByAccount {
			continue
		}
		index[c.ID] = len(out)
		out = append(out, Thread{Comment: ThreadComment{
			ID: c.ID, PublicationID: p.ID, Platform: p.Platform, AccountID: p.AccountID, Author: c.Author,
			Text: c.Text, CreatedAt: c.CreatedAt, CanReply: true, AuthorHandle: c.Author, postID: p.PostID,
		}, Replies: []ThreadReply{}})
	}
	for _, c := range comments {
		if top(c) {
			continue
		}
		i, ok := index[root(c)]
		if !ok {
			continue
		}
		t := &out[i]
		t.Replies = append(t.Replies, ThreadReply{ID: c.ID, Author: c.Author, Text: c.Text, CreatedAt: c.CreatedAt, ByAccount: c.ByAccount, IsOwn: c.ByAccount})
		t.Answered = t.Answered || c.ByAccount
	}
	for i := range out {
		slices.SortStableFunc(out[i].Replies, func(a, b ThreadReply) int { return a.CreatedAt.Compare(b.CreatedAt) })
	}
	slices.SortStableFunc(out, func(a, b Thread) int {
		if c := b.Comment.CreatedAt.Compare(a.Comment.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Comment.ID, b.Comment.ID)
	})
	return out
}

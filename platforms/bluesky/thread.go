package bluesky

// Threads and first comments (networks.md §2.2): a thread's next part, and a first comment, are
// post records whose reply holds strong references (uri and cid) to the thread's root and to the
// post answered. A publication carries its record's CID as Ref; one published before Herald kept
// it has its CID read with com.atproto.repo.getRecord. Replies are found again with
// com.atproto.repo.listRecords, as posts are.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

var (
	_ platforms.Threader       = (*Adapter)(nil)
	_ platforms.FirstCommenter = (*Adapter)(nil)
)

// ref is the strong reference of a publication: its URI and its CID (Ref, else read with
// com.atproto.repo.getRecord). A record the PDS does not have is Permanent and wraps
// platforms.ErrNotFound.
func (a *Adapter) ref(ctx context.Context, c platforms.Credentials, pub platforms.Publication) (strongRef, error) {
	if pub.Ref != "" {
		return strongRef{URI: pub.ID, CID: pub.Ref}, nil
	}
	rest, ok := strings.CutPrefix(pub.ID, "at://")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || parts[1] != postNSID || parts[0] == "" || parts[2] == "" {
		return strongRef{}, notFound(0, "%q is not a Bluesky post", pub.ID)
	}
	q := url.Values{"repo": {parts[0]}, "collection": {parts[1]}, "rkey": {parts[2]}}
	r, err := platforms.Send(ctx, a.hc, platforms.Bluesky, platforms.Call{Method: http.MethodGet, URL: a.xrpc(c, "com.atproto.repo.getRecord") + "?" + q.Encode(), Bearer: c.AccessToken})
	if err != nil {
		return strongRef{}, err
	}
	if !r.OK() {
		e := classify(r, false)
		if e.Code == "RecordNotFound" || r.Status == http.StatusNotFound {
			e.Err = platforms.ErrNotFound
		}
		return strongRef{}, e
	}
	var out struct {
		URI string `json:"uri"`
		CID string `json:"cid"`
	}
	if err := platforms.Decode(platforms.Bluesky, r, &out, false); err != nil {
		return strongRef{}, err
	}
	if out.CID == "" {
		if e := errorBody(r); e != nil {
			return strongRef{}, e
		}
		return strongRef{}, platforms.Garbled(platforms.Bluesky, r, false, fmt.Errorf("no cid in the answer"))
	}
	return strongRef{URI: pub.ID, CID: out.CID}, nil
}

// PublishReply publishes p (text with its facets, up to 4 images or a video, the languages and
// self-labels of its options) as a post record replying to parent in the thread root begins. The
// publication's Ref is the new record's CID, for the part after it. A 5xx or a lost answer is
// Unknown (LookupReply resolves it).
func (a *Adapter) PublishReply(ctx context.Context, c platforms.Credentials, root, parent platforms.Publication, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	if c.UserID == "" {
		return platforms.Result{}, platforms.Errorf(platforms.Bluesky, platforms.Permanent, 0, "the account has no DID; log in again")
	}
	rootRef, err := a.ref(ctx, c, root)
	if err != nil {
		return platforms.Result{}, err
	}
	parentRef := rootRef
	if parent.ID != root.ID {
		if parentRef, err = a.ref(ctx, c, parent); err != nil {
			return platforms.Result{}, err
		}
	}
	o, _ := p.Options.(*platforms.BlueskyOptions)
	uri, cid, r, err := a.createPostWith(ctx, c, p.Text, p.Media, map[string]strongRef{"root": rootRef, "parent": parentRef}, o)
	if err != nil {
		return platforms.Result{}, err
	}
	pub := publication(c, uri)
	pub.Ref = cid
	return platforms.Result{Publication: pub, Rate: rateInfo(r.Header)}, nil
}

// LookupReply lists the repo's posts, newest first, for the reply to parent (reply.parent.uri)
// with exactly p's text, created at or after since; its Ref is the record's CID.
func (a *Adapter) LookupReply(ctx context.Context, c platforms.Credentials, root, parent platforms.Publication, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	return a.findRecord(ctx, c, since, func(r repoPost) bool {
		return r.Reply != nil && r.Reply.Parent.URI == parent.ID && r.Text == p.Text
	})
}

// PublishComment comments on the account's post: its reply to it (PublishReply).
func (a *Adapter) PublishComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string) (platforms.Result, error) {
	return a.PublishReply(ctx, c, on, on, platforms.Post{Text: text})
}

// LookupComment finds the account's reply to its post with this text (LookupReply).
func (a *Adapter) LookupComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string, since time.Time) (platforms.Publication, bool, error) {
	return a.LookupReply(ctx, c, on, on, platforms.Post{Text: text}, since)
}

package bluesky

// Engagement: likes are app.bsky.feed.like records in the account's repo (createRecord, and
// deleteRecord of the record the post's viewer.like names); hidden replies are the hiddenReplies
// list of the thread root's app.bsky.feed.threadgate record (getRecord, then putRecord with the
// list changed and the rest of the gate kept); the account's conversations come from
// chat.bsky.convo.listConvos through the chat proxy.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

var (
	_ platforms.Liker              = (*Adapter)(nil)
	_ platforms.Hider              = (*Adapter)(nil)
	_ platforms.ConversationLister = (*Adapter)(nil)
)

// Engagement limits and collections.
const (
	likeNSID          = "app.bsky.feed.like"
	threadgateNSID    = "app.bsky.feed.threadgate"
	maxHiddenReplies  = 300 // app.bsky.feed.threadgate hiddenReplies maxLength
	conversationPages = 5   // listConvos pages of 100 read by Conversations
)

// comment reads a comment of publicationID with app.bsky.feed.getPosts: its thread root must be
// the publication; anything else is platforms.ErrNotFound.
func (a *Adapter) comment(ctx context.Context, c platforms.Credentials, publicationID, commentID string) (postView, error) {
	if !isPostURI(publicationID) || !isPostURI(commentID) || commentID == publicationID {
		return postView{}, notFound(0, "Bluesky post %s has no comment %s", publicationID, commentID)
	}
	found, err := a.getPosts(ctx, c, []string{commentID})
	if err != nil {
		return postView{}, err
	}
	p, ok := found[commentID]
	if !ok || p.CID == "" || p.Record.Reply == nil || p.Record.Reply.Root.URI != publicationID {
		return postView{}, notFound(0, "Bluesky post %s has no comment %s", publicationID, commentID)
	}
	return p, nil
}

// repoWrite makes a com.atproto.repo write call. Likes and hides are not posts: a failure is
// never Unknown (repeating them is safe).
func (a *Adapter) repoWrite(ctx context.Context, c platforms.Credentials, nsid string, body any, out any) error {
	raw, _ := json.Marshal(body)
	r, err := platforms.Send(ctx, a.hc, platforms.Bluesky, platforms.Call{Method: http.MethodPost, URL: a.xrpc(c, nsid), Body: raw, ContentType: "application/json", Bearer: c.AccessToken})
	if err != nil {
		return err
	}
	if !r.OK() {
		return readError(r, false, false)
	}
	if out == nil {
		return nil
	}
	return platforms.Decode(platforms.Bluesky, r, out, false)
}

// rkeyOf is the record key of an at:// URI in collection of the account's repo ("" when the URI
// is not one).
func rkeyOf(uri, did, collection string) string {
	rkey, ok := strings.CutPrefix(uri, "at://"+did+"/"+collection+"/")
	if !ok || rkey == "" || strings.Contains(rkey, "/") {
		return ""
	}
	return rkey
}

// LikeComment likes a comment with an app.bsky.feed.like record {subject: {uri, cid}, createdAt}
// (com.atproto.repo.createRecord), or unlikes it by deleting the like record that the comment's
// viewer.like names (com.atproto.repo.deleteRecord). The comment is read first
// (app.bsky.feed.getPosts): it must be a reply in publicationID's thread. A comment already
// liked is not liked twice; an unlike of a comment without the account's like is
// platforms.ErrNotLiked, and nothing is sent.
func (a *Adapter) LikeComment(ctx context.Context, c platforms.Credentials, publicationID, commentID string, like bool) error {
	if c.UserID == "" {
		return platforms.Errorf(platforms.Bluesky, platforms.Permanent, 0, "the account has no DID; log in again")
	}
	p, err := a.comment(ctx, c, publicationID, commentID)
	if err != nil {
		return err
	}
	if like {
		if p.Viewer.Like != "" {
			return nil
		}
		record := map[string]any{"$type": likeNSID, "subject": strongRef{URI: p.URI, CID: p.CID}, "createdAt": time.Now().UTC().Format("2006-01-02T15:04:05.000Z")}
		return a.repoWrite(ctx, c, "com.atproto.repo.createRecord", map[string]any{"repo": c.UserID, "collection": likeNSID, "record": record}, nil)
	}
	rkey := rkeyOf(p.Viewer.Like, c.UserID, likeNSID)
	if rkey == "" {
		return &platforms.Error{Platform: platforms.Bluesky, Kind: platforms.Permanent, Message: "the account has not liked Bluesky post " + commentID, Err: platforms.ErrNotLiked}
	}
	return a.repoWrite(ctx, c, "com.atproto.repo.deleteRecord", map[string]any{"repo": c.UserID, "collection": likeNSID, "rkey": rkey}, nil)
}

// HideComment hides a reply, or shows it again, by changing the hiddenReplies of the thread
// root's app.bsky.feed.threadgate (rkey: the root post's). The gate is read first
// (com.atproto.repo.getRecord; none yet is an empty one), its other fields (allow rules) are kept,
// and it is written back with putRecord, swapRecord set to the cid read so that a concurrent
// change is not lost. Only the root's author can gate a thread: the publication is the
// account's post. Bluesky takes at most 300 hidden replies per thread.
func (a *Adapter) HideComment(ctx context.Context, c platforms.Credentials, publicationID, commentID string, hide bool) error {
	if c.UserID == "" {
		return platforms.Errorf(platforms.Bluesky, platforms.Permanent, 0, "the account has no DID; log in again")
	}
	rkey := rkeyOf(publicationID, c.UserID, postNSID)
	if rkey == "" {
		return notFound(0, "Bluesky post %s is not one of the account's posts", publicationID)
	}
	if _, err := a.comment(ctx, c, publicationID, commentID); err != nil {
		return err
	}
	var cur struct {
		CID   string         `json:"cid"`
		Value map[string]any `json:"value"`
	}
	r, err := platforms.Send(ctx, a.hc, platforms.Bluesky, platforms.Call{Method: http.MethodGet, Bearer: c.AccessToken,
		URL: a.xrpc(c, "com.atproto.repo.getRecord") + "?" + url.Values{"repo": {c.UserID}, "collection": {threadgateNSID}, "rkey": {rkey}}.Encode()})
	if err != nil {
		return err
	}
	switch {
	case r.OK():
		if err := platforms.Decode(platforms.Bluesky, r, &cur, false); err != nil {
			return err
		}
	case r.Status == http.StatusBadRequest && classify(r, false).Code == "RecordNotFound":
	default:
		return readError(r, false, false)
	}
	gate := cur.Value
	if gate == nil {
		gate = map[string]any{"$type": threadgateNSID, "post": publicationID, "createdAt": time.Now().UTC().Format("2006-01-02T15:04:05.000Z")}
	}
	var hidden []string
	if list, ok := gate["hiddenReplies"].([]any); ok {
		for _, v := range list {
			if s, ok := v.(string); ok {
				hidden = append(hidden, s)
			}
		}
	}
	has := slices.Contains(hidden, commentID)
	if has == hide {
		return nil // already as asked
	}
	if hide {
		if len(hidden) >= maxHiddenReplies {
			return invalid("the thread already hides %d replies; Bluesky allows %d", len(hidden), maxHiddenReplies)
		}
		hidden = append(hidden, commentID)
	} else {
		hidden = slices.DeleteFunc(hidden, func(s string) bool { return s == commentID })
	}
	gate["hiddenReplies"] = hidden
	body := map[string]any{"repo": c.UserID, "collection": threadgateNSID, "rkey": rkey, "record": gate}
	if cur.CID != "" {
		body["swapRecord"] = cur.CID
	}
	return a.repoWrite(ctx, c, "com.atproto.repo.putRecord", body, nil)
}

// convoView is chat.bsky.convo.defs#convoView.
type convoView struct {
	ID      string `json:"id"`
	Members []struct {
		DID          string `json:"did"`
		Handle       string `json:"handle"`
		ChatDisabled bool   `json:"chatDisabled"`
	} `json:"members"`
	LastMessage *messageView `json:"lastMessage"`
	Status      string       `json:"status"`
}

// Conversations lists the account's conversations with chat.bsky.convo.listConvos (through the
// chat proxy, up to 5 pages of 100), newest message first. A conversation without a message, or
// whose last message was deleted, is left out. The peer is the first member that is not the
// account; CanReply is false when the peer has chat disabled. truncated is true when the chat
// service had more conversations than were read.
func (a *Adapter) Conversations(ctx context.Context, c platforms.Credentials) ([]platforms.ConversationSummary, bool, error) {
	q := url.Values{"limit": {"100"}}
	out := []platforms.ConversationSummary{}
	truncated := false
	for page := 0; page < conversationPages; page++ {
		var res struct {
			Convos []convoView `json:"convos"`
			Cursor string      `json:"cursor"`
		}
		r, err := a.get(ctx, c, "chat.bsky.convo.listConvos", q, ChatProxy, &res)
		if err != nil {
			return nil, false, err
		}
		if res.Convos == nil {
			return nil, false, platforms.Garbled(platforms.Bluesky, r, false, fmt.Errorf("no convos in the answer"))
		}
		for _, cv := range res.Convos {
			if cv.LastMessage == nil || (cv.LastMessage.Type != "" && cv.LastMessage.Type != "chat.bsky.convo.defs#messageView") {
				continue
			}
			cs := platforms.ConversationSummary{ID: cv.ID, Last: cv.LastMessage.message(cv.ID), CanReply: true}
			for _, m := range cv.Members {
				if m.DID != c.UserID && cs.PeerID == "" {
					cs.PeerID, cs.PeerHandle, cs.CanReply = m.DID, m.Handle, !m.ChatDisabled
				}
			}
			out = append(out, cs)
		}
		if res.Cursor == "" {
			break
		}
		if page == conversationPages-1 {
			truncated = true
			break
		}
		q.Set("cursor", res.Cursor)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Last.CreatedAt.After(out[j].Last.CreatedAt) })
	return out, truncated, nil
}

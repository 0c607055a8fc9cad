package bluesky

// Live data (networks.md §2.5): a post's counts from app.bsky.feed.getPosts, its replies from
// app.bsky.feed.getPostThread (both proxied by the PDS to the AppView), replies as post records
// with reply root and parent strong references, and direct messages through the chat service
// (chat.bsky.convo.*, proxied by the PDS with the atproto-proxy header; an app password needs the
// "allow access to direct messages" option for them).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

var (
	_ platforms.Reader    = (*Adapter)(nil)
	_ platforms.Commenter = (*Adapter)(nil)
	_ platforms.Messenger = (*Adapter)(nil)
)

// The services the PDS proxies live reads to.
const (
	AppViewProxy = "did:web:api.bsky.app#bsky_appview"
	ChatProxy    = "did:web:api.bsky.chat#bsky_chat"
)

// Read limits.
const (
	maxGetPosts         = 25 // app.bsky.feed.getPosts takes up to 25 URIs
	threadDepth         = 10 // reply levels Comments reads
	messagePages        = 5  // getMessages pages of 100 read by Conversation
	maxMessageGraphemes = 1000
	maxMessageBytes     = 10000
)

// notFound is the error of an object the account cannot see; it wraps platforms.ErrNotFound.
func notFound(status int, format string, args ...any) *platforms.Error {
	return &platforms.Error{Platform: platforms.Bluesky, Kind: platforms.Permanent, Status: status, Code: "NotFound",
		Message: fmt.Sprintf(format, args...), Err: platforms.ErrNotFound}
}

// readError classifies a failed live call. The AppView's NotFound wraps platforms.ErrNotFound;
// so does the chat service's InvalidRequest "Convo not found" when chat is set (the chat methods
// document no other error for a well-formed request).
func readError(r *platforms.Answer, create, chat bool) *platforms.Error {
	e := classify(r, create)
	switch {
	case e.Code == "NotFound":
		e.Err = platforms.ErrNotFound
	case chat && r.Status == http.StatusBadRequest && e.Code == "InvalidRequest" && strings.Contains(strings.ToLower(e.Message), "convo"):
		e.Err = platforms.ErrNotFound
	}
	return e
}

// get makes a read call through proxy and decodes a 2xx answer into out.
func (a *Adapter) get(ctx context.Context, c platforms.Credentials, nsid string, q url.Values, proxy string, out any) (*platforms.Answer, error) {
	r, err := platforms.Send(ctx, a.hc, platforms.Bluesky, platforms.Call{Method: http.MethodGet, URL: a.xrpc(c, nsid) + "?" + q.Encode(), Bearer: c.AccessToken, Header: proxyHeader(proxy)})
	if err != nil {
		return nil, err
	}
	if !r.OK() {
		return nil, readError(r, false, proxy == ChatProxy)
	}
	if e := errorBody(r); e != nil {
		return nil, e
	}
	return r, platforms.Decode(platforms.Bluesky, r, out, false)
}

type strongRef struct {
	URI string `json:"uri"`
	CID string `json:"cid"`
}

// postView is app.bsky.feed.defs#postView.
type postView struct {
	URI    string `json:"uri"`
	CID    string `json:"cid"`
	Author struct {
		DID    string `json:"did"`
		Handle string `json:"handle"`
	} `json:"author"`
	Record struct {
		Text      string `json:"text"`
		CreatedAt string `json:"createdAt"`
		Reply     *struct {
			Root   strongRef `json:"root"`
			Parent strongRef `json:"parent"`
		} `json:"reply"`
	} `json:"record"`
	LikeCount   *int64 `json:"likeCount"`
	ReplyCount  *int64 `json:"replyCount"`
	RepostCount *int64 `json:"repostCount"`
	QuoteCount  *int64 `json:"quoteCount"`
	IndexedAt   string `json:"indexedAt"`
	// Viewer is the caller's relation to the post: Like is the URI of its like record.
	Viewer struct {
		Like string `json:"like"`
	} `json:"viewer"`
}

// metrics maps Bluesky's counts: likes, replies as comments, reposts plus quotes as shares; there
// are no views.
func (p postView) metrics() platforms.Metrics {
	m := platforms.Metrics{Likes: p.LikeCount, Comments: p.ReplyCount}
	if p.RepostCount != nil || p.QuoteCount != nil {
		var n int64
		for _, v := range []*int64{p.RepostCount, p.QuoteCount} {
			if v != nil {
				n += *v
			}
		}
		m.Shares = &n
	}
	return m
}

// getPosts reads posts by URI (at most 25); posts the AppView does not find are left out.
func (a *Adapter) getPosts(ctx context.Context, c platforms.Credentials, uris []string) (map[string]postView, error) {
	var out struct {
		Posts []postView `json:"posts"`
	}
	r, err := a.get(ctx, c, "app.bsky.feed.getPosts", url.Values{"uris": uris}, AppViewProxy, &out)
	if err != nil {
		return nil, err
	}
	if out.Posts == nil {
		return nil, platforms.Garbled(platforms.Bluesky, r, false, fmt.Errorf("no posts in the answer"))
	}
	found := make(map[string]postView, len(out.Posts))
	for _, p := range out.Posts {
		found[p.URI] = p
	}
	return found, nil
}

func isPostURI(s string) bool {
	return strings.HasPrefix(s, "at://") && strings.Contains(s, "/"+postNSID+"/")
}

// BatchMetrics reads the counts of several posts, 25 per call of app.bsky.feed.getPosts. Posts the
// AppView does not find are left out of the map.
func (a *Adapter) BatchMetrics(ctx context.Context, c platforms.Credentials, uris []string) (map[string]platforms.Metrics, error) {
	out := make(map[string]platforms.Metrics, len(uris))
	var valid []string
	for _, u := range uris {
		if isPostURI(u) {
			valid = append(valid, u)
		}
	}
	for start := 0; start < len(valid); start += maxGetPosts {
		found, err := a.getPosts(ctx, c, valid[start:min(start+maxGetPosts, len(valid))])
		if err != nil {
			return nil, err
		}
		for uri, p := range found {
			out[uri] = p.metrics()
		}
	}
	return out, nil
}

// Metrics reads a post's counts with app.bsky.feed.getPosts: likeCount, replyCount as comments,
// repostCount plus quoteCount as shares. Bluesky has no views, so Views is nil. A post the
// AppView does not find is platforms.ErrNotFound.
func (a *Adapter) Metrics(ctx context.Context, c platforms.Credentials, publicationID string) (platforms.Metrics, error) {
	return platforms.MetricsOf(ctx, c, publicationID, a.BatchMetrics, func() error {
		return notFound(0, "Bluesky has no post %s", publicationID)
	})
}

// threadNode is a node of app.bsky.feed.getPostThread: a threadViewPost, or a notFoundPost or
// blockedPost.
type threadNode struct {
	Type    string        `json:"$type"`
	Post    *postView     `json:"post"`
	Replies []*threadNode `json:"replies"`
}

const threadViewPost = "app.bsky.feed.defs#threadViewPost"

// Comments lists a post's replies at every level (app.bsky.feed.getPostThread with depth 10),
// newest first. A comment's ParentID is the reply it answers, empty when it answers the post. A
// post the AppView does not find is platforms.ErrNotFound.
func (a *Adapter) Comments(ctx context.Context, c platforms.Credentials, publicationID string) ([]platforms.Comment, error) {
	if !isPostURI(publicationID) {
		return nil, notFound(0, "%q is not a Bluesky post", publicationID)
	}
	var out struct {
		Thread *threadNode `json:"thread"`
	}
	r, err := a.get(ctx, c, "app.bsky.feed.getPostThread", url.Values{"uri": {publicationID}, "depth": {fmt.Sprint(threadDepth)}, "parentHeight": {"0"}}, AppViewProxy, &out)
	if err != nil {
		return nil, err
	}
	if out.Thread == nil {
		return nil, platforms.Garbled(platforms.Bluesky, r, false, fmt.Errorf("no thread in the answer"))
	}
	if (out.Thread.Type != threadViewPost && out.Thread.Type != "") || out.Thread.Post == nil {
		return nil, notFound(r.Status, "Bluesky has no visible post %s", publicationID)
	}
	comments := []platforms.Comment{}
	var walk func(n *threadNode)
	walk = func(n *threadNode) {
		for _, child := range n.Replies {
			if child == nil || child.Post == nil || (child.Type != threadViewPost && child.Type != "") {
				continue
			}
			p := child.Post
			cm := platforms.Comment{ID: p.URI, PublicationID: publicationID, Author: p.Author.Handle, Text: p.Record.Text,
				ByAccount: c.UserID != "" && p.Author.DID == c.UserID}
			if cm.Author == "" {
				cm.Author = p.Author.DID
			}
			parent := ""
			if p.Record.Reply != nil {
				parent = p.Record.Reply.Parent.URI
			} else if n.Post != nil {
				parent = n.Post.URI
			}
			if parent != publicationID {
				cm.ParentID = parent
			}
			cm.CreatedAt = parseTime(p.Record.CreatedAt, p.IndexedAt)
			comments = append(comments, cm)
			walk(child)
		}
	}
	walk(out.Thread)
	sort.SliceStable(comments, func(i, j int) bool { return comments[i].CreatedAt.After(comments[j].CreatedAt) })
	return comments, nil
}

// parseTime reads the first of the timestamps that parses.
func parseTime(values ...string) time.Time {
	for _, v := range values {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// Reply answers a comment with a post record whose reply references the thread's root and the
// comment (strong references: uri and cid). Images or a video may be attached, as to a post. The
// comment is first read (app.bsky.feed.getPosts): a comment whose thread root is not
// publicationID is platforms.ErrNotFound and nothing is posted.
func (a *Adapter) Reply(ctx context.Context, c platforms.Credentials, publicationID, commentID, text string, media []platforms.Media) (platforms.Comment, error) {
	if err := a.Validate(platforms.Post{Text: text, Media: media}); err != nil {
		return platforms.Comment{}, err
	}
	if c.UserID == "" {
		return platforms.Comment{}, platforms.Errorf(platforms.Bluesky, platforms.Permanent, 0, "the account has no DID; log in again")
	}
	if !isPostURI(publicationID) || !isPostURI(commentID) || commentID == publicationID {
		return platforms.Comment{}, notFound(0, "Bluesky post %s has no comment %s", publicationID, commentID)
	}
	found, err := a.getPosts(ctx, c, []string{commentID})
	if err != nil {
		return platforms.Comment{}, err
	}
	parent, ok := found[commentID]
	if !ok || parent.CID == "" || parent.Record.Reply == nil || parent.Record.Reply.Root.URI != publicationID {
		return platforms.Comment{}, notFound(0, "Bluesky post %s has no comment %s", publicationID, commentID)
	}
	uri, _, err := a.createPost(ctx, c, text, media, map[string]strongRef{"root": parent.Record.Reply.Root, "parent": {URI: parent.URI, CID: parent.CID}})
	if err != nil {
		return platforms.Comment{}, err
	}
	author := c.Handle
	if author == "" {
		author = c.UserID
	}
	return platforms.Comment{ID: uri, PublicationID: publicationID, ParentID: commentID, Author: author, Text: text,
		CreatedAt: time.Now().UTC(), ByAccount: true}, nil
}

// messageView is chat.bsky.convo.defs#messageView (or #deletedMessageView).
type messageView struct {
	Type   string `json:"$type"`
	ID     string `json:"id"`
	Text   string `json:"text"`
	Sender struct {
		DID string `json:"did"`
	} `json:"sender"`
	SentAt string `json:"sentAt"`
}

func (m messageView) message(conversationID string) platforms.Message {
	return platforms.Message{ID: m.ID, ConversationID: conversationID, From: m.Sender.DID, Text: m.Text, CreatedAt: parseTime(m.SentAt)}
}

// Conversation lists a conversation's messages, newest first (chat.bsky.convo.getMessages through
// the chat proxy). A conversation the account is not a member of is platforms.ErrNotFound.
func (a *Adapter) Conversation(ctx context.Context, c platforms.Credentials, conversationID string) ([]platforms.Message, error) {
	if conversationID == "" {
		return nil, notFound(0, "Bluesky has no conversation %q", conversationID)
	}
	q := url.Values{"convoId": {conversationID}, "limit": {"100"}}
	out := []platforms.Message{}
	for page := 0; page < messagePages; page++ {
		var res struct {
			Messages []messageView `json:"messages"`
			Cursor   string        `json:"cursor"`
		}
		r, err := a.get(ctx, c, "chat.bsky.convo.getMessages", q, ChatProxy, &res)
		if err != nil {
			return nil, err
		}
		if res.Messages == nil {
			return nil, platforms.Garbled(platforms.Bluesky, r, false, fmt.Errorf("no messages in the answer"))
		}
		for _, m := range res.Messages {
			if m.Type != "" && m.Type != "chat.bsky.convo.defs#messageView" {
				continue
			}
			out = append(out, m.message(conversationID))
		}
		if res.Cursor == "" {
			break
		}
		q.Set("cursor", res.Cursor)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// conversationWith finds (or opens) the one-to-one conversation with a peer given by DID or
// handle (chat.bsky.convo.getConvoForMembers).
func (a *Adapter) conversationWith(ctx context.Context, c platforms.Credentials, peer string) (string, error) {
	did := strings.TrimPrefix(peer, "@")
	if !strings.HasPrefix(did, "did:") {
		resolved, err := a.resolveHandle(ctx, c, did)
		if err != nil {
			return "", err
		}
		did = resolved
	}
	var out struct {
		Convo struct {
			ID string `json:"id"`
		} `json:"convo"`
	}
	r, err := a.get(ctx, c, "chat.bsky.convo.getConvoForMembers", url.Values{"members": {did}}, ChatProxy, &out)
	if err != nil {
		return "", err
	}
	if out.Convo.ID == "" {
		return "", platforms.Garbled(platforms.Bluesky, r, false, fmt.Errorf("no convo.id in the answer"))
	}
	return out.Convo.ID, nil
}

// SendMessage sends a text message (chat.bsky.convo.sendMessage through the chat proxy) in a
// conversation, or, without a conversation id, in the one-to-one conversation with peerID (a DID
// or handle). Bluesky messages are text only (at most 1,000 graphemes): media is Invalid. A
// conversation the account is not a member of is platforms.ErrNotFound.
func (a *Adapter) SendMessage(ctx context.Context, c platforms.Credentials, conversationID, peerID, text string, media []platforms.Media) (platforms.Message, error) {
	switch {
	case len(media) > 0:
		return platforms.Message{}, invalid("Bluesky direct messages are text only; remove the attachment")
	case strings.TrimSpace(text) == "":
		return platforms.Message{}, invalid("a message needs text")
	case platforms.GraphemeCount(text) > maxMessageGraphemes:
		return platforms.Message{}, invalid("the message is %d graphemes; Bluesky allows %d", platforms.GraphemeCount(text), maxMessageGraphemes)
	case len(text) > maxMessageBytes:
		return platforms.Message{}, invalid("the message is %d bytes; Bluesky allows %d", len(text), maxMessageBytes)
	case conversationID == "" && peerID == "":
		return platforms.Message{}, invalid("a message needs a conversation id or the peer's DID")
	}
	if conversationID == "" {
		id, err := a.conversationWith(ctx, c, peerID)
		if err != nil {
			return platforms.Message{}, err
		}
		conversationID = id
	}
	msg := map[string]any{"text": text}
	if facets := a.facets(ctx, c, text); len(facets) > 0 {
		msg["facets"] = facets
	}
	raw, _ := json.Marshal(map[string]any{"convoId": conversationID, "message": msg})
	r, err := platforms.Send(ctx, a.hc, platforms.Bluesky, platforms.Call{Method: http.MethodPost, URL: a.xrpc(c, "chat.bsky.convo.sendMessage"), Body: raw, ContentType: "application/json",
		Bearer: c.AccessToken, Header: proxyHeader(ChatProxy), Create: true})
	if err != nil {
		return platforms.Message{}, err
	}
	if !r.OK() {
		return platforms.Message{}, readError(r, true, true)
	}
	var out messageView
	if err := platforms.Decode(platforms.Bluesky, r, &out, true); err != nil {
		return platforms.Message{}, err
	}
	if out.ID == "" {
		if e := errorBody(r); e != nil {
			return platforms.Message{}, e
		}
		return platforms.Message{}, platforms.Garbled(platforms.Bluesky, r, true, fmt.Errorf("no message id in the answer"))
	}
	m := out.message(conversationID)
	if m.From == "" {
		m.From = c.UserID
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now().UTC()
	}
	return m, nil
}

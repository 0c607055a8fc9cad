package sim

// Live data: what the networks let Herald read and answer after publishing (networks.md §10.0.7).
//
// The simulator keeps, per network, counters per publication (views, likes, comments, shares),
// the comments on each publication with their replies, the replies Herald sent, and the direct
// message conversations of each account. Each network serves them through its own read endpoints
// and in its own shapes (x.go, bluesky.go, youtube.go, tiktok.go, pinterest.go) and plugs into the
// shared admin routes below with LiveHooks.
//
// Admin API (errors answer {"error": message}: 400 for bad input or a network without that kind
// of live data, 404 for an unknown post, comment or conversation):
//
//	POST /_sim/comments {"platform","post_id","text","author","parent_id"?}  → {"id"}
//	     a comment by author (a handle) on the post, or a reply to the comment parent_id of that
//	     post; X, Bluesky and YouTube. Each comment adds one to the post's comment counter.
//	GET  /_sim/comments?platform=P&post_id=ID  → {"data":[comment]} the post's comments, oldest first
//	POST /_sim/dms {"platform","account","peer","text"}  → {"conversation_id"}
//	     an incoming message to account (the network user id, as in publication records) from
//	     peer (a handle or a network user id), in their one-to-one conversation; X and Bluesky.
//	POST /_sim/metrics {"platform","post_id","views","likes","comments","shares"}
//	     → {"platform","post_id","views","likes","comments","shares"}: sets the post's counters
//	     (a counter left out keeps its value); X, Bluesky, YouTube, TikTok and Pinterest. A
//	     network serves only the counters it has (Bluesky has no views, YouTube no shares).
//	GET  /_sim/replies?platform=P  → {"data":[{id, platform, account, post_id, in_reply_to, text, media_sha256, created_at}]}
//	     the comment replies Herald sent, oldest first
//	GET  /_sim/dms?platform=P  → {"data":[{id, platform, account, conversation_id, peer, text, media_sha256, created_at}]}
//	     the direct messages Herald sent, oldest first
//	GET  /_sim/likes?platform=P  → {"data":[{platform, account, post_id, record, created_at}]}
//	     the likes in place now (X, Bluesky), oldest first; record is a Bluesky like's at:// URI
//	GET  /_sim/hidden?platform=P  → {"data":[{platform, post_id, comment_id}]}
//	     the comments hidden now: X hidden replies, Bluesky threadgate hiddenReplies, YouTube
//	     comments whose moderation status is rejected

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Counters are a post's live counters.
type Counters struct {
	Views    int64 `json:"views"`
	Likes    int64 `json:"likes"`
	Comments int64 `json:"comments"`
	Shares   int64 `json:"shares"`
}

// Comment is a comment on a post, or a reply to a comment, as the simulator keeps it.
type Comment struct {
	ID       string `json:"id"`
	Platform string `json:"platform"`
	// PostID is the network's id of the publication the thread belongs to.
	PostID string `json:"post_id"`
	// ParentID is the comment this one answers; empty for a comment on the post itself.
	ParentID string `json:"parent_id,omitempty"`
	// Author is the author's handle and AuthorID the author's network user id.
	Author   string `json:"author"`
	AuthorID string `json:"author_id"`
	Text     string `json:"text"`
	// CID is the content id of a Bluesky comment's record (for strong references).
	CID         string    `json:"cid,omitempty"`
	MediaSHA256 []string  `json:"media_sha256"`
	CreatedAt   time.Time `json:"created_at"`
	// ByAccount is true when the post's own account wrote the comment.
	ByAccount bool `json:"by_account"`
	seq       int64
}

// Reply is a comment reply that Herald sent through a network's API.
type Reply struct {
	ID       string `json:"id"`
	Platform string `json:"platform"`
	// Account is the network user id that replied.
	Account string `json:"account"`
	// PostID is the publication whose thread the reply belongs to; InReplyTo the comment answered.
	PostID      string    `json:"post_id"`
	InReplyTo   string    `json:"in_reply_to"`
	Text        string    `json:"text"`
	MediaSHA256 []string  `json:"media_sha256"`
	CreatedAt   time.Time `json:"created_at"`
}

// Message is one direct message of a conversation.
type Message struct {
	ID string `json:"id"`
	// From is the sender's network user id.
	From        string    `json:"from"`
	Text        string    `json:"text"`
	MediaSHA256 []string  `json:"media_sha256"`
	CreatedAt   time.Time `json:"created_at"`
}

// Conversation is a one-to-one direct message conversation between an account and a peer.
type Conversation struct {
	ID       string `json:"id"`
	Platform string `json:"platform"`
	// Account and Peer are network user ids; PeerHandle is the peer's handle when known.
	Account    string    `json:"account"`
	Peer       string    `json:"peer"`
	PeerHandle string    `json:"peer_handle,omitempty"`
	Messages   []Message `json:"messages"`
}

// Has reports whether user takes part in the conversation.
func (c Conversation) Has(user string) bool {
	return user != "" && (user == c.Account || user == c.Peer)
}

// Other is the participant of the conversation who is not user.
func (c Conversation) Other(user string) string {
	if user == c.Account {
		return c.Peer
	}
	return c.Account
}

// DM is a direct message that Herald sent through a network's API.
type DM struct {
	ID             string    `json:"id"`
	Platform       string    `json:"platform"`
	Account        string    `json:"account"`
	ConversationID string    `json:"conversation_id"`
	Peer           string    `json:"peer"`
	Text           string    `json:"text"`
	MediaSHA256    []string  `json:"media_sha256"`
	CreatedAt      time.Time `json:"created_at"`
}

// LiveHooks connect a network to the simulator's live data. A network sets the hooks of what it
// serves in its register function; a nil hook means the network has no such live data.
type LiveHooks struct {
	// Metrics is true when the network reports a publication's counters.
	Metrics bool
	// NewComment gives a comment added through the admin API its network id and author id (c has
	// PostID, ParentID, Author, Text and CreatedAt set) and stores what the network's endpoints
	// need to serve it. parent is the comment answered, nil for a comment on the post.
	NewComment func(c *Comment, post Record, parent *Comment) error
	// PeerID is the network user id of a direct message peer named by handle or id.
	PeerID func(peer string) string
	// NewConversation returns the id of a new conversation between two network users.
	NewConversation func(account, peer string) string
	// NewMessageID returns the id of a new direct message.
	NewMessageID func() string
}

// Errors of the live data helpers.
var (
	// ErrUnknownPost means the network has no post with that id.
	ErrUnknownPost = errors.New("sim: no such post")
	// ErrUnknownComment means the post has no comment with that id.
	ErrUnknownComment = errors.New("sim: no such comment")
	// ErrNotLive means the network has no live data of that kind in the simulator.
	ErrNotLive = errors.New("sim: the network has no such live data")
)

type liveKey struct {
	platform platforms.Platform
	id       string
}

type convoPair struct {
	platform      platforms.Platform
	account, peer string
}

// liveState is the live data of every network, under its own lock.
type liveState struct {
	mu       sync.Mutex
	seq      int64
	counters map[liveKey]*Counters
	comments map[liveKey][]*Comment // by post
	byID     map[liveKey]*Comment
	replies  []Reply
	convos   map[liveKey]*Conversation
	convoFor map[convoPair]string
	dms      []DM
	likes    []Like
	hidden   map[liveKey]bool // comment ids
}

// Like is a like of a post or comment by an account, in place now.
type Like struct {
	Platform string `json:"platform"`
	// Account is the network user id that liked PostID (a post's or a comment's id).
	Account string `json:"account"`
	PostID  string `json:"post_id"`
	// Record is the at:// URI of a Bluesky like record ("" elsewhere).
	Record    string    `json:"record,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Hidden is a comment hidden by the author of the post it answers.
type Hidden struct {
	Platform  string `json:"platform"`
	PostID    string `json:"post_id"`
	CommentID string `json:"comment_id"`
}

func newLiveState() *liveState {
	l := &liveState{}
	l.reset()
	return l
}

func (l *liveState) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counters = map[liveKey]*Counters{}
	l.comments = map[liveKey][]*Comment{}
	l.byID = map[liveKey]*Comment{}
	l.replies = nil
	l.convos = map[liveKey]*Conversation{}
	l.convoFor = map[convoPair]string{}
	l.dms = nil
	l.likes = nil
	l.hidden = map[liveKey]bool{}
}

// SetLike makes account like (on) or stop liking id (a post or a comment); record is the like's
// record URI on Bluesky. It reports whether anything changed and, when unliking, the record of
// the like removed. A like counts on the liked object's counters.
func (n *Network) SetLike(account, id, record string, on bool) (changed bool, removed Like) {
	l := n.Sim.live
	l.mu.Lock()
	defer l.mu.Unlock()
	k := liveKey{n.Platform, id}
	i := slices.IndexFunc(l.likes, func(lk Like) bool {
		return lk.Platform == string(n.Platform) && lk.Account == account && lk.PostID == id
	})
	if on == (i >= 0) {
		return false, Like{}
	}
	if l.counters[k] == nil {
		l.counters[k] = &Counters{}
	}
	if on {
		l.likes = append(l.likes, Like{Platform: string(n.Platform), Account: account, PostID: id, Record: record, CreatedAt: n.Sim.Now().UTC()})
		l.counters[k].Likes++
		return true, Like{}
	}
	removed = l.likes[i]
	l.likes = slices.Delete(l.likes, i, i+1)
	l.counters[k].Likes = max(0, l.counters[k].Likes-1)
	return true, removed
}

// LikeOf returns account's like of id, if any.
func (n *Network) LikeOf(account, id string) (Like, bool) {
	l := n.Sim.live
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lk := range l.likes {
		if lk.Platform == string(n.Platform) && lk.Account == account && lk.PostID == id {
			return lk, true
		}
	}
	return Like{}, false
}

// Likers lists the accounts that like id, oldest like first.
func (n *Network) Likers(id string) []string {
	l := n.Sim.live
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []string{}
	for _, lk := range l.likes {
		if lk.Platform == string(n.Platform) && lk.PostID == id {
			out = append(out, lk.Account)
		}
	}
	return out
}

// SetHidden hides or shows again a comment.
func (n *Network) SetHidden(commentID string, hidden bool) {
	l := n.Sim.live
	l.mu.Lock()
	defer l.mu.Unlock()
	if hidden {
		l.hidden[liveKey{n.Platform, commentID}] = true
	} else {
		delete(l.hidden, liveKey{n.Platform, commentID})
	}
}

// IsHidden reports whether a comment is hidden.
func (n *Network) IsHidden(commentID string) bool {
	l := n.Sim.live
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hidden[liveKey{n.Platform, commentID}]
}

func copyComment(c *Comment) Comment {
	out := *c
	out.MediaSHA256 = append([]string{}, c.MediaSHA256...)
	return out
}

func copyConversation(c *Conversation) Conversation {
	out := *c
	out.Messages = make([]Message, len(c.Messages))
	for i, m := range c.Messages {
		m.MediaSHA256 = append([]string{}, m.MediaSHA256...)
		out.Messages[i] = m
	}
	return out
}

// Post returns the publication with this network id.
func (n *Network) Post(id string) (Record, bool) {
	s := n.Sim
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.records) - 1; i >= 0; i-- {
		if r := s.records[i]; r.ID == id && r.Platform == string(n.Platform) {
			return r, true
		}
	}
	return Record{}, false
}

// Counters returns a post's counters (zero when never set).
func (n *Network) Counters(postID string) Counters {
	l := n.Sim.live
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.counters[liveKey{n.Platform, postID}]; c != nil {
		return *c
	}
	return Counters{}
}

// Comments returns a post's comments and replies, oldest first.
func (n *Network) Comments(postID string) []Comment {
	l := n.Sim.live
	l.mu.Lock()
	defer l.mu.Unlock()
	list := l.comments[liveKey{n.Platform, postID}]
	out := make([]Comment, 0, len(list))
	for _, c := range list {
		out = append(out, copyComment(c))
	}
	return out
}

// Comment returns a comment by its network id.
func (n *Network) Comment(id string) (Comment, bool) {
	l := n.Sim.live
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.byID[liveKey{n.Platform, id}]
	if c == nil {
		return Comment{}, false
	}
	return copyComment(c), true
}

// addComment stores a comment and counts it on its post.
func (l *liveState) addComment(p platforms.Platform, c Comment) Comment {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	c.seq = l.seq
	if c.MediaSHA256 == nil {
		c.MediaSHA256 = []string{}
	}
	stored := c
	k := liveKey{p, c.PostID}
	l.comments[k] = append(l.comments[k], &stored)
	l.byID[liveKey{p, c.ID}] = &stored
	if l.counters[k] == nil {
		l.counters[k] = &Counters{}
	}
	l.counters[k].Comments++
	return copyComment(&stored)
}

// RecordReply stores a reply that account sent through the network's API: c is the reply as a
// comment of the thread (ID, PostID, ParentID, Author, AuthorID, Text set by the network). It
// is listed with the post's comments and by Sim.Replies.
func (n *Network) RecordReply(c Comment, mediaSHA []string) (Comment, Reply) {
	if mediaSHA == nil {
		mediaSHA = []string{}
	}
	c.Platform = string(n.Platform)
	c.MediaSHA256 = mediaSHA
	if c.CreatedAt.IsZero() {
		c.CreatedAt = n.Sim.Now().UTC()
	}
	if post, ok := n.Post(c.PostID); ok {
		c.ByAccount = post.Account == c.AuthorID
	}
	inReplyTo := c.ParentID
	if inReplyTo == "" {
		inReplyTo = c.PostID
	}
	stored := n.Sim.live.addComment(n.Platform, c)
	r := Reply{ID: c.ID, Platform: string(n.Platform), Account: c.AuthorID, PostID: c.PostID, InReplyTo: inReplyTo,
		Text: c.Text, MediaSHA256: append([]string{}, mediaSHA...), CreatedAt: c.CreatedAt}
	l := n.Sim.live
	l.mu.Lock()
	l.replies = append(l.replies, r)
	l.mu.Unlock()
	return stored, r
}

// Conversation returns a conversation by id.
func (n *Network) Conversation(id string) (Conversation, bool) {
	l := n.Sim.live
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.convos[liveKey{n.Platform, id}]
	if c == nil {
		return Conversation{}, false
	}
	return copyConversation(c), true
}

// ConversationWith returns the one-to-one conversation of two network users, creating it when
// create is set.
func (n *Network) ConversationWith(account, peer, peerHandle string, create bool) (Conversation, bool) {
	if account == "" || peer == "" || account == peer {
		return Conversation{}, false
	}
	l := n.Sim.live
	a, b := account, peer
	if b < a {
		a, b = b, a
	}
	pair := convoPair{n.Platform, a, b}
	l.mu.Lock()
	id, ok := l.convoFor[pair]
	l.mu.Unlock()
	if !ok {
		if !create || n.Live.NewConversation == nil {
			return Conversation{}, false
		}
		newID := n.Live.NewConversation(account, peer)
		l.mu.Lock()
		if id, ok = l.convoFor[pair]; !ok {
			id = newID
			l.convoFor[pair] = id
			l.convos[liveKey{n.Platform, id}] = &Conversation{ID: id, Platform: string(n.Platform), Account: account, Peer: peer, PeerHandle: peerHandle, Messages: []Message{}}
		}
		l.mu.Unlock()
	}
	return n.Conversation(id)
}

// AddMessage appends a message from sender to a conversation. When sentByAPI is set the message
// is one Herald sent, recorded for Sim.DMs.
func (n *Network) AddMessage(conversationID, sender, text string, mediaSHA []string, sentByAPI bool) (Message, bool) {
	if mediaSHA == nil {
		mediaSHA = []string{}
	}
	id := RandomID(8)
	if n.Live.NewMessageID != nil {
		id = n.Live.NewMessageID()
	}
	m := Message{ID: id, From: sender, Text: text, MediaSHA256: mediaSHA, CreatedAt: n.Sim.Now().UTC()}
	l := n.Sim.live
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.convos[liveKey{n.Platform, conversationID}]
	if c == nil || !c.Has(sender) {
		return Message{}, false
	}
	c.Messages = append(c.Messages, m)
	if sentByAPI {
		l.dms = append(l.dms, DM{ID: m.ID, Platform: string(n.Platform), Account: sender, ConversationID: c.ID, Peer: c.Other(sender),
			Text: text, MediaSHA256: append([]string{}, mediaSHA...), CreatedAt: m.CreatedAt})
	}
	m.MediaSHA256 = append([]string{}, mediaSHA...)
	return m, true
}

func (s *Sim) liveNetwork(p platforms.Platform) (*Network, error) {
	if !p.Valid() {
		return nil, fmt.Errorf("sim: unknown platform %q", p)
	}
	n := s.networks[p]
	if n == nil {
		return nil, fmt.Errorf("sim: network %q is not simulated: %w", p, ErrNotLive)
	}
	return n, nil
}

// AddComment adds a comment by author (a handle) on a post and returns the comment's network id.
func (s *Sim) AddComment(p platforms.Platform, postID, text, author string) (string, error) {
	return s.AddCommentReply(p, postID, "", text, author)
}

// AddCommentReply adds a reply by author to the comment parentID of a post (a comment on the post
// itself when parentID is empty) and returns its network id.
func (s *Sim) AddCommentReply(p platforms.Platform, postID, parentID, text, author string) (string, error) {
	n, err := s.liveNetwork(p)
	if err != nil {
		return "", err
	}
	if n.Live.NewComment == nil {
		return "", fmt.Errorf("sim: %s has no live comments: %w", p, ErrNotLive)
	}
	post, ok := n.Post(postID)
	if !ok {
		return "", fmt.Errorf("sim: %s post %q: %w", p, postID, ErrUnknownPost)
	}
	var parent *Comment
	if parentID != "" {
		pc, ok := n.Comment(parentID)
		if !ok || pc.PostID != postID {
			return "", fmt.Errorf("sim: %s comment %q of post %q: %w", p, parentID, postID, ErrUnknownComment)
		}
		parent = &pc
	}
	if author == "" {
		author = "sim-commenter"
	}
	c := Comment{Platform: string(p), PostID: postID, ParentID: parentID, Author: author, Text: text, CreatedAt: s.Now().UTC()}
	if err := n.Live.NewComment(&c, post, parent); err != nil {
		return "", err
	}
	c.ByAccount = c.AuthorID == post.Account
	return s.live.addComment(p, c).ID, nil
}

// AddDM adds an incoming direct message to account (its network user id) from peer (a handle or
// a network user id) and returns the id of their conversation.
func (s *Sim) AddDM(p platforms.Platform, account, peer, text string) (string, error) {
	n, err := s.liveNetwork(p)
	if err != nil {
		return "", err
	}
	if n.Live.PeerID == nil || n.Live.NewConversation == nil {
		return "", fmt.Errorf("sim: %s has no live direct messages: %w", p, ErrNotLive)
	}
	if account == "" || peer == "" {
		return "", errors.New("sim: account and peer are required")
	}
	peerID := n.Live.PeerID(peer)
	handle := ""
	if peerID != peer {
		handle = peer
	}
	c, ok := n.ConversationWith(account, peerID, handle, true)
	if !ok {
		return "", errors.New("sim: a conversation needs two different users")
	}
	if _, ok := n.AddMessage(c.ID, peerID, text, nil, false); !ok {
		return "", errors.New("sim: the message could not be added")
	}
	return c.ID, nil
}

// SetMetrics sets a post's counters.
func (s *Sim) SetMetrics(p platforms.Platform, postID string, c Counters) error {
	return s.updateMetrics(p, postID, func(cur *Counters) { *cur = c })
}

func (s *Sim) updateMetrics(p platforms.Platform, postID string, fn func(*Counters)) error {
	n, err := s.liveNetwork(p)
	if err != nil {
		return err
	}
	if !n.Live.Metrics {
		return fmt.Errorf("sim: %s has no live metrics: %w", p, ErrNotLive)
	}
	if _, ok := n.Post(postID); !ok {
		return fmt.Errorf("sim: %s post %q: %w", p, postID, ErrUnknownPost)
	}
	l := s.live
	l.mu.Lock()
	defer l.mu.Unlock()
	k := liveKey{p, postID}
	if l.counters[k] == nil {
		l.counters[k] = &Counters{}
	}
	fn(l.counters[k])
	return nil
}

// Metrics returns a post's counters.
func (s *Sim) Metrics(p platforms.Platform, postID string) Counters {
	l := s.live
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.counters[liveKey{p, postID}]; c != nil {
		return *c
	}
	return Counters{}
}

// CommentsOf lists a post's comments, oldest first.
func (s *Sim) CommentsOf(p platforms.Platform, postID string) []Comment {
	n := s.networks[p]
	if n == nil {
		return []Comment{}
	}
	return n.Comments(postID)
}

// Replies lists the comment replies sent through the networks' APIs on p ("" for every network),
// oldest first.
func (s *Sim) Replies(p platforms.Platform) []Reply {
	l := s.live
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Reply, 0, len(l.replies))
	for _, r := range l.replies {
		if p == "" || r.Platform == string(p) {
			r.MediaSHA256 = append([]string{}, r.MediaSHA256...)
			out = append(out, r)
		}
	}
	return out
}

// DMs lists the direct messages sent through the networks' APIs on p ("" for every network),
// oldest first.
func (s *Sim) DMs(p platforms.Platform) []DM {
	l := s.live
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]DM, 0, len(l.dms))
	for _, d := range l.dms {
		if p == "" || d.Platform == string(p) {
			d.MediaSHA256 = append([]string{}, d.MediaSHA256...)
			out = append(out, d)
		}
	}
	return out
}

// Likes lists the likes in place on p ("" for every network), oldest first.
func (s *Sim) Likes(p platforms.Platform) []Like {
	l := s.live
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []Like{}
	for _, lk := range l.likes {
		if p == "" || lk.Platform == string(p) {
			out = append(out, lk)
		}
	}
	return out
}

// HiddenComments lists the comments hidden on p ("" for every network), in comment id order.
func (s *Sim) HiddenComments(p platforms.Platform) []Hidden {
	l := s.live
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []Hidden{}
	for k := range l.hidden {
		if p == "" || k.platform == p {
			h := Hidden{Platform: string(k.platform), CommentID: k.id}
			if c := l.byID[k]; c != nil {
				h.PostID = c.PostID
			}
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CommentID < out[j].CommentID })
	return out
}

// Conversations lists the conversations of account on p, in no particular order.
func (s *Sim) Conversations(p platforms.Platform, account string) []Conversation {
	l := s.live
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []Conversation{}
	for k, c := range l.convos {
		if k.platform == p && c.Has(account) {
			out = append(out, copyConversation(c))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// liveError writes an admin error: 404 for unknown posts and comments, else 400.
func liveError(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	if errors.Is(err, ErrUnknownPost) || errors.Is(err, ErrUnknownComment) {
		status = http.StatusNotFound
	}
	WriteJSON(w, status, map[string]string{"error": err.Error()})
}

func decodeAdmin(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid JSON: " + err.Error()})
		return false
	}
	return true
}

func (s *Sim) liveRoutes() {
	s.mux.HandleFunc("POST /_sim/comments", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Platform string `json:"platform"`
			PostID   string `json:"post_id"`
			Text     string `json:"text"`
			Author   string `json:"author"`
			ParentID string `json:"parent_id"`
		}
		if !decodeAdmin(w, r, &req) {
			return
		}
		if req.PostID == "" || strings.TrimSpace(req.Text) == "" {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": `want {"platform","post_id","text","author"}`})
			return
		}
		id, err := s.AddCommentReply(platforms.Platform(req.Platform), req.PostID, req.ParentID, req.Text, req.Author)
		if err != nil {
			liveError(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, map[string]string{"id": id})
	})
	s.mux.HandleFunc("GET /_sim/comments", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		WriteJSON(w, http.StatusOK, map[string]any{"data": s.CommentsOf(platforms.Platform(q.Get("platform")), q.Get("post_id"))})
	})
	s.mux.HandleFunc("POST /_sim/dms", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Platform string `json:"platform"`
			Account  string `json:"account"`
			Peer     string `json:"peer"`
			Text     string `json:"text"`
		}
		if !decodeAdmin(w, r, &req) {
			return
		}
		if req.Account == "" || req.Peer == "" || strings.TrimSpace(req.Text) == "" {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": `want {"platform","account","peer","text"}`})
			return
		}
		id, err := s.AddDM(platforms.Platform(req.Platform), req.Account, req.Peer, req.Text)
		if err != nil {
			liveError(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, map[string]string{"conversation_id": id})
	})
	s.mux.HandleFunc("GET /_sim/dms", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"data": s.DMs(platforms.Platform(r.URL.Query().Get("platform")))})
	})
	s.mux.HandleFunc("GET /_sim/likes", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"data": s.Likes(platforms.Platform(r.URL.Query().Get("platform")))})
	})
	s.mux.HandleFunc("GET /_sim/hidden", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"data": s.HiddenComments(platforms.Platform(r.URL.Query().Get("platform")))})
	})
	s.mux.HandleFunc("GET /_sim/replies", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"data": s.Replies(platforms.Platform(r.URL.Query().Get("platform")))})
	})
	s.mux.HandleFunc("POST /_sim/metrics", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Platform string `json:"platform"`
			PostID   string `json:"post_id"`
			Views    *int64 `json:"views"`
			Likes    *int64 `json:"likes"`
			Comments *int64 `json:"comments"`
			Shares   *int64 `json:"shares"`
		}
		if !decodeAdmin(w, r, &req) {
			return
		}
		if req.PostID == "" {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": `want {"platform","post_id","views","likes","comments","shares"}`})
			return
		}
		for _, v := range []*int64{req.Views, req.Likes, req.Comments, req.Shares} {
			if v != nil && *v < 0 {
				WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "counters must not be negative"})
				return
			}
		}
		p := platforms.Platform(req.Platform)
		err := s.updateMetrics(p, req.PostID, func(c *Counters) {
			for _, f := range []struct {
				v   *int64
				dst *int64
			}{{req.Views, &c.Views}, {req.Likes, &c.Likes}, {req.Comments, &c.Comments}, {req.Shares, &c.Shares}} {
				if f.v != nil {
					*f.dst = *f.v
				}
			}
		})
		if err != nil {
			liveError(w, err)
			return
		}
		c := s.Metrics(p, req.PostID)
		WriteJSON(w, http.StatusOK, map[string]any{"platform": req.Platform, "post_id": req.PostID,
			"views": c.Views, "likes": c.Likes, "comments": c.Comments, "shares": c.Shares})
	})
}

package live

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cache"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// DMPage is GET /v1/inbox/dms: the conversations of the user's accounts on the direct message
// networks, newest message first, limit per page.
type DMPage struct {
	Conversations []DMConversation `json:"conversations"`
	HasMore       bool             `json:"has_more"`
	// NextBefore is the cursor of the next page, empty on the last page (docs/decisions.md).
	NextBefore string `json:"next_before"`
	// Sampled: a network had more conversations than one listing reads (X: 500 message events
	// of the last 30 days; Bluesky: 500 conversations); only the newest are paged.
	Sampled bool `json:"sampled"`
	// Partial: an account's conversations could not be read (budget, deadline, network); they
	// are missing from the page.
	Partial                  bool        `json:"partial"`
	FetchedAt                time.Time   `json:"fetched_at"`
	AccountsNeedingReconnect []Reconnect `json:"accounts_needing_reconnect"`
}

// DMConversation is one conversation of one of the user's accounts.
type DMConversation struct {
	ID          string    `json:"id"`
	AccountID   string    `json:"account_id"`
	Platform    string    `json:"platform"`
	Peer        DMPeer    `json:"peer"`
	LastMessage DMMessage `json:"last_message"`
	CanReply    bool      `json:"can_reply"`
	// ConversationID is ID, Snippet the start of the last message's text and PeerHandle the
	// peer's username, in the element shape the service's own clients read (aliases).
	ConversationID string  `json:"conversation_id"`
	Snippet        string  `json:"snippet"`
	PeerHandle     *string `json:"peer_handle"`
}

// aliases sets the fields that repeat others under the service clients' names.
func (c *DMConversation) aliases() {
	c.ConversationID, c.Snippet, c.PeerHandle = c.ID, Snippet(c.LastMessage.Text), c.Peer.Username
}

// DMPeer is the other member of a conversation. Username is null when the network did not name
// it (Bluesky's getMessages names members by DID only).
type DMPeer struct {
	ID       string  `json:"id"`
	Username *string `json:"username"`
}

// DMMessage is one direct message. Text is the network's text as it is: data, never markup.
type DMMessage struct {
	ID        string    `json:"id"`
	Text      string    `json:"text"`
	FromMe    bool      `json:"from_me"`
	CreatedAt time.Time `json:"created_at"`
}

// DMThread is GET /v1/inbox/dms/:conversationId: the conversation and its messages, newest first.
type DMThread struct {
	Conversation DMConversation `json:"conversation"`
	Messages     []DMMessage    `json:"messages"`
	FetchedAt    time.Time      `json:"fetched_at"`
}

// DMQuery is a validated GET /v1/inbox/dms.
type DMQuery struct {
	AccountID string
	Platform  string
	Before    string
	Limit     int
	Fresh     bool
	cur       *dmCursor
}

func (q DMQuery) key(scope string, gen uint64) string {
	return cache.Key(scope, "dms;"+strconv.FormatUint(gen, 36)+";a="+q.AccountID+";p="+q.Platform+";n="+strconv.Itoa(q.Limit)+";b="+q.Before)
}

// dmCursor is the position after the last conversation of a page: newest message first, then
// account, then conversation id.
type dmCursor struct {
	Kind      string `json:"k"`
	AccountID string `json:"a,omitempty"`
	Platform  string `json:"p,omitempty"`
	At        int64  `json:"t"`
	Account   string `json:"c"`
	ID        string `json:"i"`
}

const dmCursorKind = "dms"

func (c *dmCursor) after(d DMConversation) bool {
	if c == nil {
		return true
	}
	at := d.LastMessage.CreatedAt.UnixNano()
	switch {
	case at != c.At:
		return at < c.At
	case d.AccountID != c.Account:
		return d.AccountID > c.Account
	}
	return d.ID > c.ID
}

// ParseDMCursor checks the before cursor of q against the user and the query. A DM cursor is
// signed like the comments inbox's (and cannot stand for one).
func (s *Service) ParseDMCursor(scope string, q *DMQuery) error {
	if q.Before == "" {
		return nil
	}
	bad := apierr.Validation("before: invalid cursor; use next_before of the previous page as it was returned")
	var c dmCursor
	if !s.openCursor(scope, q.Before, &c) || c.Kind != dmCursorKind {
		return bad
	}
	if c.AccountID != q.AccountID || c.Platform != q.Platform {
		return apierr.Validation("before: the cursor belongs to another query (account_id and platform must stay the same across pages)")
	}
	q.cur = &c
	return nil
}

func (s *Service) signDMCursor(scope string, c dmCursor) string {
	c.Kind = dmCursorKind
	return s.signCursor(scope, c)
}

// DMs answers GET /v1/inbox/dms (q validated, its cursor parsed): the cached body when the cache's
// rules allow (as the comments inbox: the 90-second floor, fresh=true), else one listing call per
// account, in parallel, within the request's live budget.
func (s *Service) DMs(ctx context.Context, scope string, q DMQuery) ([]byte, error) {
	e, err := s.inboxes.Get(ctx, q.key(scope, s.generation(scope)), q.Fresh, func(ctx context.Context) ([]byte, error) {
		return s.fillDMs(ctx, scope, q)
	})
	return e.Value, err
}

func (s *Service) fillDMs(ctx context.Context, scope string, q DMQuery) ([]byte, error) {
	var accts []*persistence.Account
	if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		all, err := tx.AccountsIn(scope)
		for _, a := range all {
			if slices.Contains(MessagePlatforms, platforms.Platform(a.Platform)) &&
				(q.AccountID == "" || a.ID == q.AccountID) && (q.Platform == "" || a.Platform == q.Platform) {
				accts = append(accts, a)
			}
		}
		return err
	}); err != nil {
		return nil, err
	}
	fctx, cancel := context.WithTimeout(ctx, s.cfg.Deadline)
	defer cancel()
	deadline, _ := fctx.Deadline()
	outcomes := make([]outcome, len(accts))
	var wg sync.WaitGroup
	for i, a := range accts {
		if i >= s.cfg.Calls {
			outcomes[i] = outcome{reason: "request_budget"}
			continue
		}
		wg.Go(func() {
			reply, err := actors.Ask[*account.ReadReply](fctx, s.cfg.Accounts.To(a.ID), &account.Read{
				Op: account.OpConversations, Scope: scope, Deadline: deadline,
			})
			outcomes[i] = classify(reply, err)
		})
	}
	wg.Wait()
	page := &DMPage{Conversations: []DMConversation{}}
	reconnectIDs := map[string]bool{}
	var all []DMConversation
	for i, o := range outcomes {
		a := accts[i]
		switch o.state {
		case notRead:
			page.Partial = true
			s.metrics.unread.WithLabelValues(a.Platform, o.reason).Inc()
		case reconnect:
			reconnectIDs[a.ID] = true
		case read:
			page.Sampled = page.Sampled || o.reply.Truncated
			for _, c := range o.reply.Conversations {
				all = append(all, conversationOf(a, c))
			}
		}
	}
	slices.SortStableFunc(all, func(x, y DMConversation) int {
		if c := y.LastMessage.CreatedAt.Compare(x.LastMessage.CreatedAt); c != 0 {
			return c
		}
		if c := cmp.Compare(x.AccountID, y.AccountID); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
	rest := all
	for len(rest) > 0 && !q.cur.after(rest[0]) {
		rest = rest[1:]
	}
	page.Conversations = append(page.Conversations, rest[:min(q.Limit, len(rest))]...)
	if len(rest) > q.Limit {
		last := page.Conversations[len(page.Conversations)-1]
		c := s.signDMCursor(scope, dmCursor{AccountID: q.AccountID, Platform: q.Platform, At: last.LastMessage.CreatedAt.UnixNano(), Account: last.AccountID, ID: last.ID})
		page.HasMore, page.NextBefore = true, c
	}
	networks := []string{q.Platform}
	if q.Platform == "" {
		networks = networks[:0]
		for _, p := range MessagePlatforms {
			networks = append(networks, string(p))
		}
	}
	if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		page.AccountsNeedingReconnect, err = reconnectList(tx, scope, networks, q.AccountID, reconnectIDs, s.cfg.Now())
		return err
	}); err != nil {
		return nil, err
	}
	page.FetchedAt = s.cfg.Now().UTC()
	return json.Marshal(page)
}

// conversationOf maps an adapter's conversation to the API's.
func conversationOf(a *persistence.Account, c platforms.ConversationSummary) DMConversation {
	out := DMConversation{ID: c.ID, AccountID: a.ID, Platform: a.Platform, Peer: DMPeer{ID: c.PeerID}, CanReply: c.CanReply,
		LastMessage: messageOf(a, c.Last)}
	if c.PeerHandle != "" {
		h := c.PeerHandle
		out.Peer.Username = &h
	}
	out.aliases()
	return out
}

func messageOf(a *persistence.Account, m platforms.Message) DMMessage {
	return DMMessage{ID: m.ID, Text: m.Text, FromMe: a.NetworkUserID != "" && m.From == a.NetworkUserID, CreatedAt: m.CreatedAt.UTC()}
}

// DMThreadQuery is a validated GET /v1/inbox/dms/:conversationId.
type DMThreadQuery struct {
	ConversationID string
	AccountID      string
	// PeerID names the peer when the conversation holds no message of theirs and the network's
	// conversation id does not name them (Bluesky).
	PeerID string
	Fresh  bool
}

// DMThread answers GET /v1/inbox/dms/:conversationId: the conversation is read through the
// account (the same read that verifies a DM reply), so a conversation the account is not in is a
// 400, as for a reply. Cached like the listing.
func (s *Service) DMThread(ctx context.Context, scope string, q DMThreadQuery) ([]byte, error) {
	name, ok, err := s.cfg.Store.AccountPlatform(scope, q.AccountID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierr.AccountNotYours("account_id", q.AccountID)
	}
	platform := platforms.Platform(name)
	if !slices.Contains(MessagePlatforms, platform) {
		return nil, apierr.Validation("account_id: direct messages are live only on %s, not on %s", platformList(MessagePlatforms), platform)
	}
	key := cache.Key(scope, "dm;"+strconv.FormatUint(s.generation(scope), 36)+";a="+q.AccountID+";c="+q.ConversationID+";peer="+q.PeerID)
	e, err := s.inboxes.Get(ctx, key, q.Fresh, func(ctx context.Context) ([]byte, error) {
		return s.fillDMThread(ctx, scope, platform, q)
	})
	return e.Value, err
}

func (s *Service) fillDMThread(ctx context.Context, scope string, platform platforms.Platform, q DMThreadQuery) ([]byte, error) {
	var a *persistence.Account
	if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		a, err = tx.Account(q.AccountID)
		return err
	}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteWait)
	defer cancel()
	reply, err := actors.Ask[*account.ReadReply](ctx, s.cfg.Accounts.To(q.AccountID), &account.Read{
		Op: account.OpConversation, Scope: scope, ConversationID: q.ConversationID, Deadline: deadlineOf(ctx),
	})
	if errors.Is(err, platforms.ErrNotFound) {
		return nil, apierr.Validation("conversationId: conversation %s does not belong to account %s", truncate(q.ConversationID, 128), q.AccountID)
	}
	if err != nil {
		_, out := s.accountError(platform, doReadMessages, err)
		return nil, out
	}
	t := &DMThread{Conversation: DMConversation{ID: q.ConversationID, AccountID: a.ID, Platform: a.Platform, CanReply: true}, Messages: []DMMessage{}}
	for _, m := range reply.Messages {
		t.Messages = append(t.Messages, messageOf(a, m))
		if t.Conversation.Peer.ID == "" && m.From != "" && m.From != a.NetworkUserID {
			t.Conversation.Peer.ID = m.From
		}
	}
	if t.Conversation.Peer.ID == "" {
		t.Conversation.Peer.ID = q.PeerID
	}
	if len(t.Messages) > 0 {
		t.Conversation.LastMessage = t.Messages[0]
	}
	t.Conversation.aliases()
	t.FetchedAt = s.cfg.Now().UTC()
	return json.Marshal(t)
}

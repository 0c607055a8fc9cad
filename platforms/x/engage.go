package x

// Engagement (networks.md §1.3, §1.5): likes through POST /2/users/:id/likes and DELETE
// /2/users/:id/likes/:tweet_id, hidden replies through PUT /2/tweets/:id/hidden, and the
// account's conversations from GET /2/dm_events.

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
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

// Engagement limits.
const (
	likerPages        = 5 // liking_users pages of 100 read before an unlike
	conversationPages = 5 // dm_events pages of 100 read by Conversations
)

// comment checks that commentID is a reply in publicationID's conversation (GET /2/tweets with
// conversation_id); anything else is platforms.ErrNotFound.
func (a *Adapter) comment(ctx context.Context, c platforms.Credentials, publicationID, commentID string) error {
	if !isID(publicationID) || !isID(commentID) || commentID == publicationID {
		return notFound(0, "X post %s has no comment %s", publicationID, commentID)
	}
	found, err := a.lookup(ctx, c, []string{commentID}, "conversation_id,author_id")
	if err != nil {
		return err
	}
	if t, ok := found[commentID]; !ok || t.ConversationID != publicationID {
		return notFound(0, "X post %s has no comment %s", publicationID, commentID)
	}
	return nil
}

// write sends a like, unlike or hide and checks X's {"data":{field:want}} answer. The three are
// idempotent on X: a failure is Transient, never Unknown.
func (a *Adapter) write(ctx context.Context, c platforms.Credentials, method, u string, body any, field string, want bool) error {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	r, err := platforms.Send(ctx, a.hc, platforms.X, platforms.Call{Method: method, URL: u, Body: raw, ContentType: "application/json", Bearer: c.AccessToken})
	if err != nil {
		return err
	}
	if r.Status < 200 || r.Status > 299 {
		return readError(r, false)
	}
	var out struct {
		Data map[string]bool `json:"data"`
	}
	if err := platforms.Decode(platforms.X, r, &out, false); err != nil {
		return err
	}
	got, ok := out.Data[field]
	if !ok {
		if e := errorBody(r); e != nil {
			return e
		}
		return platforms.Garbled(platforms.X, r, false, fmt.Errorf("no data.%s in the answer", field))
	}
	if got != want {
		return platforms.Errorf(platforms.X, platforms.Permanent, r.Status, "X answered %s=%t", field, got)
	}
	return nil
}

// LikeComment likes a comment with POST /2/users/:id/likes {"tweet_id"}, or unlikes it with
// DELETE /2/users/:id/likes/:tweet_id. The comment is read first (it must be a reply in
// publicationID's conversation). X answers an unlike of a post the account has not liked like
// any other, so an unlike first reads the post's liking users (GET /2/tweets/:id/liking_users,
// up to 5 pages of 100): when the account is not among them and X has no more, the answer is
// platforms.ErrNotLiked and nothing is sent. A post with more likers than that is unliked without
// the check (X's unlike changes nothing when there was no like).
func (a *Adapter) LikeComment(ctx context.Context, c platforms.Credentials, publicationID, commentID string, like bool) error {
	if c.UserID == "" {
		return platforms.Errorf(platforms.X, platforms.Permanent, 0, "the account has no X user id; connect it again")
	}
	if err := a.comment(ctx, c, publicationID, commentID); err != nil {
		return err
	}
	base := a.base + "/2/users/" + url.PathEscape(c.UserID) + "/likes"
	if like {
		return a.write(ctx, c, http.MethodPost, base, map[string]string{"tweet_id": commentID}, "liked", true)
	}
	liked, err := a.likes(ctx, c, commentID)
	if err != nil {
		return err
	}
	if !liked {
		return &platforms.Error{Platform: platforms.X, Kind: platforms.Permanent, Message: "the account has not liked X post " + commentID, Err: platforms.ErrNotLiked}
	}
	return a.write(ctx, c, http.MethodDelete, base+"/"+url.PathEscape(commentID), nil, "liked", false)
}

// likes reports whether the account may like the post: it is among its liking users, or X has
// more of them than the adapter reads.
func (a *Adapter) likes(ctx context.Context, c platforms.Credentials, id string) (bool, error) {
	q := url.Values{"max_results": {"100"}}
	for range likerPages {
		var res struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			Meta *struct {
				NextToken string `json:"next_token"`
			} `json:"meta"`
		}
		r, err := a.get(ctx, c.AccessToken, a.base+"/2/tweets/"+url.PathEscape(id)+"/liking_users?"+q.Encode(), &res)
		if err != nil {
			return false, err
		}
		if res.Meta == nil && res.Data == nil {
			if e := errorBody(r); e != nil {
				return false, e
			}
			return false, platforms.Garbled(platforms.X, r, false, fmt.Errorf("neither data nor meta in the answer"))
		}
		for _, u := range res.Data {
			if u.ID == c.UserID {
				return true, nil
			}
		}
		if res.Meta == nil || res.Meta.NextToken == "" {
			return false, nil
		}
		q.Set("pagination_token", res.Meta.NextToken)
	}
	return true, nil
}

// HideComment hides a reply (PUT /2/tweets/:id/hidden {"hidden":true}) or shows it again
// ({"hidden":false}). X lets an account hide replies only in conversations it started, which a
// publication's are; the comment is read first.
func (a *Adapter) HideComment(ctx context.Context, c platforms.Credentials, publicationID, commentID string, hide bool) error {
	if err := a.comment(ctx, c, publicationID, commentID); err != nil {
		return err
	}
	return a.write(ctx, c, http.MethodPut, a.base+"/2/tweets/"+url.PathEscape(commentID)+"/hidden", map[string]bool{"hidden": hide}, "hidden", hide)
}

// Conversations lists the account's conversations from its direct message events (GET
// /2/dm_events, newest first, up to 5 pages of 100; X keeps the last 30 days), one per
// dm_conversation_id, with the newest message of each. The peer is the other member of a
// one-to-one conversation (its id is both user ids joined by a dash), their username from the
// participant_ids expansion. truncated is true when X had more events than were read.
func (a *Adapter) Conversations(ctx context.Context, c platforms.Credentials) ([]platforms.ConversationSummary, bool, error) {
	q := url.Values{
		"dm_event.fields": {dmEventFields + ",participant_ids"}, "event_types": {"MessageCreate"}, "max_results": {"100"},
		"expansions": {"sender_id,participant_ids"}, "user.fields": {"username"},
	}
	byID := map[string]*platforms.ConversationSummary{}
	var order []string
	users := map[string]string{}
	truncated := false
	for page := 0; page < conversationPages; page++ {
		var res struct {
			Data []struct {
				ID               string    `json:"id"`
				EventType        string    `json:"event_type"`
				Text             string    `json:"text"`
				SenderID         string    `json:"sender_id"`
				CreatedAt        time.Time `json:"created_at"`
				DMConversationID string    `json:"dm_conversation_id"`
				ParticipantIDs   []string  `json:"participant_ids"`
			} `json:"data"`
			Includes struct {
				Users []struct {
					ID       string `json:"id"`
					Username string `json:"username"`
				} `json:"users"`
			} `json:"includes"`
			Meta *struct {
				NextToken string `json:"next_token"`
			} `json:"meta"`
		}
		r, err := a.get(ctx, c.AccessToken, a.base+"/2/dm_events?"+q.Encode(), &res)
		if err != nil {
			return nil, false, err
		}
		if res.Meta == nil && res.Data == nil {
			if e := errorBody(r); e != nil {
				return nil, false, e
			}
			return nil, false, platforms.Garbled(platforms.X, r, false, fmt.Errorf("neither data nor meta in the answer"))
		}
		for _, u := range res.Includes.Users {
			users[u.ID] = u.Username
		}
		for _, ev := range res.Data {
			if (ev.EventType != "" && ev.EventType != "MessageCreate") || ev.DMConversationID == "" {
				continue
			}
			cs := byID[ev.DMConversationID]
			if cs == nil {
				cs = &platforms.ConversationSummary{ID: ev.DMConversationID, CanReply: true}
				byID[ev.DMConversationID] = cs
				order = append(order, ev.DMConversationID)
			}
			if cs.PeerID == "" {
				cs.PeerID = peerOf(c.UserID, ev.DMConversationID, ev.SenderID, ev.ParticipantIDs)
			}
			if ev.CreatedAt.After(cs.Last.CreatedAt) || cs.Last.ID == "" {
				cs.Last = platforms.Message{ID: ev.ID, ConversationID: ev.DMConversationID, From: ev.SenderID, Text: html.UnescapeString(ev.Text), CreatedAt: ev.CreatedAt.UTC()}
			}
		}
		if res.Meta == nil || res.Meta.NextToken == "" {
			break
		}
		if page == conversationPages-1 {
			truncated = true
			break
		}
		q.Set("pagination_token", res.Meta.NextToken)
	}
	out := make([]platforms.ConversationSummary, 0, len(order))
	for _, id := range order {
		cs := byID[id]
		cs.PeerHandle = users[cs.PeerID]
		out = append(out, *cs)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Last.CreatedAt.After(out[j].Last.CreatedAt) })
	return out, truncated, nil
}

// peerOf is the other member of a conversation: from the participants, else from a one-to-one
// conversation id ("smaller-larger"), else the sender when it is not the account.
func peerOf(me, conversationID, sender string, participants []string) string {
	for _, p := range participants {
		if p != me && p != "" {
			return p
		}
	}
	if a, b, ok := strings.Cut(conversationID, "-"); ok && isID(a) && isID(b) {
		if a == me {
			return b
		}
		if b == me {
			return a
		}
	}
	if sender != me {
		return sender
	}
	return ""
}

package x

// Live data (networks.md §1.5): a post's public metrics from GET /2/tweets, its comments from the
// recent search of its conversation, replies through POST /2/tweets, and direct messages through
// the dm_conversations endpoints.

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
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

var (
	_ platforms.Reader    = (*Adapter)(nil)
	_ platforms.Commenter = (*Adapter)(nil)
	_ platforms.Messenger = (*Adapter)(nil)
)

// Read limits.
const (
	maxLookupIDs   = 100   // GET /2/tweets takes up to 100 ids
	commentPages   = 10    // recent search pages of 100 read by Comments
	messagePages   = 5     // dm_events pages of 100 read by Conversation
	maxDMChars     = 10000 // a direct message's text
	maxDMMedia     = 1
	tweetFields    = "author_id,created_at,conversation_id,in_reply_to_user_id,referenced_tweets"
	dmEventFields  = "id,text,event_type,created_at,sender_id,dm_conversation_id"
	notVisibleText = "not visible"
)

// notFound is the error of an object the account cannot see; it wraps platforms.ErrNotFound.
func notFound(status int, format string, args ...any) *platforms.Error {
	return &platforms.Error{Platform: platforms.X, Kind: platforms.Permanent, Status: status, Code: "resource-not-found",
		Message: fmt.Sprintf(format, args...), Err: platforms.ErrNotFound}
}

// readError classifies a failed read; X's 404 resource-not-found wraps platforms.ErrNotFound.
func readError(r *platforms.Answer, create bool) *platforms.Error {
	e := classify(r, create)
	if r.Status == http.StatusNotFound || (r.Status == http.StatusForbidden && strings.Contains(e.Message, notVisibleText)) {
		e.Err = platforms.ErrNotFound
	}
	return e
}

// isID reports whether s looks like an X id (digits only).
func isID(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// get makes a read call and decodes a 2xx answer into out.
func (a *Adapter) get(ctx context.Context, token, u string, out any) (*platforms.Answer, error) {
	r, err := platforms.Send(ctx, a.hc, platforms.X, platforms.Call{Method: http.MethodGet, URL: u, Bearer: token})
	if err != nil {
		return nil, err
	}
	if r.Status < 200 || r.Status > 299 {
		return nil, readError(r, false)
	}
	return r, platforms.Decode(platforms.X, r, out, false)
}

// publicMetrics is X's public_metrics object.
type publicMetrics struct {
	RetweetCount    *int64 `json:"retweet_count"`
	ReplyCount      *int64 `json:"reply_count"`
	LikeCount       *int64 `json:"like_count"`
	QuoteCount      *int64 `json:"quote_count"`
	ImpressionCount *int64 `json:"impression_count"`
}

// metrics maps X's counters: views are impressions, shares are reposts plus quotes.
func (p publicMetrics) metrics() platforms.Metrics {
	m := platforms.Metrics{Views: p.ImpressionCount, Likes: p.LikeCount, Comments: p.ReplyCount}
	if p.RetweetCount != nil || p.QuoteCount != nil {
		var n int64
		for _, v := range []*int64{p.RetweetCount, p.QuoteCount} {
			if v != nil {
				n += *v
			}
		}
		m.Shares = &n
	}
	return m
}

// lookedUp is a post as GET /2/tweets answers it.
type lookedUp struct {
	ID             string         `json:"id"`
	ConversationID string         `json:"conversation_id"`
	PublicMetrics  *publicMetrics `json:"public_metrics"`
}

// lookup reads posts by id (at most 100) with the given tweet.fields; ids X does not find are
// left out.
func (a *Adapter) lookup(ctx context.Context, c platforms.Credentials, ids []string, fields string) (map[string]lookedUp, error) {
	q := url.Values{"ids": {strings.Join(ids, ",")}, "tweet.fields": {fields}}
	var out struct {
		Data   []lookedUp `json:"data"`
		Errors []struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"errors"`
	}
	r, err := a.get(ctx, c.AccessToken, a.base+"/2/tweets?"+q.Encode(), &out)
	if err != nil {
		return nil, err
	}
	if out.Data == nil && out.Errors == nil {
		return nil, platforms.Garbled(platforms.X, r, false, fmt.Errorf("neither data nor errors in the answer"))
	}
	found := make(map[string]lookedUp, len(out.Data))
	for _, t := range out.Data {
		found[t.ID] = t
	}
	return found, nil
}

// BatchMetrics reads the counters of several posts, 100 per call of GET /2/tweets. Posts X does
// not find are left out of the map.
func (a *Adapter) BatchMetrics(ctx context.Context, c platforms.Credentials, ids []string) (map[string]platforms.Metrics, error) {
	out := make(map[string]platforms.Metrics, len(ids))
	var valid []string
	for _, id := range ids {
		if isID(id) {
			valid = append(valid, id)
		}
	}
	for start := 0; start < len(valid); start += maxLookupIDs {
		found, err := a.lookup(ctx, c, valid[start:min(start+maxLookupIDs, len(valid))], "public_metrics")
		if err != nil {
			return nil, err
		}
		for id, t := range found {
			if t.PublicMetrics != nil {
				out[id] = t.PublicMetrics.metrics()
			} else {
				out[id] = platforms.Metrics{}
			}
		}
	}
	return out, nil
}

// Metrics reads a post's public metrics (GET /2/tweets?ids=…&tweet.fields=public_metrics): views
// are impression_count, likes like_count, comments reply_count, shares retweet_count plus
// quote_count. A post X does not find is platforms.ErrNotFound.
func (a *Adapter) Metrics(ctx context.Context, c platforms.Credentials, publicationID string) (platforms.Metrics, error) {
	return platforms.MetricsOf(ctx, c, publicationID, a.BatchMetrics, func() error {
		return notFound(0, "X has no post %s", publicationID)
	})
}

// searchTweet is a post as the recent search answers it.
type searchTweet struct {
	ID               string    `json:"id"`
	Text             string    `json:"text"`
	AuthorID         string    `json:"author_id"`
	CreatedAt        time.Time `json:"created_at"`
	ConversationID   string    `json:"conversation_id"`
	ReferencedTweets []struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"referenced_tweets"`
}

// Comments lists the replies in a post's conversation, newest first, with the recent search
// (GET /2/tweets/search/recent?query=conversation_id:ID, which covers the last 7 days). A
// comment's ParentID is the comment it answers, empty when it answers the post.
func (a *Adapter) Comments(ctx context.Context, c platforms.Credentials, publicationID string) ([]platforms.Comment, error) {
	if !isID(publicationID) {
		return nil, notFound(0, "%q is not an X post id", publicationID)
	}
	q := url.Values{
		"query": {"conversation_id:" + publicationID}, "max_results": {"100"},
		"tweet.fields": {tweetFields}, "expansions": {"author_id"}, "user.fields": {"username"},
	}
	out := []platforms.Comment{}
	for page := 0; page < commentPages; page++ {
		var res struct {
			Data     []searchTweet `json:"data"`
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
		r, err := a.get(ctx, c.AccessToken, a.base+"/2/tweets/search/recent?"+q.Encode(), &res)
		if err != nil {
			return nil, err
		}
		if res.Meta == nil && res.Data == nil {
			if e := errorBody(r); e != nil {
				return nil, e
			}
			return nil, platforms.Garbled(platforms.X, r, false, fmt.Errorf("neither data nor meta in the answer"))
		}
		users := map[string]string{}
		for _, u := range res.Includes.Users {
			users[u.ID] = u.Username
		}
		for _, t := range res.Data {
			if t.ID == publicationID {
				continue
			}
			cm := platforms.Comment{ID: t.ID, PublicationID: publicationID, Author: users[t.AuthorID], Text: html.UnescapeString(t.Text),
				CreatedAt: t.CreatedAt.UTC(), ByAccount: c.UserID != "" && t.AuthorID == c.UserID}
			if cm.Author == "" {
				cm.Author = t.AuthorID
			}
			for _, ref := range t.ReferencedTweets {
				if ref.Type == "replied_to" && ref.ID != publicationID {
					cm.ParentID = ref.ID
				}
			}
			out = append(out, cm)
		}
		if res.Meta == nil || res.Meta.NextToken == "" {
			break
		}
		q.Set("next_token", res.Meta.NextToken)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// Reply answers a comment with POST /2/tweets and reply.in_reply_to_tweet_id, with up to 4
// images or one GIF or video as for a post. The comment is first read (GET /2/tweets with
// conversation_id): a comment that is not part of publicationID's conversation is
// platforms.ErrNotFound and nothing is posted.
func (a *Adapter) Reply(ctx context.Context, c platforms.Credentials, publicationID, commentID, text string, media []platforms.Media) (platforms.Comment, error) {
	if err := a.Validate(platforms.Post{Text: text, Media: media}); err != nil {
		return platforms.Comment{}, err
	}
	if !isID(publicationID) || !isID(commentID) || commentID == publicationID {
		return platforms.Comment{}, notFound(0, "X post %s has no comment %s", publicationID, commentID)
	}
	found, err := a.lookup(ctx, c, []string{commentID}, "conversation_id,author_id")
	if err != nil {
		return platforms.Comment{}, err
	}
	if t, ok := found[commentID]; !ok || t.ConversationID != publicationID {
		return platforms.Comment{}, notFound(0, "X post %s has no comment %s", publicationID, commentID)
	}
	id, _, err := a.createTweet(ctx, c, text, media, commentID)
	if err != nil {
		return platforms.Comment{}, err
	}
	return platforms.Comment{ID: id, PublicationID: publicationID, ParentID: commentID, Author: c.Handle, Text: text,
		CreatedAt: time.Now().UTC(), ByAccount: true}, nil
}

// Conversation lists a conversation's messages, newest first
// (GET /2/dm_conversations/{id}/dm_events). A conversation the account is not part of is
// platforms.ErrNotFound.
func (a *Adapter) Conversation(ctx context.Context, c platforms.Credentials, conversationID string) ([]platforms.Message, error) {
	if conversationID == "" || strings.ContainsAny(conversationID, "/?#") {
		return nil, notFound(0, "X has no conversation %q", conversationID)
	}
	q := url.Values{"dm_event.fields": {dmEventFields}, "event_types": {"MessageCreate"}, "max_results": {"100"}}
	out := []platforms.Message{}
	for page := 0; page < messagePages; page++ {
		var res struct {
			Data []struct {
				ID               string    `json:"id"`
				EventType        string    `json:"event_type"`
				Text             string    `json:"text"`
				SenderID         string    `json:"sender_id"`
				CreatedAt        time.Time `json:"created_at"`
				DMConversationID string    `json:"dm_conversation_id"`
			} `json:"data"`
			Meta *struct {
				NextToken string `json:"next_token"`
			} `json:"meta"`
			Errors []struct {
				Type string `json:"type"`
			} `json:"errors"`
		}
		r, err := a.get(ctx, c.AccessToken, a.base+"/2/dm_conversations/"+url.PathEscape(conversationID)+"/dm_events?"+q.Encode(), &res)
		if err != nil {
			return nil, err
		}
		if res.Meta == nil && res.Data == nil {
			for _, e := range res.Errors {
				if strings.HasSuffix(e.Type, "/resource-not-found") {
					return nil, notFound(r.Status, "X has no conversation %s for this account", conversationID)
				}
			}
			if e := errorBody(r); e != nil {
				return nil, e
			}
			return nil, platforms.Garbled(platforms.X, r, false, fmt.Errorf("neither data nor meta in the answer"))
		}
		for _, ev := range res.Data {
			if ev.EventType != "" && ev.EventType != "MessageCreate" {
				continue
			}
			conv := ev.DMConversationID
			if conv == "" {
				conv = conversationID
			}
			out = append(out, platforms.Message{ID: ev.ID, ConversationID: conv, From: ev.SenderID, Text: html.UnescapeString(ev.Text), CreatedAt: ev.CreatedAt.UTC()})
		}
		if res.Meta == nil || res.Meta.NextToken == "" {
			break
		}
		q.Set("pagination_token", res.Meta.NextToken)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// dmCategory is the media_category of a direct message attachment and its size limit.
func dmCategory(ct string) (category string, limit int64, ok bool) { return categoryOf("dm", ct) }

// validateMessage checks a direct message: text or one attachment, text of at most 10,000
// characters, an image (JPEG, PNG, WEBP, GIF) or a video (MP4, MOV) within X's sizes.
func validateMessage(text string, media []platforms.Media) error {
	switch {
	case strings.TrimSpace(text) == "" && len(media) == 0:
		return invalid("a message needs text or an attachment")
	case utf8.RuneCountInString(text) > maxDMChars:
		return invalid("the message is %d characters; X allows %d", utf8.RuneCountInString(text), maxDMChars)
	case len(media) > maxDMMedia:
		return invalid("%d attachments; X takes one image or video per message", len(media))
	}
	for _, m := range media {
		_, limit, ok := dmCategory(m.ContentType)
		if !ok {
			return invalid("the attachment is %s; X messages take JPEG, PNG, WEBP or GIF images and MP4 or MOV videos", typeName(m.ContentType))
		}
		if m.Size > limit {
			return invalid("the attachment is %d bytes; X allows %d for %s", m.Size, limit, m.ContentType)
		}
	}
	return nil
}

// SendMessage sends a direct message with POST /2/dm_conversations/{id}/messages, or, without a
// conversation id, POST /2/dm_conversations/with/{peerID}/messages. One image or video may be
// attached (uploaded with a dm_* media category). A conversation the account is not part of is
// platforms.ErrNotFound.
func (a *Adapter) SendMessage(ctx context.Context, c platforms.Credentials, conversationID, peerID, text string, media []platforms.Media) (platforms.Message, error) {
	if err := validateMessage(text, media); err != nil {
		return platforms.Message{}, err
	}
	var endpoint string
	switch {
	case conversationID != "":
		if strings.ContainsAny(conversationID, "/?#") {
			return platforms.Message{}, notFound(0, "X has no conversation %q", conversationID)
		}
		endpoint = a.base + "/2/dm_conversations/" + url.PathEscape(conversationID) + "/messages"
	case isID(peerID):
		endpoint = a.base + "/2/dm_conversations/with/" + url.PathEscape(peerID) + "/messages"
	default:
		return platforms.Message{}, invalid("a message needs a conversation id or the peer's user id")
	}
	body := map[string]any{}
	if text != "" {
		body["text"] = text
	}
	for _, m := range media {
		category, limit, _ := dmCategory(m.ContentType)
		id, err := a.uploadMediaAs(ctx, c.AccessToken, m, category, limit)
		if err != nil {
			return platforms.Message{}, err
		}
		body["attachments"] = []map[string]string{{"media_id": id}}
	}
	raw, _ := json.Marshal(body)
	r, err := platforms.Send(ctx, a.hc, platforms.X, platforms.Call{Method: http.MethodPost, URL: endpoint, Body: raw, ContentType: "application/json", Bearer: c.AccessToken, Create: true})
	if err != nil {
		return platforms.Message{}, err
	}
	if r.Status < 200 || r.Status > 299 {
		return platforms.Message{}, readError(r, true)
	}
	var out struct {
		Data struct {
			ConversationID string `json:"dm_conversation_id"`
			EventID        string `json:"dm_event_id"`
		} `json:"data"`
	}
	if err := platforms.Decode(platforms.X, r, &out, true); err != nil {
		return platforms.Message{}, err
	}
	if out.Data.EventID == "" {
		if e := errorBody(r); e != nil {
			return platforms.Message{}, e
		}
		return platforms.Message{}, platforms.Garbled(platforms.X, r, true, fmt.Errorf("no data.dm_event_id in the answer"))
	}
	conv := out.Data.ConversationID
	if conv == "" {
		conv = conversationID
	}
	return platforms.Message{ID: out.Data.EventID, ConversationID: conv, From: c.UserID, Text: text, CreatedAt: time.Now().UTC()}, nil
}

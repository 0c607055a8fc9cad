package api

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/cache"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/live"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/platforms"
)

// MaxReplyLength caps the text of a comment reply or a direct message, in characters (each
// network's own limit applies on top).
const MaxReplyLength = 10000

// liveAccount validates the account_id parameter: a UUID naming one of the caller's accounts,
// on one of the allowed networks. "" when absent.
func (h *handlers) liveAccount(c *echo.Context, userID, field string, allowed []platforms.Platform, what string) (id, platform string, err error) {
	v := c.QueryParam(field)
	if v == "" {
		return "", "", nil
	}
	if id, err = parseUUID(field, v); err != nil {
		return "", "", err
	}
	platform, ok, err := h.Store.AccountPlatform(userID, id)
	if err != nil {
		return "", "", h.storeError(c, err)
	}
	if !ok {
		return "", "", apierr.AccountNotYours(field, id)
	}
	if !slices.Contains(allowed, platforms.Platform(platform)) {
		return "", "", apierr.Validation("%s: the account is on %s, which has no live %s (live: %s)", field, platform, what, joinPlatforms(allowed))
	}
	return id, platform, nil
}

func joinPlatforms(ps []platforms.Platform) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

func (h *handlers) liveError(c *echo.Context, err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if cache.IsCanceled(err) && c.Request().Context().Err() != nil {
		// The client went away (or its deadline passed) while waiting: nothing to log.
		return apierr.Unavailable("the request ended before the networks answered")
	}
	h.Log.Error("live data request failed", "request_id", server.RequestID(c), "error", err)
	return apierr.Internal()
}

func (h *handlers) analyticsOverview(c *echo.Context) error {
	p := server.Principal(c)
	w, err := live.ParseWindow(c.QueryParam("range"), c.QueryParam("since"), c.QueryParam("until"), h.Now())
	if err != nil {
		return err
	}
	fresh, err := live.ParseBool("fresh", c.QueryParam("fresh"), false)
	if err != nil {
		return err
	}
	acct, _, err := h.liveAccount(c, p.Scope(), "account_id", live.AnalyticsPlatforms, "analytics")
	if err != nil {
		return err
	}
	body, err := h.Live.Overview(c.Request().Context(), p.Scope(), live.OverviewQuery{Window: w, AccountID: acct, Fresh: fresh})
	if err != nil {
		return h.liveError(c, err)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

// liveAccounts answers GET /v1/analytics/accounts and GET /v1/inbox/accounts: every connected
// account of the caller and whether the feature reads it live.
func (h *handlers) liveAccounts(c *echo.Context, f live.Feature) error {
	list, err := h.Live.Accounts(c.Request().Context(), server.Principal(c).Scope(), f)
	if err != nil {
		return h.liveError(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"data": list})
}

func (h *handlers) analyticsAccounts(c *echo.Context) error {
	return h.liveAccounts(c, live.AnalyticsFeature)
}

// inboxAccounts takes mode: comments (the default) or dms.
func (h *handlers) inboxAccounts(c *echo.Context) error {
	switch c.QueryParam("mode") {
	case "", "comments":
		return h.liveAccounts(c, live.CommentsFeature)
	case "dms":
		return h.liveAccounts(c, live.MessagesFeature)
	}
	return apierr.Validation("mode: must be one of comments, dms")
}

// analyticsPost reads the post as GET /v1/posts/:id does (the same answers for an unknown post
// or another user's), then its publications' live counters.
func (h *handlers) analyticsPost(c *echo.Context) error {
	id, err := parseUUID("postId", c.Param("postId"))
	if err != nil {
		return err
	}
	fresh, err := live.ParseBool("fresh", c.QueryParam("fresh"), false)
	if err != nil {
		return err
	}
	userID := server.Principal(c).Scope()
	r, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.Get{Scope: userID})
	if err != nil {
		return h.actorError(c, "post", err)
	}
	body, err := h.Live.PostAnalytics(c.Request().Context(), userID, live.PostQuery{Post: r.Post, Fresh: fresh})
	if err != nil {
		return h.liveError(c, err)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

func (h *handlers) inboxComments(c *echo.Context) error {
	p := server.Principal(c)
	w, err := live.ParseWindow(c.QueryParam("range"), c.QueryParam("since"), c.QueryParam("until"), h.Now())
	if err != nil {
		return err
	}
	sc, err := h.inboxScope(c, p.Scope(), live.CommentsPlatforms, "comments inbox")
	if err != nil {
		return err
	}
	q := live.InboxQuery{Window: w, AccountID: sc.account, Platform: sc.platform, Before: sc.before, Limit: sc.limit, Fresh: sc.fresh}
	if err := h.Live.ParseCursor(p.Scope(), &q); err != nil {
		return err
	}
	body, err := h.Live.Inbox(c.Request().Context(), p.Scope(), q)
	if err != nil {
		return h.liveError(c, err)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

// inboxScope is the query an inbox page shares with the others: fresh, limit, platform and
// account_id (on one of the networks with the live feature, and on that platform when both are
// named), and the before cursor as received.
type inboxScope struct {
	fresh             bool
	limit             int
	platform, account string
	before            string
}

func (h *handlers) inboxScope(c *echo.Context, userID string, allowed []platforms.Platform, what string) (inboxScope, error) {
	var sc inboxScope
	var err error
	if sc.fresh, err = live.ParseBool("fresh", c.QueryParam("fresh"), false); err != nil {
		return sc, err
	}
	if sc.limit, err = queryInt(c, "limit", live.DefaultInboxLimit, live.MinInboxLimit, live.MaxInboxLimit); err != nil {
		return sc, err
	}
	sc.platform = c.QueryParam("platform")
	if sc.platform != "" {
		if !platforms.Platform(sc.platform).Valid() {
			return sc, apierr.Validation("platform: must be one of %s", joinPlatforms(platforms.All))
		}
		if !slices.Contains(allowed, platforms.Platform(sc.platform)) {
			return sc, apierr.Validation("platform: %s has no live %s (live: %s)", sc.platform, what, joinPlatforms(allowed))
		}
	}
	acct, acctPlatform, err := h.liveAccount(c, userID, "account_id", allowed, what)
	if err != nil {
		return sc, err
	}
	if acct != "" && sc.platform != "" && acctPlatform != sc.platform {
		return sc, apierr.Validation("platform: the account %s is on %s, not %s", acct, acctPlatform, sc.platform)
	}
	sc.account, sc.before = acct, c.QueryParam("before")
	if len(sc.before) > 2048 {
		return sc, apierr.Validation("before: invalid cursor; use next_before of the previous page as it was returned")
	}
	return sc, nil
}

// replyText reads the text field of a comment or message reply: required, text a network may
// receive (platforms.CheckText: no control character but tab, line feed and carriage return), not
// blank, at most MaxReplyLength characters.
func replyText(o object) (string, error) {
	text, err := o.str("text", true)
	if err != nil {
		return "", err
	}
	if err := platforms.CheckText(*text); err != nil {
		return "", apierr.Validation("text: %s", err.Error())
	}
	if strings.TrimSpace(*text) == "" {
		return "", apierr.Validation("text: must not be empty")
	}
	if n := utf8.RuneCountInString(*text); n > MaxReplyLength {
		return "", apierr.Validation("text: is %d characters; at most %d are allowed", n, MaxReplyLength)
	}
	return *text, nil
}

// requiredUUID reads a required UUID string field.
func requiredUUID(o object, field string) (string, error) {
	v, err := o.str(field, true)
	if err != nil {
		return "", err
	}
	return parseUUID(field, *v)
}

// optionalUUID reads an optional UUID string field ("" when absent or null).
func optionalUUID(o object, field string) (string, error) {
	if raw, ok := o[field]; ok && jsonType(raw) == "null" {
		return "", nil
	}
	v, err := o.str(field, false)
	if err != nil || v == nil {
		return "", err
	}
	return parseUUID(field, *v)
}

// pathString validates a path id of a network object (not a UUID: the network's own id).
func pathString(name, v string) (string, error) {
	if v == "" || len(v) > 512 || strings.ContainsAny(v, "\x00\r\n") {
		return "", apierr.Validation("%s: must be the id the inbox returned (1 to 512 characters)", name)
	}
	return v, nil
}

func (h *handlers) replyToComment(c *echo.Context) error {
	commentID, err := pathString("commentId", c.Param("commentId"))
	if err != nil {
		return err
	}
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	postID, err := requiredUUID(o, "publication_id")
	if err != nil {
		return err
	}
	text, err := replyText(o)
	if err != nil {
		return err
	}
	mediaID, err := optionalUUID(o, "media_id")
	if err != nil {
		return err
	}
	sent, err := h.Live.ReplyToComment(c.Request().Context(), server.Principal(c).Scope(), live.CommentReply{
		CommentID: commentID, PublicationID: postID, Text: text, MediaID: mediaID,
	})
	if err != nil {
		return h.liveError(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"ok": true, "reply_id": sent.ID, "platform": sent.Platform})
}

// commentAction reads a like or hide: the comment id, publication_id and the undo flag (undo
// names the body field: unlike or unhide).
func commentAction(c *echo.Context, undo string) (live.CommentAction, error) {
	commentID, err := pathString("commentId", c.Param("commentId"))
	if err != nil {
		return live.CommentAction{}, err
	}
	o, err := readObject(c.Request())
	if err != nil {
		return live.CommentAction{}, err
	}
	pub, err := requiredUUID(o, "publication_id")
	if err != nil {
		return live.CommentAction{}, err
	}
	flag, err := o.boolean(undo)
	if err != nil {
		return live.CommentAction{}, err
	}
	return live.CommentAction{CommentID: commentID, PublicationID: pub, Undo: flag != nil && *flag}, nil
}

func (h *handlers) likeComment(c *echo.Context) error {
	a, err := commentAction(c, "unlike")
	if err != nil {
		return err
	}
	done, err := h.Live.LikeComment(c.Request().Context(), server.Principal(c).Scope(), a)
	if err != nil {
		return h.liveError(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"ok": true, "liked": done.On, "platform": done.Platform})
}

func (h *handlers) hideComment(c *echo.Context) error {
	a, err := commentAction(c, "unhide")
	if err != nil {
		return err
	}
	done, err := h.Live.HideComment(c.Request().Context(), server.Principal(c).Scope(), a)
	if err != nil {
		return h.liveError(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"ok": true, "hidden": done.On, "platform": done.Platform})
}

func (h *handlers) inboxDMs(c *echo.Context) error {
	p := server.Principal(c)
	sc, err := h.inboxScope(c, p.Scope(), live.MessagePlatforms, "direct messages")
	if err != nil {
		return err
	}
	q := live.DMQuery{AccountID: sc.account, Platform: sc.platform, Before: sc.before, Limit: sc.limit, Fresh: sc.fresh}
	if err := h.Live.ParseDMCursor(p.Scope(), &q); err != nil {
		return err
	}
	body, err := h.Live.DMs(c.Request().Context(), p.Scope(), q)
	if err != nil {
		return h.liveError(c, err)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

func (h *handlers) inboxDMThread(c *echo.Context) error {
	p := server.Principal(c)
	conversationID, err := pathString("conversationId", c.Param("conversationId"))
	if err != nil {
		return err
	}
	v := c.QueryParam("account_id")
	if v == "" {
		return apierr.Validation("account_id: Required")
	}
	accountID, err := parseUUID("account_id", v)
	if err != nil {
		return err
	}
	peer := ""
	if v := c.QueryParam("peer_id"); v != "" {
		if peer, err = pathString("peer_id", v); err != nil {
			return err
		}
	}
	fresh, err := live.ParseBool("fresh", c.QueryParam("fresh"), false)
	if err != nil {
		return err
	}
	body, err := h.Live.DMThread(c.Request().Context(), p.Scope(), live.DMThreadQuery{
		ConversationID: conversationID, AccountID: accountID, PeerID: peer, Fresh: fresh,
	})
	if err != nil {
		return h.liveError(c, err)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

func (h *handlers) replyToConversation(c *echo.Context) error {
	conversationID, err := pathString("conversationId", c.Param("conversationId"))
	if err != nil {
		return err
	}
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	accountID, err := requiredUUID(o, "account_id")
	if err != nil {
		return err
	}
	text, err := replyText(o)
	if err != nil {
		return err
	}
	peer := ""
	if raw, ok := o["peer_id"]; ok && jsonType(raw) != "null" {
		v, err := o.str("peer_id", false)
		if err != nil {
			return err
		}
		if peer, err = pathString("peer_id", *v); err != nil {
			return err
		}
	}
	mediaID, err := optionalUUID(o, "media_id")
	if err != nil {
		return err
	}
	sent, err := h.Live.ReplyToConversation(c.Request().Context(), server.Principal(c).Scope(), live.MessageReply{
		ConversationID: conversationID, AccountID: accountID, Text: text, PeerID: peer, MediaID: mediaID,
	})
	if err != nil {
		return h.liveError(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"ok": true, "message_id": sent.ID, "platform": sent.Platform})
}

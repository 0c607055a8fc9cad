package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/live"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

type inboxData struct {
	Ranges []string
	Range  string
	// Comments and DMs are the pages of GET /v1/inbox/comments and GET /v1/inbox/dms.
	Comments live.InboxPage
	DMs      live.DMPage
	// Older* follow next_before while has_more; Newest* go back to the first page.
	OlderComments, NewestComments string
	OlderDMs, NewestDMs           string
	// CanAct says whether the person may reply, like and hide (an editor or above, as the /api
	// routes require): the forms are not offered otherwise.
	CanAct bool
	// Names are the names of the workspace's accounts, by id.
	Names map[string]string
	// Conversation is the conversation opened (?conversation=&account_id=&peer_id=), its
	// messages oldest first; nil when none is.
	Conversation *live.DMThread
	// PeerName names the conversation's peer: their username, from the listing when the
	// conversation's read does not name them (Bluesky names members by DID only), else their id.
	PeerName string
	// Likeable and Hideable are the networks whose comments the page offers to like and to hide
	// (live.LikePlatforms, live.HidePlatforms).
	Likeable, Hideable map[string]bool
}

func platformSet(ps []platforms.Platform) map[string]bool {
	out := map[string]bool{}
	for _, p := range ps {
		out[string(p)] = true
	}
	return out
}

// inbox is GET /inbox?range=&before=&dm_before=: the comment threads of the workspace's
// publications and its direct message conversations, read through the same live.Service calls
// as GET /v1/inbox/comments and GET /v1/inbox/dms (cursors, caches and budgets included). Each
// list pages on its own cursor; replies, likes and hides are the page script's calls to the
// /api inbox routes.
func (p *pages) inbox(c *echo.Context) error {
	v := p.newView(c, "Inbox", "inbox", nil)
	if p.Live == nil {
		return p.fail(c, http.StatusNotFound, "The inbox is not available on this server.")
	}
	d := inboxData{Ranges: analyticsRanges, Range: c.QueryParam("range"), Names: map[string]string{},
		CanAct: server.Principal(c).HasRole(auth.RoleEditor), Likeable: platformSet(live.LikePlatforms), Hideable: platformSet(live.HidePlatforms)}
	if !slices.Contains(analyticsRanges, d.Range) {
		d.Range = "7d"
	}
	before, dmBefore := c.QueryParam("before"), c.QueryParam("dm_before")
	w, err := live.ParseWindow(d.Range, "", "", p.Now())
	if err != nil {
		return p.liveFail(c, err)
	}
	ctx := c.Request().Context()
	q := live.InboxQuery{Window: w, Before: before, Limit: live.DefaultInboxLimit}
	if err := p.Live.ParseCursor(v.Scope, &q); err != nil {
		return p.liveFail(c, err)
	}
	dq := live.DMQuery{Before: dmBefore, Limit: live.DefaultInboxLimit}
	if err := p.Live.ParseDMCursor(v.Scope, &dq); err != nil {
		return p.liveFail(c, err)
	}
	// The two lists are read at once, so that the page waits for the slower, not for both.
	var dmErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		body, err := p.Live.DMs(ctx, v.Scope, dq)
		if err == nil {
			err = json.Unmarshal(body, &d.DMs)
		}
		dmErr = err
	})
	body, err := p.Live.Inbox(ctx, v.Scope, q)
	if err == nil {
		err = json.Unmarshal(body, &d.Comments)
	}
	wg.Wait()
	if err == nil {
		err = dmErr
	}
	if err != nil {
		return p.liveFail(c, err)
	}
	if conv := c.QueryParam("conversation"); conv != "" {
		acct, peer := c.QueryParam("account_id"), c.QueryParam("peer_id")
		if len(conv) > 512 || strings.ContainsAny(conv, "\x00\r\n") || len(peer) > 512 || strings.ContainsAny(peer, "\x00\r\n") {
			return p.fail(c, http.StatusBadRequest, "conversation: must be the id the inbox listed")
		}
		if _, err := persistence.ID(acct); err != nil {
			return p.fail(c, http.StatusBadRequest, "account_id: must be the id of one of your accounts")
		}
		body, err := p.Live.DMThread(ctx, v.Scope, live.DMThreadQuery{ConversationID: conv, AccountID: acct, PeerID: peer})
		var th live.DMThread
		if err == nil {
			err = json.Unmarshal(body, &th)
		}
		if err != nil {
			return p.liveFail(c, err)
		}
		slices.Reverse(th.Messages)
		d.Conversation = &th
		d.PeerName = th.Conversation.Peer.ID
		if u := th.Conversation.Peer.Username; u != nil {
			d.PeerName = *u
		} else {
			for _, lc := range d.DMs.Conversations {
				if lc.ID == th.Conversation.ID && lc.AccountID == th.Conversation.AccountID && lc.Peer.Username != nil {
					d.PeerName = *lc.Peer.Username
				}
			}
		}
	}
	link := func(before, dmBefore string) string {
		u := url.Values{}
		if d.Range != "7d" {
			u.Set("range", d.Range)
		}
		if before != "" {
			u.Set("before", before)
		}
		if dmBefore != "" {
			u.Set("dm_before", dmBefore)
		}
		if len(u) == 0 {
			return "/inbox"
		}
		return "/inbox?" + u.Encode()
	}
	if d.Comments.HasMore && d.Comments.NextBefore != "" {
		d.OlderComments = link(d.Comments.NextBefore, dmBefore) + "#comments-h"
	}
	if before != "" {
		d.NewestComments = link("", dmBefore) + "#comments-h"
	}
	if d.DMs.HasMore && d.DMs.NextBefore != "" {
		d.OlderDMs = link(before, d.DMs.NextBefore) + "#dms-h"
	}
	if dmBefore != "" {
		d.NewestDMs = link(before, "") + "#dms-h"
	}
	if d.Names, err = p.accountNames(v.Scope); err != nil {
		return p.storeError(c, err)
	}
	v.Data = d
	return p.render(c, http.StatusOK, "inbox", v)
}

// accountNames are the names of a workspace's accounts, by id (for the pages that name the
// accounts of what they list).
func (p *pages) accountNames(scope string) (map[string]string, error) {
	names := map[string]string{}
	err := p.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.AccountsIn(scope)
		for _, a := range list {
			if a.Username != nil {
				names[a.ID] = *a.Username
			}
		}
		return err
	})
	return names, err
}

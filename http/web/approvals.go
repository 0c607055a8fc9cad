package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// approvalsShown caps the approval queue's page: the oldest requests first would need a
// workspace with more waiting than anyone reviews at once.
const approvalsShown = 100

// pendingPost is one post of the approval queue, with what each network would receive.
type pendingPost struct {
	Post *persistence.Post
	Late bool
	// By names who asked, as people read it: the key's name, else the request's own words.
	By       string
	Previews []pendingPreview
}

// pendingPreview is a target's preview: its network, account, and the text and media it sends.
type pendingPreview struct {
	Name, Username, Content string
	Media, Length           int
}

type approvalsData struct {
	Posts []pendingPost
	Total int
	// CanApprove: the signed-in person may approve (an editor sees the queue, without the buttons).
	CanApprove bool
}

// approvals is GET /approvals: the workspace's posts waiting for approval, each with its
// networks' previews, Approve, Request changes (a reason) and a link for a client; late ones
// (a schedule whose time has passed) flagged. The buttons call /api/posts/:id/approve, /reject
// and /approval-link.
func (p *pages) approvals(c *echo.Context) error {
	v := p.newView(c, "Approvals", "approvals", nil)
	d := approvalsData{CanApprove: server.Principal(c).CanApprove()}
	now := p.Now()
	err := p.Store.View(func(tx *persistence.Tx) error {
		posts, total, err := tx.ListPosts(persistence.PostFilter{Scope: v.Scope, Status: persistence.PostPendingApproval, Limit: approvalsShown})
		if err != nil {
			return err
		}
		d.Total = total
		for _, po := range posts {
			pp := pendingPost{Post: po, Late: late(po, now), By: requestedBy(tx, po.Approval.RequestedBy)}
			for _, t := range po.Targets {
				pv := pendingPreview{Name: networkName(t.Platform), Content: t.EffectiveContent(po), Media: len(t.EffectiveMedia(po))}
				pv.Length = len([]rune(pv.Content))
				if a, err := tx.Account(t.AccountID); err == nil && a.Username != nil {
					pv.Username = *a.Username
				}
				pp.Previews = append(pp.Previews, pv)
			}
			d.Posts = append(d.Posts, pp)
		}
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	v.Data = d
	return p.render(c, http.StatusOK, "approvals", v)
}

// late reports whether a pending schedule's time has passed (actors/post.Late, which this
// package does not import).
func late(p *persistence.Post, now time.Time) bool {
	a := p.Approval
	return a != nil && a.Action == persistence.ApprovalSchedule && a.ScheduledAt != nil && !a.ScheduledAt.After(now)
}

// requestedBy names the requester of an approval: "API key “name”" for a key, "you" for the
// signed-in user's own session, else the stored words (an OAuth client).
func requestedBy(tx *persistence.Tx, by string) string {
	if id, ok := strings.CutPrefix(by, "key:"); ok {
		if k, err := tx.APIKey(id); err == nil {
			return "API key “" + k.Name + "”"
		}
	}
	if id, ok := strings.CutPrefix(by, "oauth:"); ok {
		return "AI connector " + id
	}
	return strings.TrimPrefix(by, "user:")
}

package api

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// Approvals (docs/workspaces.md, "Approvals"; the state machine is actors/post's approval.go).
// In a workspace with approval_required, a publish or schedule by a principal that cannot
// approve (auth.Principal.CanApprove) is held: the post is checked as it would be, then waits in
// pending_approval. POST /v1/posts/:id/approve and /reject need posts:write (the route) and a
// principal that may approve (a full key, or one with posts:approve; never an OAuth token); an approval link
// lets someone without a Herald login decide through a page (approvalpage.go).

// Approval link lifetimes, in hours.
const (
	DefaultApprovalLinkHours = 72
	MaxApprovalLinkHours     = 168
)

// ApprovalDetail is a pending post's request, in its detail.
type ApprovalDetail struct {
	RequestedAction string     `json:"requested_action"`
	RequestedAt     time.Time  `json:"requested_at"`
	RequestedBy     string     `json:"requested_by"`
	ScheduledAt     *time.Time `json:"scheduled_at"`
	// Late: a schedule whose time has passed while it waited; approving it publishes it now.
	Late bool `json:"late"`
}

// approvalDetail renders a pending post's request (nil for any other post).
func approvalDetail(p *persistence.Post, now time.Time) *ApprovalDetail {
	a := p.Approval
	if p.Status != persistence.PostPendingApproval || a == nil {
		return nil
	}
	return &ApprovalDetail{RequestedAction: a.Action, RequestedAt: a.RequestedAt, RequestedBy: a.RequestedBy,
		ScheduledAt: a.ScheduledAt, Late: post.Late(p, now)}
}

// requester names the principal in a post's approval request and log: its key, its OAuth
// client's connector key, or the person signed in (a member of the team, or its owner) by
// e-mail.
func requester(p *auth.Principal) string {
	switch {
	case p.OAuth() && p.Key != nil:
		return "oauth:" + p.Key.ClientID
	case p.Key != nil:
		return "key:" + p.Key.ID
	case p.Member != nil:
		return "user:" + p.Member.Email
	}
	return "user:" + p.User.Email
}

// requesterWords are a requester's name in a sentence: "API key <id>", "AI connector <client>",
// or the person's e-mail.
func requesterWords(by string) string {
	if id, ok := strings.CutPrefix(by, "key:"); ok {
		return "API key " + id
	}
	if id, ok := strings.CutPrefix(by, "oauth:"); ok {
		return "AI connector " + id
	}
	return strings.TrimPrefix(by, "user:")
}

// approvalHold is the Hold of a publish or schedule by the request's principal: nil when it may approve
// or its workspace does not require approval.
func (h *handlers) approvalHold(c *echo.Context) (*post.Hold, error) {
	p := server.Principal(c)
	if p.CanApprove() {
		return nil, nil
	}
	var w *persistence.Workspace
	if err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		w, err = tx.Workspace(p.User.ID, p.WorkspaceID)
		return err
	}); err != nil {
		if errors.Is(err, persistence.ErrNotFound) {
			return nil, apierr.NotFound("workspace " + p.WorkspaceID)
		}
		return nil, h.storeError(c, err)
	}
	if !w.ApprovalRequired {
		return nil, nil
	}
	return &post.Hold{By: requester(p)}, nil
}

// heldAnswer is the answer of a held publish: the post (status pending_approval), at Location.
func (h *handlers) heldAnswer(door string, p *persistence.Post) ([]byte, string, error) {
	body, err := json.Marshal(scheduledPost{h.detail(p), p.ID})
	return body, door + "/posts/" + p.ID, err
}

// requireApprover refuses a principal that may not approve: 403 forbidden with the challenge a
// key outside its scopes gets.
func requireApprover(c *echo.Context) error {
	if server.Principal(c).CanApprove() {
		return nil
	}
	return apierr.New(http.StatusForbidden, apierr.CodeForbidden,
		"approving or rejecting a post needs the %s scope; this credential cannot approve", auth.ScopePostsApprove).
		WithHeader("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+auth.ScopePostsApprove+`"`)
}

// approvalError maps the approval refusals of the post actor.
func (h *handlers) approvalError(c *echo.Context, err error) error {
	var np *post.NotPendingError
	if errors.As(err, &np) {
		return apierr.Validation("%s", np.Error())
	}
	return h.lifecycleError(c, err)
}

// approvePost serves POST /v1/posts/:id/approve: a held publish answers as a publish does (202
// with the job), a held schedule as a schedule does (200 with the post), a late one is published.
func (h *handlers) approvePost(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	if err := requireApprover(c); err != nil {
		return err
	}
	if err := h.backlogFull(); err != nil {
		return err
	}
	p := server.Principal(c)
	jobID := uuid.Must(uuid.NewV7()).String()
	r, err := ask[*post.ApproveReply](h, c, h.Posts.To(id), &post.Approve{Scope: p.Scope(), By: requester(p), JobID: jobID, Quota: h.quota(c)})
	if err != nil {
		return h.approvalError(c, err)
	}
	if r.Job == nil {
		return c.JSON(http.StatusOK, scheduledPost{h.detail(r.Post), r.Post.ID})
	}
	c.Response().Header().Set("Location", jobLocation(c, jobID))
	return c.JSON(http.StatusAccepted, &PublishAccepted{PostID: id, TrackingID: jobID, Status: "queued", StreamURL: streamURL(c, jobID)})
}

// rejectPost serves POST /v1/posts/:id/reject {reason}: the post returns to draft.
func (h *handlers) rejectPost(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	if err := requireApprover(c); err != nil {
		return err
	}
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	reason, err := rejectionReason(o)
	if err != nil {
		return err
	}
	p := server.Principal(c)
	r, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.Reject{Scope: p.Scope(), By: requester(p), Reason: reason})
	if err != nil {
		return h.approvalError(c, err)
	}
	return c.JSON(http.StatusOK, h.detail(r.Post))
}

// rejectionReason reads reason: required, not blank, at most post.MaxRejectionReason bytes.
func rejectionReason(o object) (string, error) {
	r, err := o.str("reason", true)
	if err != nil {
		return "", err
	}
	return checkReason(*r)
}

func checkReason(r string) (string, error) {
	r = strings.TrimSpace(r)
	switch {
	case r == "":
		return "", apierr.Validation("reason: must say what to change")
	case len(r) > post.MaxRejectionReason:
		return "", apierr.Validation("reason: at most %d bytes", post.MaxRejectionReason)
	}
	return r, nil
}

// ApprovalLink is the answer of POST /v1/posts/:id/approval-link.
type ApprovalLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// approvalLink serves POST /v1/posts/:id/approval-link {expires_in_hours}: a new single-use link
// for a pending post, which revokes the one before. Only the token's SHA-256 is stored; the URL
// is shown once.
func (h *handlers) approvalLink(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	hours := DefaultApprovalLinkHours
	if raw, err := readBody(c); err != nil {
		return err
	} else if len(strings.TrimSpace(string(raw))) > 0 {
		o, err := parseObject(raw)
		if err != nil {
			return err
		}
		if o.has("expires_in_hours") {
			var n int
			if err := json.Unmarshal(o["expires_in_hours"], &n); err != nil || n < 1 || n > MaxApprovalLinkHours {
				return apierr.Validation("expires_in_hours: must be a whole number from 1 to %d", MaxApprovalLinkHours)
			}
			hours = n
		}
	}
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return apierr.Internal()
	}
	token := base64.RawURLEncoding.EncodeToString(tok)
	sum := sha256.Sum256([]byte(token))
	expires := h.Now().UTC().Add(time.Duration(hours) * time.Hour).Truncate(time.Second)
	if _, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.SetApprovalLink{Scope: server.Principal(c).Scope(), Hash: sum[:], ExpiresAt: expires}); err != nil {
		return h.approvalError(c, err)
	}
	return c.JSON(http.StatusCreated, ApprovalLink{URL: h.Server.BaseURL() + ApprovalPagePath(id, token), ExpiresAt: expires})
}

// approvalEvents are a post's approval steps as timeline events, one per target, in the order
// of the log: phase approval_requested, approved or rejected, tracking_id null.
func approvalEvents(p *persistence.Post) []PostEvent {
	var out []PostEvent
	for n, s := range p.ApprovalLog {
		msg := map[string]string{persistence.ApprovalRequested: "submitted for approval", persistence.ApprovalApproved: "approved",
			persistence.ApprovalRejected: "changes requested"}[s.Kind] + " by " + requesterWords(s.By)
		if s.Reason != "" {
			msg += ": " + s.Reason
		}
		for i, t := range p.Targets {
			out = append(out, PostEvent{ID: "approval." + strconv.Itoa(n) + "." + strconv.Itoa(i), Phase: s.Kind, Platform: t.Platform,
				ConnectedAccountID: t.AccountID, Message: msg, CreatedAt: s.At})
		}
	}
	return out
}

// mergeEvents merges the approval steps into the jobs' timeline by time, each list keeping its
// own order.
func mergeEvents(jobs, approvals []PostEvent) []PostEvent {
	if len(approvals) == 0 {
		return jobs
	}
	out := append(jobs, approvals...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

// respondHeld answers a held publish: 202 with the post (status pending_approval) and its
// Location. Its Idempotency-Key answer is stored after the post (a retry with the key replays it;
// a crash between the two lets a retry hold a second post, which nothing publishes unapproved).
func (h *handlers) respondHeld(c *echo.Context, p *persistence.Post, idem *post.Idempotency) error {
	if idem != nil && idem.Record != nil {
		// The answer stored with the hold, so that this answer and a retry's are the same.
		c.Response().Header().Set("Location", idem.Record.Location)
		return c.JSONBlob(http.StatusAccepted, idem.Record.Body)
	}
	body, location, err := h.heldAnswer(door(c), p)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", location)
	return c.JSONBlob(http.StatusAccepted, body)
}

// heldIdempotency is the Idempotency-Key answer of a publish held for approval, built by the post
// actor from the post as held and stored in the hold's transaction (nil without a key). It keeps
// nothing of the request's context, which the actor may outlive.
func (h *handlers) heldIdempotency(c *echo.Context, idem *post.Idempotency, fp []byte) *post.Idempotency {
	if idem == nil {
		return nil
	}
	prefix := door(c)
	return &post.Idempotency{Key: idem.Key, Held: func(p *persistence.Post) (*persistence.IdempotencyRecord, error) {
		body, location, err := h.heldAnswer(prefix, p)
		if err != nil {
			return nil, err
		}
		return &persistence.IdempotencyRecord{Fingerprint: fp, Status: http.StatusAccepted, Body: body, Location: location, CreatedAt: h.Now().UTC()}, nil
	}}
}

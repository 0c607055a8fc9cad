package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// The approval page: GET /approve/:postId/:token shows a pending post and each network's preview
// to someone without a Herald login, with Approve and Request changes; POST to the same path
// decides. The link's random token is the only authority (its SHA-256 is on the post): the form
// carries no session and so no CSRF cookie, and a decision needs the POST with the token and the
// decision named, so that a mail scanner's or browser's GET prefetch only reads the page. A
// link works once, until it expires, while it is the post's latest (a new one revokes it).
const approvalPagePrefix = "/approve/"

// ApprovalPagePath is the path of a post's approval page for a token.
func ApprovalPagePath(postID, token string) string {
	return approvalPagePrefix + postID + "/" + url.PathEscape(token)
}

func (h *handlers) registerApprovalPage(e *echo.Echo) {
	g := e.Group(strings.TrimSuffix(approvalPagePrefix, "/"), h.Server.SecurityHeaders, noReferrer)
	g.GET("/:postId/:token", h.approvalPage)
	g.POST("/:postId/:token", h.approvalDecide)
}

// noReferrer keeps the page's URL, token included, out of the Referer of anything it links to.
func noReferrer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		c.Response().Header().Set("Referrer-Policy", "no-referrer")
		return next(c)
	}
}

// approvalView is what the page shows.
type approvalView struct {
	Title   string
	Message string // a page saying why nothing can be done, or what was done
	Post    *persistence.Post
	Action  string
	At      *time.Time
	Late    bool
	Targets []TargetCheck
	Reason  string
	Error   string
}

var approvalTmpl = template.Must(template.New("approval").Funcs(template.FuncMap{
	"utc":     func(t *time.Time) string { return t.UTC().Format("Mon 2 Jan 2006, 15:04 UTC") },
	"network": func(p string) string { return platforms.Platform(p).Name() },
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{{.Title}} · Herald</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/app.css">
</head>
<body>
<main id="main" class="stack approval-page">
<h1>{{.Title}}</h1>
{{- if .Message}}
<p class="card">{{.Message}}</p>
{{- else}}
<p>{{if eq .Action "schedule"}}This post is to be published at <strong>{{utc .At}}</strong>{{if .Late}} — that time has passed: approving publishes it now{{end}}.{{else}}This post is to be published as soon as it is approved.{{end}}</p>
{{- range .Targets}}
<section class="card">
<h2>{{network .Platform}}</h2>
{{- with .Preview}}
<figure class="preview">
<p class="preview-length{{if gt .Length.Used .Length.Max}} over{{end}}">{{.Length.Used}} of {{.Length.Max}} characters</p>
<p class="preview-text">{{.Content}}</p>
{{- if .Media}}<p class="preview-media">{{len .Media}} media: {{range $i, $m := .Media}}{{if $i}}, {{end}}{{$m.ContentType}}{{if $m.AltText}} ({{$m.AltText}}){{end}}{{end}}</p>{{end}}
</figure>
{{- end}}
{{- range .Errors}}<p class="target-error">{{.Message}}</p>{{end}}
</section>
{{- end}}
{{- if .Error}}<p class="flash" role="alert">{{.Error}}</p>{{end}}
<form method="post" class="card stack">
<input type="hidden" name="decision" value="approve">
<div class="actions"><button type="submit">Approve</button></div>
</form>
<form method="post" class="card stack">
<input type="hidden" name="decision" value="reject">
<label for="reason">What should change?</label>
<textarea id="reason" name="reason" rows="3" maxlength="1000" required>{{.Reason}}</textarea>
<div class="actions"><button type="submit" class="secondary">Request changes</button></div>
</form>
{{- end}}
</main>
</body>
</html>
`))

// linkPost reads the post of an approval link and says why the link does not work, if it does
// not (as the post actor decides when it is used).
func (h *handlers) linkPost(c *echo.Context) (*persistence.Post, []byte, error) {
	id := c.Param("postId")
	token := c.Param("token")
	if _, err := uuid.Parse(id); err != nil || token == "" || len(token) > 100 {
		return nil, nil, post.ErrLinkRevoked
	}
	sum := sha256.Sum256([]byte(token))
	var p *persistence.Post
	if err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		p, err = tx.Post(id)
		return err
	}); err != nil {
		if errors.Is(err, persistence.ErrNotFound) {
			return nil, nil, post.ErrLinkRevoked
		}
		return nil, nil, err
	}
	l := p.ApprovalLink
	switch {
	case l == nil || subtle.ConstantTimeCompare(l.Hash, sum[:]) != 1:
		return nil, nil, post.ErrLinkRevoked
	case l.UsedAt != nil:
		return nil, nil, post.ErrLinkUsed
	case !h.Now().Before(l.ExpiresAt):
		return nil, nil, post.ErrLinkExpired
	case p.Status != persistence.PostPendingApproval:
		return nil, nil, &post.NotPendingError{Status: p.Status}
	}
	return p, sum[:], nil
}

// linkRefusal is the page of a link that does not work; nil for any other error.
func linkRefusal(err error) *approvalView {
	var np *post.NotPendingError
	switch {
	case errors.Is(err, post.ErrLinkRevoked):
		return &approvalView{Title: "Link no longer valid", Message: "This approval link was replaced by a newer one or revoked. Ask the sender for a new link. Nothing was changed."}
	case errors.Is(err, post.ErrLinkUsed):
		return &approvalView{Title: "Link already used", Message: "This approval link was already used; it works once. Nothing was changed."}
	case errors.Is(err, post.ErrLinkExpired):
		return &approvalView{Title: "Link expired", Message: "This approval link has expired. Ask the sender for a new link. Nothing was changed."}
	case errors.As(err, &np):
		return &approvalView{Title: "Nothing to approve", Message: "This post is no longer waiting for approval. Nothing was changed."}
	}
	return nil
}

func (h *handlers) renderApproval(c *echo.Context, status int, v *approvalView) error {
	var b strings.Builder
	if err := approvalTmpl.Execute(&b, v); err != nil {
		return err
	}
	return c.HTML(status, b.String())
}

// pageError renders a refusal, or the generic failure page.
func (h *handlers) pageError(c *echo.Context, err error) error {
	if v := linkRefusal(err); v != nil {
		status := http.StatusGone
		if strings.HasPrefix(v.Title, "Nothing") {
			status = http.StatusConflict
		}
		return h.renderApproval(c, status, v)
	}
	h.Log.Error("approval page failed", "error", err)
	return h.renderApproval(c, http.StatusServiceUnavailable, &approvalView{Title: "Try again shortly", Message: "Herald could not answer just now. Nothing was changed; try again in a moment."})
}

// approvalPage serves GET: it only reads, whatever the client (a prefetch included).
func (h *handlers) approvalPage(c *echo.Context) error {
	p, _, err := h.linkPost(c)
	if err != nil {
		return h.pageError(c, err)
	}
	return h.renderApproval(c, http.StatusOK, h.approvalView(c, p, "", ""))
}

func (h *handlers) approvalView(c *echo.Context, p *persistence.Post, reason, msg string) *approvalView {
	v := &approvalView{Title: "Approve this post", Post: p, Action: p.Approval.Action, At: p.Approval.ScheduledAt, Late: post.Late(p, h.Now()), Reason: reason, Error: msg}
	v.Targets = h.previews(c, p)
	return v
}

// previews are each target's check with its preview, as POST /v1/posts/validate gives them
// (nil when they cannot be read: the page still lets the post be decided).
func (h *handlers) previews(c *echo.Context, p *persistence.Post) []TargetCheck {
	scope := p.Scope()
	cache := mediaCache{}
	files, err := h.resolveMedia(c, scope, "media", p.MediaIDs, cache, func(error) {})
	if err != nil {
		return nil
	}
	out, err := h.checkTargets(c, scope, p, files, cache, true, true)
	if err != nil {
		return nil
	}
	return out
}

// approvalDecide serves POST: decision=approve or decision=reject with a reason.
func (h *handlers) approvalDecide(c *echo.Context) error {
	p, hash, err := h.linkPost(c)
	if err != nil {
		return h.pageError(c, err)
	}
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		return h.renderApproval(c, http.StatusBadRequest, h.approvalView(c, p, "", "The form could not be read; try again."))
	}
	const by = "approval link"
	switch r.PostForm.Get("decision") {
	case "approve":
		q, err := h.quotaOf(p.UserID)
		if err != nil {
			return h.pageError(c, err)
		}
		_, err = ask[*post.ApproveReply](h, c, h.Posts.To(p.ID), &post.Approve{Link: hash, By: by, JobID: uuid.Must(uuid.NewV7()).String(), Quota: q})
		if err != nil {
			var qe *post.QuotaExceededError
			if errors.As(err, &qe) {
				return h.renderApproval(c, http.StatusForbidden, h.approvalView(c, p, "", "The post cannot be published now: "+qe.Error()+". Nothing was changed."))
			}
			return h.pageError(c, err)
		}
		return h.renderApproval(c, http.StatusOK, &approvalView{Title: "Approved", Message: "Thank you: the post is approved and goes out as planned."})
	case "reject":
		reason, err := checkReason(r.PostForm.Get("reason"))
		if err != nil {
			return h.renderApproval(c, http.StatusBadRequest, h.approvalView(c, p, r.PostForm.Get("reason"), "Say what should change (at most 1000 characters)."))
		}
		if _, err := ask[*post.Reply](h, c, h.Posts.To(p.ID), &post.Reject{Link: hash, By: by, Reason: reason}); err != nil {
			return h.pageError(c, err)
		}
		return h.renderApproval(c, http.StatusOK, &approvalView{Title: "Changes requested", Message: "Thank you: your request was sent back with the post."})
	}
	return h.renderApproval(c, http.StatusBadRequest, h.approvalView(c, p, "", "Choose Approve or Request changes."))
}

// quotaOf is the plan quota of a post's owner, for an approval made through a link (no principal).
func (h *handlers) quotaOf(userID string) (*post.Quota, error) {
	if h.FreePostQuota <= 0 {
		return nil, nil
	}
	var u *persistence.User
	if err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		u, err = tx.User(userID)
		return err
	}); err != nil {
		return nil, err
	}
	if u.Plan != "free" {
		return nil, nil
	}
	return &post.Quota{Limit: h.FreePostQuota, Month: h.Now().UTC().Format("2006-01")}, nil
}

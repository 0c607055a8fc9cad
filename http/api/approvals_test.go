package api_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

// approvals is a Herald whose user has a workspace that requires approval, with two accounts in
// it, and keys: full (may approve), editor (bound to it, limited to posts:write and posts:read).
type approvals struct {
	*apptest.Herald
	ws       string
	accounts []string
	editor   string
	ws2      string // a workspace of the same user without approval
}

func newApprovals(t *testing.T) *approvals {
	t.Helper()
	h := apptest.Start(t, apptest.Options{})
	a := &approvals{Herald: h, ws: uuid.Must(uuid.NewV7()).String(), ws2: uuid.Must(uuid.NewV7()).String()}
	ctx := context.Background()
	require.NoError(t, h.App.Store.Update(ctx, func(tx *persistence.Tx) error {
		if err := tx.PutWorkspace(&persistence.Workspace{ID: a.ws, UserID: h.User.ID, Name: "Client A", ApprovalRequired: true, CreatedAt: time.Now().UTC()}); err != nil {
			return err
		}
		if err := tx.PutWorkspace(&persistence.Workspace{ID: a.ws2, UserID: h.User.ID, Name: "Client B", CreatedAt: time.Now().UTC()}); err != nil {
			return err
		}
		for _, p := range []string{"linkedin", "bluesky"} {
			name := "client-" + p
			acc := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: h.User.ID, WorkspaceID: a.ws, Platform: p, Username: &name,
				IsActive: true, CreatedAt: time.Now().UTC()}
			if err := tx.PutAccount(acc); err != nil {
				return err
			}
			a.accounts = append(a.accounts, acc.ID)
		}
		return nil
	}))
	a.editor = a.scopedKey(t, a.ws, auth.ScopePostsWrite, auth.ScopePostsRead)
	return a
}

// scopedKey makes a key of the user bound to workspace ws (none: "") and limited to scopes.
func (a *approvals) scopedKey(t *testing.T, ws string, scopes ...string) string {
	t.Helper()
	k, err := auth.CreateKey(context.Background(), a.App.Store, a.User.Email, "scoped", 0, time.Now())
	require.NoError(t, err)
	require.NoError(t, a.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		rec, err := tx.APIKey(k.ID)
		if err != nil {
			return err
		}
		rec.WorkspaceID, rec.Scopes = ws, scopes
		return tx.PutAPIKey(rec, nil)
	}))
	a.App.Auth.Invalidate()
	return k.Key
}

// in is the header that acts in workspace ws.
func in(ws string) http.Header { return http.Header{"Herald-Workspace": {ws}} }

func (a *approvals) post(t *testing.T) map[string]any {
	t.Helper()
	return map[string]any{"content": "Our spring menu is out", "platforms": a.accounts}
}

func (a *approvals) detail(t *testing.T, id string) map[string]any {
	t.Helper()
	r := a.DoKey(a.Key, "GET", "/v1/posts/"+id, nil, in(a.ws))
	require.Equal(t, 200, r.Status, string(r.Body))
	return r.JSON(t)
}

// A publish by a key without posts:approve in a workspace that requires approval is held: the
// post waits with its request, no job; only a key that may approve carries it out, once.
func TestHeldPublishIsApprovedByAnApprover(t *testing.T) {
	t.Parallel()
	a := newApprovals(t)
	r := a.DoKey(a.editor, "POST", "/v1/posts/publish", a.post(t), nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	held := r.JSON(t)
	id := held["id"].(string)
	require.Equal(t, "pending_approval", held["status"])
	require.Equal(t, id, held["post_id"])
	require.Nil(t, held["tracking_id"], "no job")
	require.Equal(t, "/v1/posts/"+id, r.Header.Get("Location"))
	approval := held["approval"].(map[string]any)
	require.Equal(t, "publish", approval["requested_action"])
	require.Equal(t, false, approval["late"])
	require.True(t, strings.HasPrefix(approval["requested_by"].(string), "key:"))

	list := a.DoKey(a.Key, "GET", "/v1/posts?status=pending_approval", nil, in(a.ws)).JSON(t)
	require.Len(t, list["data"], 1)
	require.Equal(t, 1.0, list["pagination"].(map[string]any)["total"])

	// The editor's key cannot approve it, nor reject it; nothing changes.
	for _, path := range []string{"/approve", "/reject"} {
		r = a.DoKey(a.editor, "POST", "/v1/posts/"+id+path, map[string]any{"reason": "no"}, nil)
		require.Equal(t, 403, r.Status, string(r.Body))
		require.Equal(t, "forbidden", r.ErrorCode(t))
		require.Contains(t, r.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
	}
	// A key with posts:approve would; one of another workspace cannot reach the post at all.
	r = a.DoKey(a.Key, "POST", "/v1/posts/"+id+"/approve", nil, in(a.ws2))
	require.Equal(t, 403, r.Status, "the post is in another workspace: %s", r.Body)
	require.Equal(t, "pending_approval", a.detail(t, id)["status"])

	approver := a.scopedKey(t, a.ws, auth.ScopePostsWrite, auth.ScopePostsApprove)
	r = a.DoKey(approver, "POST", "/v1/posts/"+id+"/approve", nil, nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	job := r.JSON(t)
	require.Equal(t, "queued", job["status"])
	require.Equal(t, "/v1/jobs/"+job["tracking_id"].(string), r.Header.Get("Location"))
	d := a.detail(t, id)
	require.Equal(t, job["tracking_id"], d["tracking_id"])
	require.Nil(t, d["approval"])

	r = a.DoKey(approver, "POST", "/v1/posts/"+id+"/approve", nil, nil)
	require.Equal(t, 400, r.Status, "approved once: %s", r.Body)
	require.Equal(t, "validation_error", r.ErrorCode(t))

	evs := a.DoKey(a.Key, "GET", "/v1/posts/"+id+"/events", nil, in(a.ws)).JSON(t)["events"].([]any)
	phases := map[string]int{}
	for _, e := range evs {
		phases[e.(map[string]any)["phase"].(string)]++
	}
	require.Equal(t, 2, phases["approval_requested"], "one per target")
	require.Equal(t, 2, phases["approved"])
	require.Equal(t, 2, phases["queued"])
}

// A key that may approve publishes at once, in the same workspace; and a workspace without
// approval_required holds nothing, whoever publishes.
func TestApproversAndOtherWorkspacesAreNotHeld(t *testing.T) {
	t.Parallel()
	a := newApprovals(t)
	r := a.DoKey(a.Key, "POST", "/v1/posts/publish", a.post(t), in(a.ws))
	require.Equal(t, 202, r.Status, string(r.Body))
	require.NotEmpty(t, r.JSON(t)["tracking_id"])

	name := "b-linkedin"
	acc := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: a.User.ID, WorkspaceID: a.ws2, Platform: "linkedin", Username: &name, IsActive: true, CreatedAt: time.Now().UTC()}
	require.NoError(t, a.App.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutAccount(acc) }))
	limited := a.scopedKey(t, a.ws2, auth.ScopePostsWrite)
	r = a.DoKey(limited, "POST", "/v1/posts/publish", map[string]any{"content": "hi", "platforms": []string{acc.ID}}, nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	require.NotEmpty(t, r.JSON(t)["tracking_id"])
}

// A held schedule: approved before its time it is scheduled (200, as a schedule answers);
// rejected, it returns to draft with the reason until it is submitted again. Bad input changes
// nothing.
func TestHeldScheduleRejectAndApprove(t *testing.T) {
	t.Parallel()
	a := newApprovals(t)
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	body := a.post(t)
	body["scheduledAt"] = at
	r := a.DoKey(a.editor, "POST", "/v1/posts/schedule", body, nil)
	require.Equal(t, 201, r.Status, string(r.Body))
	p := r.JSON(t)
	id := p["id"].(string)
	require.Equal(t, "pending_approval", p["status"])
	require.Equal(t, "schedule", p["approval"].(map[string]any)["requested_action"])
	require.Equal(t, at, p["approval"].(map[string]any)["scheduled_at"])

	for _, bad := range []any{map[string]any{}, map[string]any{"reason": "   "}, map[string]any{"reason": strings.Repeat("x", 1001)}, map[string]any{"reason": 3}} {
		r = a.DoKey(a.Key, "POST", "/v1/posts/"+id+"/reject", bad, in(a.ws))
		require.Equal(t, 400, r.Status, "%v: %s", bad, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t))
	}
	require.Equal(t, "pending_approval", a.detail(t, id)["status"])
	// A pending post is not edited, published or scheduled around its approval; it can be deleted.
	r = a.DoKey(a.Key, "PATCH", "/v1/posts/"+id, map[string]any{"content": "changed"}, in(a.ws))
	require.Equal(t, 400, r.Status, string(r.Body))

	r = a.DoKey(a.Key, "POST", "/v1/posts/"+id+"/reject", map[string]any{"reason": "Use the new logo"}, in(a.ws))
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "draft", r.JSON(t)["status"])
	d := a.detail(t, id)
	require.Equal(t, "Use the new logo", d["rejection_reason"])
	require.Nil(t, d["approval"])

	r = a.DoKey(a.editor, "POST", "/v1/posts/"+id+"/schedule", map[string]any{"scheduledAt": at}, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "pending_approval", r.JSON(t)["status"])
	require.Nil(t, a.detail(t, id)["rejection_reason"], "submitted again")

	r = a.DoKey(a.Key, "POST", "/v1/posts/"+id+"/approve", nil, in(a.ws))
	require.Equal(t, 200, r.Status, string(r.Body))
	s := r.JSON(t)
	require.Equal(t, "scheduled", s["status"])
	require.Equal(t, at, s["scheduled_at"])

	// Deleting a pending post works as for a draft.
	r = a.DoKey(a.editor, "POST", "/v1/posts/publish", a.post(t), nil)
	require.Equal(t, 202, r.Status)
	gone := r.JSON(t)["id"].(string)
	require.Equal(t, 204, a.DoKey(a.editor, "DELETE", "/v1/posts/"+gone, nil, nil).Status)
}

// approvalLink asks for a link for post id and returns its URL.
func (a *approvals) approvalLink(t *testing.T, id string, body any) string {
	t.Helper()
	r := a.DoKey(a.editor, "POST", "/v1/posts/"+id+"/approval-link", body, nil)
	require.Equal(t, 201, r.Status, string(r.Body))
	l := r.JSON(t)
	exp, err := time.Parse(time.RFC3339, l["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, exp, time.Now().Add(72*time.Hour), time.Minute)
	return l["url"].(string)
}

func (a *approvals) held(t *testing.T) string {
	t.Helper()
	r := a.DoKey(a.editor, "POST", "/v1/posts/publish", a.post(t), nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	return r.JSON(t)["id"].(string)
}

// page fetches an approval page with a plain client: no cookie, no key.
func page(t *testing.T, method, link string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, link, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, "no-referrer", res.Header.Get("Referrer-Policy"))
	require.Contains(t, res.Header.Get("Content-Security-Policy"), "default-src 'self'")
	return res.StatusCode, string(b)
}

// The approval link's page shows the post and each network's preview without a login; GETs
// (a prefetch) change nothing; the form approves once; a used link says so.
func TestApprovalLinkApprovesOnce(t *testing.T) {
	t.Parallel()
	a := newApprovals(t)
	id := a.held(t)
	link := a.approvalLink(t, id, nil)
	require.True(t, strings.HasPrefix(link, a.URL+"/approve/"+id+"/"), link)

	for range 3 { // a mail scanner's prefetch, the client's visit, a reload
		status, html := page(t, "GET", link, nil)
		require.Equal(t, 200, status, html)
		require.Contains(t, html, "Our spring menu is out")
		require.Contains(t, html, "LinkedIn")
		require.Contains(t, html, "Bluesky")
		require.Contains(t, html, "Approve")
		require.Contains(t, html, "Request changes")
	}
	require.Equal(t, "pending_approval", a.detail(t, id)["status"], "reading the page changes nothing")

	status, html := page(t, "POST", link, url.Values{"decision": {"maybe"}})
	require.Equal(t, 400, status, html)
	status, html = page(t, "POST", link, url.Values{"decision": {"reject"}, "reason": {"  "}})
	require.Equal(t, 400, status, html)
	require.Equal(t, "pending_approval", a.detail(t, id)["status"])

	status, html = page(t, "POST", link, url.Values{"decision": {"approve"}})
	require.Equal(t, 200, status, html)
	require.Contains(t, html, "approved")
	d := a.detail(t, id)
	require.NotNil(t, d["tracking_id"], "published: a job started")

	for _, m := range []string{"GET", "POST"} {
		status, html = page(t, m, link, url.Values{"decision": {"approve"}})
		require.Equal(t, 410, status, html)
		require.Contains(t, html, "already used")
	}
	require.Equal(t, d["tracking_id"], a.detail(t, id)["tracking_id"], "no second job")
}

// A new link revokes the one before; a rejection through the link returns the post to draft; a
// forged or expired token, or another post's, is refused by a page and changes nothing.
func TestApprovalLinkRevokedExpiredAndForged(t *testing.T) {
	t.Parallel()
	a := newApprovals(t)
	id := a.held(t)
	old := a.approvalLink(t, id, nil)
	cur := a.approvalLink(t, id, map[string]any{"expires_in_hours": 72})

	status, html := page(t, "POST", old, url.Values{"decision": {"approve"}})
	require.Equal(t, 410, status, html)
	require.Contains(t, html, "replaced by a newer one or revoked")
	other := a.held(t)
	forged := strings.Replace(cur, id, other, 1)
	status, _ = page(t, "POST", forged, url.Values{"decision": {"approve"}})
	require.Equal(t, 410, status, "a token is its own post's only")
	status, _ = page(t, "GET", a.URL+"/approve/not-a-uuid/x", nil)
	require.Equal(t, 410, status)
	require.Equal(t, "pending_approval", a.detail(t, id)["status"])
	require.Equal(t, "pending_approval", a.detail(t, other)["status"])

	status, html = page(t, "POST", cur, url.Values{"decision": {"reject"}, "reason": {"The price is wrong"}})
	require.Equal(t, 200, status, html)
	d := a.detail(t, id)
	require.Equal(t, "draft", d["status"])
	require.Equal(t, "The price is wrong", d["rejection_reason"])

	// Expired: the link's time is set in the past in the store (hours below 1 are refused).
	link := a.approvalLink(t, other, nil)
	require.NoError(t, a.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		p, err := tx.Post(other)
		if err != nil {
			return err
		}
		p.ApprovalLink.ExpiresAt = time.Now().Add(-time.Minute)
		return tx.PutPost(p, nil)
	}))
	status, html = page(t, "GET", link, nil)
	require.Equal(t, 410, status, html)
	require.Contains(t, html, "expired")

	// Bad requests for a link.
	for _, bad := range []any{map[string]any{"expires_in_hours": 0}, map[string]any{"expires_in_hours": 169}, map[string]any{"expires_in_hours": "x"}, map[string]any{"expires_in_hours": 1.5}} {
		r := a.DoKey(a.editor, "POST", "/v1/posts/"+other+"/approval-link", bad, nil)
		require.Equal(t, 400, r.Status, "%v: %s", bad, r.Body)
	}
	r := a.DoKey(a.editor, "POST", "/v1/posts/"+id+"/approval-link", nil, nil)
	require.Equal(t, 400, r.Status, "a draft takes no link: %s", r.Body)
}

// A campaign that publishes at once, created by a key that cannot approve in a workspace that
// requires approval, holds every post (no job); the campaign reads pending_approval, each post
// is approved alone, and cancelling deletes those still pending.
func TestHeldCampaign(t *testing.T) {
	t.Parallel()
	a := newApprovals(t)
	posts := []any{
		map[string]any{"content": "one", "platforms": a.accounts[:1]},
		map[string]any{"content": "two", "platforms": a.accounts[1:]},
	}
	r := a.DoKey(a.editor, "POST", "/v1/campaigns", map[string]any{"name": "Spring", "publish": "now", "posts": posts}, nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	acc := r.JSON(t)
	id := acc["campaign_id"].(string)
	var ids []string
	for _, p := range acc["posts"].([]any) {
		require.Nil(t, p.(map[string]any)["tracking_id"], "held: no job")
		ids = append(ids, p.(map[string]any)["post_id"].(string))
	}
	camp := a.DoKey(a.Key, "GET", "/v1/campaigns/"+id, nil, in(a.ws)).JSON(t)
	require.Equal(t, "pending_approval", camp["status"])
	require.Equal(t, 2.0, camp["totals"].(map[string]any)["pending_approval"])
	require.Equal(t, "publish", a.detail(t, ids[0])["approval"].(map[string]any)["requested_action"])

	r = a.DoKey(a.Key, "POST", "/v1/posts/"+ids[0]+"/approve", nil, in(a.ws))
	require.Equal(t, 202, r.Status, string(r.Body))
	r = a.DoKey(a.Key, "DELETE", "/v1/campaigns/"+id, nil, in(a.ws))
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, []any{ids[1]}, r.JSON(t)["cancelled"])
}

// A held publish with an Idempotency-Key: its answer is stored with the hold, in the same
// transaction, so the same key answers the same bytes and holds no second post; another body with
// that key is a conflict. The same for a held publish of an existing draft.
func TestHeldPublishIsIdempotent(t *testing.T) {
	t.Parallel()
	a := newApprovals(t)
	key := http.Header{"Idempotency-Key": {"held-" + uuid.NewString()}}
	first := a.DoKey(a.editor, "POST", "/v1/posts/publish", a.post(t), key)
	require.Equal(t, 202, first.Status, string(first.Body))
	require.Equal(t, "pending_approval", first.JSON(t)["status"])
	again := a.DoKey(a.editor, "POST", "/v1/posts/publish", a.post(t), key)
	require.Equal(t, 202, again.Status, string(again.Body))
	require.Equal(t, string(first.Body), string(again.Body), "the stored answer")
	require.Equal(t, first.Header.Get("Location"), again.Header.Get("Location"))
	list := a.DoKey(a.Key, "GET", "/v1/posts?status=pending_approval", nil, in(a.ws)).JSON(t)
	require.Len(t, list["data"], 1, "one post held")
	other := a.post(t)
	other["content"] = "Another text"
	conflict := a.DoKey(a.editor, "POST", "/v1/posts/publish", other, key)
	require.Equal(t, 422, conflict.Status, string(conflict.Body))
	require.Equal(t, "idempotency_conflict", conflict.ErrorCode(t))

	draft := a.DoKey(a.editor, "POST", "/v1/posts", a.post(t), nil)
	require.Equal(t, 201, draft.Status, string(draft.Body))
	id := draft.JSON(t)["id"].(string)
	key2 := http.Header{"Idempotency-Key": {"held-" + uuid.NewString()}}
	first = a.DoKey(a.editor, "POST", "/v1/posts/"+id+"/publish", nil, key2)
	require.Equal(t, 202, first.Status, string(first.Body))
	again = a.DoKey(a.editor, "POST", "/v1/posts/"+id+"/publish", nil, key2)
	require.Equal(t, 202, again.Status, string(again.Body))
	require.Equal(t, string(first.Body), string(again.Body))
	require.Equal(t, "pending_approval", a.detail(t, id)["status"])
}

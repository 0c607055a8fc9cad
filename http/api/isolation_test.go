package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// The isolation of workspaces: every kind of object made in workspace A of a user is out of
// reach of the user's other workspaces and of another user, through both doors and MCP.

// boundKey creates a key of userID bound to workspace (none when "") and limited to scopes
// (full access when none).
func boundKey(t *testing.T, h *apptest.Herald, userID, workspace string, scopes ...string) string {
	t.Helper()
	k, err := auth.CreateUserKey(context.Background(), h.App.Store, userID, "isolation", 0, time.Now())
	require.NoError(t, err)
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		rec, err := tx.APIKey(k.ID)
		if err != nil {
			return err
		}
		rec.WorkspaceID, rec.Scopes = workspace, scopes
		return tx.PutAPIKey(rec, nil)
	}))
	return k.Key
}

// simAccount connects an account of userID in workspace to a new user of the simulator.
func simAccount(t *testing.T, h *apptest.Herald, userID, workspace string, p platforms.Platform, handle string) *persistence.Account {
	t.Helper()
	body, err := json.Marshal(map[string]string{"platform": string(p), "handle": handle})
	require.NoError(t, err)
	resp, err := http.Post(h.App.Sim.BaseURL()+"/_sim/accounts", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var creds platforms.Credentials
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&creds))
	r, err := actors.Ask[*account.Reply](context.Background(), h.App.Accounts.To(uuid.Must(uuid.NewV7()).String()), &account.Create{
		Account: &persistence.Account{UserID: userID, WorkspaceID: workspace, Platform: string(p), Username: &handle, IsActive: true,
			CreatedAt: time.Now().UTC(), NetworkUserID: creds.UserID},
		Creds: creds,
	})
	require.NoError(t, err)
	return r.Account
}

// door sends requests as one principal: a key on /v1 or a signed-in browser on /api, with
// Herald-Workspace when ws is set.
type door struct {
	name string
	key  string
	br   *apptest.Browser
	ws   string
	// br with key: the key sent from a browser without a session.
	// own is an account of the door's workspace; pubs, how many publications it has.
	own  string
	pubs float64
}

func (d door) do(h *apptest.Herald, method, path string, body any) *apptest.Response {
	h.T.Helper()
	hdr := http.Header{}
	if d.ws != "" {
		hdr.Set(server.WorkspaceHeader, d.ws)
	}
	if d.br == nil {
		return h.DoKey(d.key, method, "/v1"+path, body, hdr)
	}
	if d.key != "" { // a key sent as it is, its answer not checked against the document
		hdr.Set("Authorization", "Bearer "+d.key)
		return d.br.Send(method, "/v1"+path, body, hdr)
	}
	if method != "GET" {
		hdr.Set("X-Csrf-Token", d.br.CSRF)
	}
	return d.br.Send(method, "/api"+path, body, hdr)
}

// isolationFixture is workspace A's objects, and what is elsewhere.
type isolationFixture struct {
	h                     *apptest.Herald
	wsA, wsB, wsV         string
	vKey                  string
	xA, bskyA, bskyB      *persistence.Account
	draftA, pubA, jobA    string
	pubTargetX            string // the publication id of pubA's X target
	campaignA, campaignPo string
	mediaA, webhookA      string
	commentA, convA       string
	postB                 string
	markA, markB          string
	v                     *persistence.User
	// mediaKey and mediaFile are the storage key and file name of A's media (confirm's input).
	mediaKey, mediaFile string
	// elsewhere receives the events of the webhooks of B, of the user's main and of V.
	elsewhere *webhooktest.Receiver
}

func (f *isolationFixture) inA() http.Header { return http.Header{server.WorkspaceHeader: {f.wsA}} }

// doA sends a request with the user's key in workspace A and requires status.
func (f *isolationFixture) doA(status int, method, path string, body any) map[string]any {
	f.h.T.Helper()
	r := f.h.DoKey(f.h.Key, method, "/v1"+path, body, f.inA())
	require.Equal(f.h.T, status, r.Status, "%s %s: %s", method, path, r.Body)
	if len(r.Body) == 0 {
		return nil
	}
	return r.JSON(f.h.T)
}

func newIsolationFixture(t *testing.T) *isolationFixture {
	ca := webhooktest.NewCA(t)
	h := apptest.Start(t, apptest.Options{Demo: true, Config: apptest.WithReceivers(ca)})
	rcv := webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	f := &isolationFixture{h: h, markA: "only-in-A-" + uuid.NewString()[:8], markB: "only-in-B-" + uuid.NewString()[:8]}
	u := h.User
	f.wsA, f.wsB = putWorkspace(t, h, u.ID, "Client A").ID, putWorkspace(t, h, u.ID, "Client B").ID
	f.v, f.vKey = h.NewUser("v@example.com", "pro")
	f.wsV = putWorkspace(t, h, f.v.ID, "V's client").ID
	f.xA = simAccount(t, h, u.ID, f.wsA, platforms.X, "client-a-x")
	f.bskyA = simAccount(t, h, u.ID, f.wsA, platforms.Bluesky, "client-a-bsky")
	f.bskyB = simAccount(t, h, u.ID, f.wsB, platforms.Bluesky, "client-b-bsky")

	// Webhooks elsewhere, subscribed before anything happens in A.
	f.elsewhere = webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	for _, w := range []struct {
		key string
		hdr http.Header
	}{{h.Key, http.Header{server.WorkspaceHeader: {f.wsB}}}, {h.Key, nil}, {f.vKey, nil}} {
		r := h.DoKey(w.key, "POST", "/v1/webhooks", map[string]any{"url": f.elsewhere.URL, "events": persistence.WebhookEvents}, w.hdr)
		require.Equal(t, 201, r.Status, string(r.Body))
	}
	f.webhookA = f.doA(201, "POST", "/webhooks", map[string]any{"url": rcv.URL, "events": persistence.WebhookEvents})["id"].(string)
	p := f.doA(200, "POST", "/media/presign", map[string]any{"filename": "a.png", "content_type": "image/png", "size_bytes": len(apptest.PNGFile)})
	require.Equal(t, 200, h.RawPut(p["upload_url"].(string), "image/png", apptest.PNGFile, int64(len(apptest.PNGFile)), nil).Status)
	f.mediaKey, f.mediaFile = p["key"].(string), p["storage_filename"].(string)
	f.mediaA = f.doA(201, "POST", "/media/confirm", map[string]any{"key": p["key"], "storage_filename": p["storage_filename"],
		"original_filename": "a.png", "content_type": "image/png", "size_bytes": len(apptest.PNGFile)})["id"].(string)
	f.draftA = f.doA(201, "POST", "/posts", map[string]any{"content": f.markA + " draft", "platforms": []string{f.xA.ID}, "media": []string{f.mediaA}})["id"].(string)
	acc := f.doA(202, "POST", "/posts/publish", map[string]any{"content": f.markA + " published", "platforms": []string{f.xA.ID, f.bskyA.ID}})
	f.pubA, f.jobA = acc["post_id"].(string), acc["tracking_id"].(string)
	require.Eventually(t, func() bool {
		return f.doA(200, "GET", "/jobs/"+f.jobA, nil)["status"] == "completed"
	}, 30*time.Second, 20*time.Millisecond)
	c := f.doA(202, "POST", "/campaigns", map[string]any{"name": f.markA, "publish": "now", "posts": []any{apptest.CampaignPost(f.markA+" campaign", f.bskyA)}})
	f.campaignA = c["campaign_id"].(string)
	f.campaignPo = c["posts"].([]any)[0].(map[string]any)["post_id"].(string)
	require.Eventually(t, func() bool {
		return f.doA(200, "GET", "/campaigns/"+f.campaignA, nil)["status"] == "completed"
	}, 30*time.Second, 20*time.Millisecond)

	var pub *persistence.Post
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		var err error
		pub, err = tx.Post(f.pubA)
		return err
	}))
	f.pubTargetX = apptest.PublicationID(pub, platforms.X)
	var err error
	f.commentA, err = h.App.Sim.AddComment(platforms.X, apptest.Target(pub, platforms.X), f.markA+" comment", "ann")
	require.NoError(t, err)
	f.convA, err = h.App.Sim.AddDM(platforms.X, f.xA.NetworkUserID, "dana", f.markA+" dm")
	require.NoError(t, err)

	// Workspace B holds a draft of its own.
	f.postB = h.DoKey(h.Key, "POST", "/v1/posts", map[string]any{"content": f.markB + " draft", "platforms": []string{f.bskyB.ID}},
		http.Header{server.WorkspaceHeader: {f.wsB}}).JSON(t)["id"].(string)

	// A publish in main reaches main's webhook: the receiver elsewhere hears what is not A's.
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "in main", "platforms": []string{h.Account(platforms.Bluesky).ID}})
	require.Equal(t, 202, r.Status, string(r.Body))
	require.Eventually(t, func() bool { return f.elsewhere.Count() > 0 }, 30*time.Second, 20*time.Millisecond)

	// Every object of A is within reach from A: the checks below ask for objects that exist.
	require.Contains(t, string(f.doA(200, "GET", "/inbox/comments?fresh=true&account_id="+f.xA.ID, nil)["threads"].([]any)[0].(map[string]any)["comment"].(map[string]any)["id"].(string)), f.commentA)
	dms, _ := json.Marshal(f.doA(200, "GET", "/inbox/dms?fresh=true&account_id="+f.xA.ID, nil))
	require.Contains(t, string(dms), f.convA)
	f.doA(200, "GET", "/inbox/dms/"+url.PathEscape(f.convA)+"?account_id="+f.xA.ID, nil)
	require.Equal(t, 1.0, f.doA(200, "GET", "/posts?search="+f.markA+"+draft", nil)["pagination"].(map[string]any)["total"])
	f.doA(200, "GET", "/analytics/posts/"+f.pubA, nil)
	f.doA(200, "GET", "/accounts/"+f.xA.ID+"/capabilities", nil)
	f.doA(200, "GET", "/media/"+f.mediaA, nil)
	f.doA(200, "GET", "/posts/"+f.pubA+"/events", nil)
	require.Eventually(t, func() bool {
		return len(f.doA(200, "GET", "/webhooks/"+f.webhookA+"/deliveries", nil)["data"].([]any)) > 0
	}, 30*time.Second, 20*time.Millisecond, "A's webhook has deliveries")
	return f
}

// snapshot is A's stored objects as JSON, and what the simulated networks hold of A.
func (f *isolationFixture) snapshot(t *testing.T) string {
	t.Helper()
	var out []any
	require.NoError(t, f.h.App.Store.View(func(tx *persistence.Tx) error {
		for _, id := range []string{f.xA.ID, f.bskyA.ID} {
			a, err := tx.Account(id)
			if err != nil {
				return err
			}
			out = append(out, a)
		}
		for _, id := range []string{f.draftA, f.pubA, f.campaignPo} {
			p, err := tx.Post(id)
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		j, err := tx.Job(f.jobA)
		if err != nil {
			return err
		}
		c, err := tx.Campaign(f.campaignA)
		if err != nil {
			return err
		}
		m, err := tx.Media(f.mediaA)
		if err != nil {
			return err
		}
		w, err := tx.Webhook(f.webhookA)
		if err != nil {
			return err
		}
		out = append(out, j, c, m, w)
		return nil
	}))
	s := f.h.App.Sim
	out = append(out, len(s.Publications(platforms.X)), len(s.Publications(platforms.Bluesky)), s.Replies(platforms.X), s.Likes(platforms.X), s.HiddenComments(platforms.X))
	b, err := json.Marshal(out)
	require.NoError(t, err)
	return string(b)
}

// isolationCheck is one request from outside A for an object of A: its path (below the door's
// prefix), and the status expected. The same user's other workspaces get the very answer another
// user gets (today's cross-user answer of the route): nothing tells them apart.
type isolationCheck struct {
	method, path string
	body         any
	status       int
}

// A draft, a published post and its job, a campaign, a media item, a webhook and its deliveries,
// two accounts with their capabilities, default options, analytics, comments and DMs, all in
// workspace A of the user: from workspace B or main of the same user, from another user (in main
// or in a workspace of theirs), through /v1 with a key (named by Herald-Workspace, or bound to
// B) and through /api with a session (its chosen workspace, or the header), every list shows none
// of them, every read and change by id is refused with the cross-user answer, and nothing of A
// changes. Keys bound to a workspace, keys limited to scopes and the MCP connector are held to
// theirs.
func TestWorkspaceIsolation(t *testing.T) { //nolint:tparallel // the subtests run in turn: each compares the store with what the last left
	t.Parallel()
	f := newIsolationFixture(t)
	h := f.h
	checks := 0

	// The browsers: the user's with the session's choice set to B, the user's on main (it names B
	// with the header), and V's.
	brChoseB := h.NewBrowser()
	require.Equal(t, 200, brChoseB.SignIn(h.User.Email, h.Password).Status)
	chooseWorkspace(t, h, brChoseB, f.wsB)
	// A session that chose A sees A's posts on its pages, and the header names A too.
	brA := h.NewBrowser()
	require.Equal(t, 200, brA.SignIn(h.User.Email, h.Password).Status)
	chooseWorkspace(t, h, brA, f.wsA)
	require.Contains(t, string(brA.Send("GET", "/posts/"+f.draftA, nil, nil).Body), f.markA)
	require.Contains(t, string(brA.Send("GET", "/posts", nil, nil).Body), f.markA)
	require.Contains(t, string(h.SignedIn().Send("GET", "/api/posts", nil, f.inA()).Body), f.markA)
	brV := h.NewBrowser()
	require.Equal(t, 200, brV.SignIn(f.v.Email, apptest.PasswordOf(f.v.Email)).Status)
	vMain := h.NewAccount(f.v.ID, "bluesky")
	vWs := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: f.v.ID, WorkspaceID: f.wsV, Platform: "bluesky",
		Username: vMain.Username, IsActive: true, CreatedAt: time.Now().UTC()}
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutAccount(vWs) }))
	doors := []door{
		{name: "key in B", key: h.Key, ws: f.wsB, own: f.bskyB.ID},
		{name: "key in main", key: h.Key, own: h.Account(platforms.Bluesky).ID, pubs: 1},
		{name: "key bound to B", key: boundKey(t, h, h.User.ID, f.wsB), own: f.bskyB.ID},
		{name: "V's key", key: f.vKey, own: vMain.ID},
		{name: "V's key in V's workspace", key: f.vKey, ws: f.wsV, own: vWs.ID},
		{name: "session that chose B", br: brChoseB, own: f.bskyB.ID},
		{name: "session naming B", br: h.SignedIn(), ws: f.wsB, own: f.bskyB.ID},
		{name: "V's session", br: brV, own: vMain.ID},
	}

	// Every id and text of A: none may appear in an answer outside A.
	secrets := []string{f.markA, f.xA.ID, f.bskyA.ID, f.draftA, f.pubA, f.jobA, f.campaignA, f.campaignPo, f.mediaA, f.webhookA,
		f.commentA, f.convA, f.pubTargetX, *f.xA.Username, *f.bskyA.Username}
	future := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	conv := url.PathEscape(f.convA)
	lists := []string{"/accounts", "/posts", "/posts?status=published", "/posts?status=draft", "/posts?platform=twitter_x",
		"/posts?search=" + f.markA, "/inbox/comments?fresh=true&platform=twitter_x", "/campaigns", "/webhooks", "/analytics/overview",
		"/analytics/accounts", "/inbox/accounts", "/inbox/comments?fresh=true", "/inbox/dms?fresh=true"}
	confirmA := map[string]any{"key": f.mediaKey, "storage_filename": f.mediaFile, "original_filename": "a.png",
		"content_type": "image/png", "size_bytes": len(apptest.PNGFile)}
	onA := map[string]any{"content": "on A's account", "platforms": []string{f.xA.ID}}
	scheduled := map[string]any{"content": "on A's account", "platforms": []string{f.xA.ID}, "scheduledAt": future}
	byID := []isolationCheck{
		// Reads.
		{"GET", "/posts/" + f.draftA, nil, 403},
		{"GET", "/posts/" + f.pubA, nil, 403},
		{"GET", "/posts/" + f.campaignPo, nil, 403},
		{"GET", "/posts/" + f.pubA + "/events", nil, 403},
		{"GET", "/jobs/" + f.jobA, nil, 403},
		{"GET", "/jobs/" + f.jobA + "/stream", nil, 403},
		{"GET", "/campaigns/" + f.campaignA, nil, 404},
		{"GET", "/campaigns/" + f.campaignA + "/stream", nil, 404},
		{"GET", "/media/" + f.mediaA, nil, 404},
		{"GET", "/webhooks/" + f.webhookA + "/deliveries", nil, 403},
		{"GET", "/analytics/posts/" + f.pubA, nil, 403},
		{"GET", "/analytics/posts/" + f.pubTargetX, nil, 404},
		{"GET", "/accounts/" + f.xA.ID + "/capabilities", nil, 404},
		{"GET", "/analytics/overview?account_id=" + f.xA.ID, nil, 400},
		{"GET", "/inbox/comments?account_id=" + f.xA.ID, nil, 400},
		{"GET", "/inbox/dms?account_id=" + f.xA.ID, nil, 400},
		{"GET", "/inbox/dms/" + conv + "?account_id=" + f.xA.ID, nil, 400},
		{"GET", "/posts?account_id=" + f.xA.ID, nil, 400},
		{"GET", "/posts?connected_account_id=" + f.xA.ID, nil, 400},
		// Changes.
		{"PATCH", "/posts/" + f.draftA, map[string]any{"content": "taken"}, 403},
		{"POST", "/posts/" + f.draftA + "/publish", nil, 403},
		{"POST", "/posts/" + f.draftA + "/schedule", map[string]any{"scheduledAt": future}, 403},
		{"DELETE", "/posts/" + f.draftA, nil, 403},
		{"DELETE", "/posts/" + f.pubA, nil, 403},
		{"POST", "/posts", onA, 400},
		{"POST", "/posts/publish", onA, 400},
		{"POST", "/posts/schedule", scheduled, 400},
		{"POST", "/posts/validate", onA, 200}, // valid: false
		{"POST", "/campaigns", map[string]any{"publish": "now", "posts": []any{apptest.CampaignPost("on A's account", f.xA)}}, 400},
		{"POST", "/campaigns/" + f.campaignA + "/retry", nil, 404},
		{"DELETE", "/campaigns/" + f.campaignA, nil, 404},
		{"PATCH", "/media/" + f.mediaA, map[string]any{"alt_text": "taken"}, 404},
		{"POST", "/media/confirm", confirmA, 403},
		{"PATCH", "/webhooks/" + f.webhookA, map[string]any{"active": false}, 403},
		{"POST", "/webhooks/" + f.webhookA + "/rotate-secret", nil, 403},
		{"DELETE", "/webhooks/" + f.webhookA, nil, 403},
		{"PATCH", "/accounts/" + f.xA.ID, map[string]any{"default_options": map[string]any{"reply_settings": "following"}}, 403},
		{"DELETE", "/accounts/" + f.xA.ID, nil, 403},
		{"POST", "/inbox/comments/" + f.commentA + "/reply", map[string]any{"publication_id": f.pubTargetX, "text": "taken"}, 400},
		{"POST", "/inbox/comments/" + f.commentA + "/reply", map[string]any{"publication_id": f.pubA, "text": "taken"}, 400},
		{"POST", "/inbox/comments/" + f.commentA + "/like", map[string]any{"publication_id": f.pubTargetX}, 400},
		{"POST", "/inbox/comments/" + f.commentA + "/hide", map[string]any{"publication_id": f.pubTargetX}, 400},
		{"POST", "/inbox/dms/" + conv + "/reply", map[string]any{"account_id": f.xA.ID, "text": "taken"}, 400},
	}

	before := f.snapshot(t)
	for _, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			h := h.In(t)
			for _, path := range lists {
				r := d.do(h, "GET", path, nil)
				require.Equal(t, 200, r.Status, "GET %s: %s", path, r.Body)
				for _, s := range secrets {
					require.NotContains(t, string(r.Body), s, "GET %s shows A's objects", path)
				}
				checks += 2
			}
			// The door's own account is listed: the lists above read its workspace.
			require.Contains(t, string(d.do(h, "GET", "/accounts", nil).Body), d.own)
			// None of A's publications is counted (main has one of its own).
			require.Equal(t, d.pubs, d.do(h, "GET", "/analytics/overview", nil).JSON(t)["publications"])
			checks += 2
			if d.br != nil && d.key == "" {
				// The dashboard's pages, in the session's workspace.
				hdr := http.Header{}
				if d.ws != "" {
					hdr.Set(server.WorkspaceHeader, d.ws)
				}
				for _, page := range []string{"/", "/posts", "/calendar", "/accounts", "/compose", "/developer", "/settings"} {
					r := d.br.Send("GET", page, nil, hdr)
					require.Equal(t, 200, r.Status, "page %s", page)
					for _, s := range secrets {
						require.NotContains(t, string(r.Body), s, "page %s shows A's objects", page)
					}
					checks += 2
				}
				for _, id := range []string{f.draftA, f.pubA, f.campaignPo} {
					r := d.br.Send("GET", "/posts/"+id, nil, hdr)
					require.Equal(t, 404, r.Status, "page /posts/%s", id)
					require.NotContains(t, string(r.Body), f.markA)
					checks += 2
				}
			}
			// A's media in a post on the door's own account.
			own := append(byID, isolationCheck{"POST", "/posts", map[string]any{"content": "with A's media", "platforms": []string{d.own}, "media": []string{f.mediaA}}, 400})
			for _, c := range own {
				r := d.do(h, c.method, c.path, c.body)
				require.Equal(t, c.status, r.Status, "%s %s: %s", c.method, c.path, r.Body)
				require.NotContains(t, string(r.Body), f.markA, "%s %s shows A's content", c.method, c.path)
				if r.Status == 403 { // the same words for another user's object and another workspace's
					require.Contains(t, r.ErrorMessage(t), "belongs to another user or workspace", "%s %s", c.method, c.path)
				}
				if r.Status == 200 {
					require.Equal(t, false, r.JSON(t)["valid"], "%s %s: %s", c.method, c.path, r.Body)
				}
				checks += 2
			}
		})
	}
	require.Equal(t, before, f.snapshot(t), "nothing of A changed")
	checks++
	// The webhooks of B, of main and of V were sent nothing of A.
	for _, r := range f.elsewhere.Requests() {
		for _, s := range secrets {
			require.NotContains(t, string(r.Body), s, "a webhook outside A was sent A's event")
		}
	}
	checks++

	t.Run("idempotency keys", func(t *testing.T) {
		h := h.In(t)
		// The same Idempotency-Key in A and in B names two operations: B's is not a replay of A's.
		key := http.Header{"Idempotency-Key": {"per-workspace-1"}}
		body := map[string]any{"content": f.markA + " idempotent", "platforms": []string{f.bskyA.ID}}
		key.Set(server.WorkspaceHeader, f.wsA)
		r := h.DoKey(h.Key, "POST", "/v1/posts", body, key)
		require.Equal(t, 201, r.Status, string(r.Body))
		idA := r.JSON(t)["id"].(string)
		key.Set(server.WorkspaceHeader, f.wsB)
		for _, b := range []map[string]any{body, {"content": f.markB + " idempotent", "platforms": []string{f.bskyB.ID}}} {
			r = h.DoKey(h.Key, "POST", "/v1/posts", b, key)
			require.Empty(t, r.Header.Get("Idempotent-Replayed"))
			require.NotContains(t, string(r.Body), idA)
			require.NotContains(t, string(r.Body), f.markA)
			checks += 3
		}
		require.Equal(t, 400, h.DoKey(h.Key, "POST", "/v1/posts", body, http.Header{"Idempotency-Key": {"per-workspace-1"}}).Status, "nor main's")
		checks++
	})

	t.Run("bound keys", func(t *testing.T) {
		h := h.In(t)
		boundA := boundKey(t, h, h.User.ID, f.wsA)
		r := h.DoKey(boundA, "GET", "/v1/posts", nil, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Contains(t, string(r.Body), f.draftA, "a key bound to A acts in A")
		require.NotContains(t, string(r.Body), f.markB)
		checks += 2
		postsB := f.countPosts(t, f.wsB)
		// Any other workspace, named by the header: 403 with the challenge, nothing done.
		for _, ws := range []string{f.wsB, persistence.MainWorkspace, h.User.ID, f.wsV, uuid.Must(uuid.NewV7()).String()} {
			for _, req := range []struct {
				method, path string
				body         any
			}{{"GET", "/v1/posts", nil}, {"GET", "/v1/accounts", nil}, {"POST", "/v1/posts", map[string]any{"content": "from A's key", "platforms": []string{f.bskyB.ID}}}} {
				r := h.DoKey(boundA, req.method, req.path, req.body, http.Header{server.WorkspaceHeader: {ws}})
				require.Equal(t, 403, r.Status, "%s %s in %s: %s", req.method, req.path, ws, r.Body)
				require.Equal(t, "forbidden", r.ErrorCode(t))
				require.Contains(t, r.Header.Get("WWW-Authenticate"), `Bearer error="insufficient_scope"`)
				require.NotContains(t, string(r.Body), f.markB)
				checks += 4
			}
		}
		require.Equal(t, postsB, f.countPosts(t, f.wsB), "nothing was created in B")
		checks++
	})

	t.Run("another user's workspace", func(t *testing.T) {
		h := h.In(t)
		raw := h.NewBrowser()
		// Named by the header: 404 through both doors, whoever asks, as an unknown workspace.
		for _, c := range []struct {
			name string
			d    door
			ws   string
		}{
			{"the user's key, V's workspace", door{key: h.Key, br: raw}, f.wsV},
			{"the user's session, V's workspace", door{br: h.SignedIn()}, f.wsV},
			{"V's key, A", door{key: f.vKey, br: raw}, f.wsA},
			{"V's session, A", door{br: brV}, f.wsA},
			{"V's key, the user's main", door{key: f.vKey, br: raw}, h.User.ID},
			{"an unknown workspace", door{key: h.Key, br: raw}, uuid.Must(uuid.NewV7()).String()},
		} {
			c.d.ws = c.ws
			for _, path := range []string{"/posts", "/accounts", "/webhooks"} {
				r := c.d.do(h, "GET", path, nil)
				require.Equal(t, 404, r.Status, "%s: GET %s: %s", c.name, path, r.Body)
				require.Equal(t, "not_found", r.ErrorCode(t))
				checks += 2
			}
			r := c.d.do(h, "POST", "/posts", map[string]any{"content": "elsewhere", "platforms": []string{vWs.ID}})
			require.Equal(t, 404, r.Status, "%s: POST /posts: %s", c.name, r.Body)
			checks++
		}
		// A session whose stored choice is a workspace its user does not have shows main.
		br := h.NewBrowser()
		require.Equal(t, 200, br.SignIn(h.User.Email, h.Password).Status)
		chooseWorkspace(t, h, br, f.wsV)
		r := br.Send("GET", "/api/accounts", nil, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Contains(t, string(r.Body), h.Account(platforms.X).ID, "main's accounts")
		require.NotContains(t, string(r.Body), vWs.ID)
		checks += 2
		require.Equal(t, 0, f.countPosts(t, f.wsV))
		checks++
	})

	t.Run("scoped keys", func(t *testing.T) {
		h := h.In(t)
		draftB := f.h.DoKey(h.Key, "GET", "/v1/posts/"+f.postB, nil, http.Header{server.WorkspaceHeader: {f.wsB}})
		require.Equal(t, 200, draftB.Status)
		// For each scope, a key limited to it: one request it opens, one of another class or
		// resource it does not (403 with the challenge, nothing done).
		for _, c := range []struct {
			scope          string
			allowed        string
			method, denied string
			body           any
		}{
			{auth.ScopeMeRead, "/me", "GET", "/accounts", nil},
			{auth.ScopeAccountsRead, "/accounts", "DELETE", "/accounts/" + f.xA.ID, nil},
			{auth.ScopeAccountsWrite, "", "GET", "/accounts/" + f.xA.ID + "/capabilities", nil},
			{auth.ScopePostsRead, "/posts", "POST", "/posts", onA},
			{auth.ScopePostsRead, "/posts/" + f.draftA, "GET", "/analytics/overview", nil},
			{auth.ScopePostsWrite, "", "GET", "/posts/" + f.draftA, nil},
			{auth.ScopeMediaWrite, "/media/" + f.mediaA, "PATCH", "/posts/" + f.draftA, map[string]any{"content": "taken"}},
			{auth.ScopeJobsRead, "/jobs/" + f.jobA, "GET", "/posts", nil},
			{auth.ScopeWebhooksRead, "/webhooks", "POST", "/webhooks/" + f.webhookA + "/rotate-secret", nil},
			{auth.ScopeWebhooksWrite, "", "GET", "/webhooks/" + f.webhookA + "/deliveries", nil},
			{auth.ScopeServiceRead, "/analytics/overview", "POST", "/posts/" + f.draftA + "/publish", nil},
			{auth.ScopeServiceWrite, "", "GET", "/inbox/comments", nil},
			{auth.ScopePostsApprove, "", "DELETE", "/posts/" + f.draftA, nil},
		} {
			key := boundKey(t, h, h.User.ID, "", c.scope)
			if c.allowed != "" {
				r := h.DoKey(key, "GET", "/v1"+c.allowed, nil, f.inA())
				require.Equal(t, 200, r.Status, "%s: GET %s: %s", c.scope, c.allowed, r.Body)
				checks++
			}
			r := h.DoKey(key, c.method, "/v1"+c.denied, c.body, f.inA())
			require.Equal(t, 403, r.Status, "%s: %s %s: %s", c.scope, c.method, c.denied, r.Body)
			require.Equal(t, "forbidden", r.ErrorCode(t))
			require.Contains(t, r.Header.Get("WWW-Authenticate"), `Bearer error="insufficient_scope"`)
			require.NotContains(t, string(r.Body), f.markA)
			checks += 4
		}
		require.Equal(t, before, f.snapshot(t), "nothing of A changed")
		checks++
	})

	t.Run("MCP", func(t *testing.T) {
		h := h.In(t)
		tools := []struct {
			name string
			args map[string]any
		}{
			{"list_accounts", nil}, {"list_posts", nil}, {"list_campaigns", nil}, {"list_webhooks", nil},
			{"get_analytics", nil}, {"list_inbox_comments", nil}, {"list_inbox_dms", nil},
		}
		read := func(s *mcp.ClientSession) string {
			var all strings.Builder
			for _, tool := range tools {
				all.WriteString(apptest.ResultText(apptest.CallTool(t, s, tool.name, tool.args)))
			}
			for _, uri := range []string{"herald://accounts", "herald://posts/recent"} {
				res, err := s.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
				require.NoError(t, err, uri)
				for _, c := range res.Contents {
					all.WriteString(c.Text)
				}
			}
			return all.String()
		}
		// The connector bound to A sees A's objects and nothing of B or main.
		inA := read(h.MCPSession(boundKey(t, h, h.User.ID, f.wsA)))
		for _, id := range []string{f.xA.ID, f.draftA, f.campaignA, f.webhookA} {
			require.Contains(t, inA, id)
		}
		for _, s := range []string{f.markB, f.bskyB.ID, f.postB, h.Account(platforms.X).ID} {
			require.NotContains(t, inA, s, "the connector bound to A shows B's or main's objects")
			checks++
		}
		// Bound to B, it sees nothing of A, and A's objects by id are refused.
		s := h.MCPSession(boundKey(t, h, h.User.ID, f.wsB))
		inB := read(s)
		require.Contains(t, inB, f.postB)
		for _, secret := range secrets {
			require.NotContains(t, inB, secret, "the connector bound to B shows A's objects")
			checks++
		}
		for _, c := range []struct {
			name string
			args map[string]any
			want string
		}{
			{"get_post", map[string]any{"post_id": f.draftA}, "HTTP 403"},
			{"get_publish_status", map[string]any{"tracking_id": f.jobA}, "HTTP 403"},
			{"get_campaign", map[string]any{"campaign_id": f.campaignA}, "HTTP 404"},
			{"get_post_analytics", map[string]any{"post_id": f.pubA}, "HTTP 403"},
			{"get_account_capabilities", map[string]any{"account": f.xA.ID}, "HTTP 404"},
			{"update_draft", map[string]any{"post_id": f.draftA, "content": "taken"}, "HTTP 403"},
			{"delete_draft", map[string]any{"post_id": f.draftA}, "HTTP 403"},
			{"publish_post", map[string]any{"post_id": f.draftA}, "HTTP 403"},
			{"schedule_post", map[string]any{"post_id": f.draftA, "scheduled_at": future}, "HTTP 403"},
			{"create_draft", map[string]any{"content": "on A's account", "accounts": []string{f.xA.ID}}, "HTTP 400"},
			{"retry_campaign", map[string]any{"campaign_id": f.campaignA}, "HTTP 404"},
			{"set_account_defaults", map[string]any{"account": f.xA.ID, "default_options": map[string]any{}}, "HTTP 403"},
			{"disconnect_account", map[string]any{"account": f.xA.ID}, "HTTP 403"},
			{"delete_webhook", map[string]any{"webhook_id": f.webhookA}, "HTTP 403"},
			{"reply_to_comment", map[string]any{"comment_id": f.commentA, "publication_id": f.pubTargetX, "text": "taken"}, "HTTP 400"},
			{"like_comment", map[string]any{"comment_id": f.commentA, "publication_id": f.pubTargetX}, "HTTP 400"},
			{"hide_comment", map[string]any{"comment_id": f.commentA, "publication_id": f.pubTargetX}, "HTTP 400"},
			{"reply_to_dm", map[string]any{"conversation_id": f.convA, "account": f.xA.ID, "text": "taken"}, "HTTP 400"},
			{"list_inbox_comments", map[string]any{"account": f.xA.ID}, "HTTP 400"},
			{"list_inbox_dms", map[string]any{"account": f.xA.ID}, "HTTP 400"},
			{"get_analytics", map[string]any{"account": f.xA.ID}, "HTTP 400"},
		} {
			res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: c.name, Arguments: c.args})
			require.NoError(t, err, c.name)
			require.Contains(t, apptest.ToolError(t, res), c.want, c.name)
			require.NotContains(t, apptest.ResultText(res), f.markA)
			checks += 2
		}
		require.Equal(t, before, f.snapshot(t), "nothing of A changed")
		checks++
	})
	t.Logf("%d isolation checks, 0 leaks", checks)
}

// chooseWorkspace sets the workspace the browser's session has chosen, as the dashboard's
// switcher stores it.
func chooseWorkspace(t *testing.T, h *apptest.Herald, br *apptest.Browser, ws string) {
	t.Helper()
	hash := session.HashToken(br.SessionCookie())
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		s, err := tx.Session(hash)
		if err != nil {
			return err
		}
		s.WorkspaceID = ws
		return tx.PutSession(hash, s)
	}))
}

// countPosts is how many posts a workspace (its id) holds.
func (f *isolationFixture) countPosts(t *testing.T, ws string) int {
	t.Helper()
	var n int
	require.NoError(t, f.h.App.Store.View(func(tx *persistence.Tx) error {
		var err error
		_, n, err = tx.ListPosts(persistence.PostFilter{Scope: ws, Limit: 1})
		return err
	}))
	return n
}

package app_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// The store fixture is a data directory written by this build (testdata/store-v5: the bbolt
// file, the secret key that unseals its tokens, the media files, the sandbox key and password)
// with expected.json, what the API answered for every object in it. TestStoreFixture opens a copy
// with the current build and requires the same answers, so that a change of the stored records
// must migrate the stores already written rather than misread them (docs/operations.md, Upgrades
// and the store fixture). HERALD_WRITE_FIXTURE=1 go test -run TestWriteStoreFixture
// ./cmd/herald/app/ writes it again; do so only when the layout it holds is deliberately retired.
const fixtureDir = "testdata/store-v5"

// fixtureSessionIdle keeps the fixture's dashboard session valid for as long as the fixture is
// kept: its last use is the day it was written.
const fixtureSessionIdle = 100 * 365 * 24 * time.Hour

// fixtureTokenLife is how long the fixture's account tokens last.
const fixtureTokenLife = 50 * 365 * 24 * time.Hour

// fixtureExpected is expected.json: the dashboard session and every answer, normalised.
type fixtureExpected struct {
	// Session is the dashboard session cookie the fixture's session was made with.
	Session string `json:"session"`
	// Answers map "GET path" (the API, with the sandbox key; "api GET path" for the dashboard's
	// /api, with the session) to the normalised JSON body, and "file", "credentials" and
	// "webhook secret" with an id to what the media file and the sealed secrets hold.
	Answers map[string]any `json:"answers"`
}

// TestWriteStoreFixture writes the store fixture: the sandbox's demo user and nine accounts, and
// through the API one object of every kind a user has.
func TestWriteStoreFixture(t *testing.T) {
	if os.Getenv("HERALD_WRITE_FIXTURE") != "1" {
		t.Skip("HERALD_WRITE_FIXTURE=1 writes the store fixture")
	}
	dir := t.TempDir()
	var scheduled, session string
	t.Run("write", func(t *testing.T) { scheduled, session = writeFixture(t, dir) })
	if t.Failed() {
		return
	}
	reschedule(t, dir, scheduled, time.Date(2099, 1, 2, 3, 4, 5, 0, time.UTC))

	// The answers are read from the store as it is committed, by a second start on it.
	exp := fixtureExpected{Session: session}
	t.Run("read", func(t *testing.T) { exp.Answers = readFixture(t, dir, "", session) })
	if t.Failed() {
		return
	}
	out := filepath.FromSlash(fixtureDir)
	require.NoError(t, os.RemoveAll(out))
	require.NoError(t, copyTree(dir, filepath.Join(out, "data")))
	require.NoError(t, gzipFile(filepath.Join(out, "data", persistence.FileName)))
	b, err := json.MarshalIndent(exp, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, "expected.json"), append(b, '\n'), 0o644))
}

// writeFixture starts sandbox Herald on dir and makes the fixture's objects; it returns the
// scheduled post's id and the dashboard session's cookie.
func writeFixture(t *testing.T, dir string) (scheduled, session string) {
	ca := webhooktest.NewCA(t)
	// The demo accounts' tokens outlive the fixture (fixtureTokenLife), so that no build opening
	// it, however late, refreshes them: the simulator it talks to is a new one, which knows none.
	s, err := sim.Start("127.0.0.1:0", sim.Options{})
	require.NoError(t, err)
	for _, p := range platforms.All {
		s.Tokens(p).SetLifetimes(fixtureTokenLife, fixtureTokenLife)
	}
	h := apptest.Start(t, apptest.Options{Demo: true, Config: func(c *app.Config) {
		apptest.WithReceivers(ca)(c)
		c.DataDir, c.Store, c.SimURL = dir, "", s.BaseURL()
	}})
	x, bsky, li := h.Account(platforms.X), h.Account(platforms.Bluesky), h.Account(platforms.LinkedIn)
	threads := h.Account(platforms.Threads)

	// An account's default options.
	r := h.Do("PATCH", "/v1/accounts/"+bsky.ID, map[string]any{"default_options": map[string]any{"langs": []string{"en", "fr"}}})
	require.Equal(t, 200, r.Status, string(r.Body))

	// API keys through the dashboard: one kept, one revoked.
	br := h.SignedIn()
	r = br.Send("POST", "/api/keys", map[string]any{"name": "kept key"}, br.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
	r = br.Send("POST", "/api/keys", map[string]any{"name": "revoked key"}, br.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
	r = br.Send("DELETE", "/api/keys/"+r.JSON(t)["id"].(string), nil, br.CSRFHeader())
	require.Equal(t, 204, r.Status, string(r.Body))

	// An OAuth client (a connector host) and its grant: a connector key and its tokens.
	o := &apptest.OAuth{Herald: h, Clock: apptest.NewClock(time.Now()), Redirect: "http://127.0.0.1:7777/callback"}
	o.ClientID = o.Register("Claude") // the name apptest.OAuth.Consent expects
	o.Grant(h.URL, "")

	// Media: an image with alt text, a video, a document.
	img := h.UploadMedia("photo.png", "image/png", apptest.TestFile("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR", 2<<10))
	r = h.Do("PATCH", "/v1/media/"+img, map[string]any{"alt_text": "A test pattern"})
	require.Equal(t, 200, r.Status, string(r.Body))
	video := h.UploadMedia("clip.mp4", "video/mp4", apptest.TestFile("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom", 4<<10))
	pdf := h.UploadMedia("deck.pdf", "application/pdf",
		[]byte("%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R] /Count 1 >> endobj\n2 0 obj << /Type /Page /Parent 1 0 R >> endobj\n%%EOF\n"))

	// A webhook subscription whose receiver takes every delivery.
	recv := webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	hook, _ := h.CreateWebhook(recv.URL, "post.published", "post.failed", "campaign.completed")

	// A draft with targets of their own: content and options, a thread, a first comment.
	r = h.Do("POST", "/v1/posts", map[string]any{"content": "A draft for every network", "platforms": []string{x.ID, bsky.ID, li.ID},
		"media": []string{img},
		"targets": []map[string]any{
			{"account_id": x.ID, "content": "The X version", "options": map[string]any{"reply_settings": "following"},
				"thread": []map[string]any{{"content": "second part"}, {"content": "third part"}}, "media": []string{}},
			{"account_id": bsky.ID, "first_comment": map[string]any{"content": "A first comment"}},
			{"account_id": li.ID, "media": []string{pdf}},
		}})
	require.Equal(t, 201, r.Status, string(r.Body))

	// A scheduled post; the API takes dates up to a year ahead, so that it is moved to 2099 once
	// Herald has stopped (TestWriteStoreFixture): no later build opening the fixture must publish it.
	r = h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "Scheduled for later", "platforms": []string{li.ID},
		"scheduledAt": time.Now().Add(300 * 24 * time.Hour).UTC().Format(time.RFC3339)})
	require.Equal(t, 201, r.Status, string(r.Body))
	scheduled = r.JSON(t)["id"].(string)

	// A published post (its job, events and webhook deliveries) with a video.
	h.PublishAndWait("Published with a video", []string{video}, threads)

	// A post that fails on one network and publishes on another.
	require.NoError(t, s.InjectFault(platforms.Bluesky, "error_5xx", 1000))
	r = h.Do("POST", "/v1/posts/publish", map[string]any{"content": "Half published", "platforms": []string{x.ID, bsky.ID}})
	require.Equal(t, 202, r.Status, string(r.Body))
	j := h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, 1.0, j["failed"], "%v", j)

	// A campaign of two posts, published.
	r = h.CreateCampaign(map[string]any{"name": "Launch", "publish": "now",
		"posts": []any{apptest.CampaignPost("Campaign one", li), apptest.CampaignPost("Campaign two", x)}}, nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	camp := r.JSON(t)["campaign_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, err := h.FollowCampaign(ctx, camp, "", nil)
	require.NoError(t, err)
	require.Equal(t, 2.0, events[len(events)-1].Data["totals"].(map[string]any)["published"])

	// Every webhook event delivered, so that nothing is left to send when the fixture is opened.
	var last []any
	require.Eventually(t, func() bool {
		d := h.Do("GET", "/v1/webhooks/"+hook+"/deliveries", nil).JSON(t)["data"].([]any)
		last = d
		if len(d) < 3 {
			return false
		}
		for _, e := range d {
			if e.(map[string]any)["status"] != "succeeded" {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "deliveries: %v", last)

	return scheduled, br.SessionCookie()
}

// readFixture starts Herald on the stopped store in dir and reads every object, the dashboard's
// with the session cookie.
func readFixture(t *testing.T, dir, store, session string) map[string]any {
	h := apptest.Start(t, apptest.Options{Demo: true, Config: func(c *app.Config) {
		c.DataDir, c.Store = dir, store
		c.SessionIdle, c.SessionMaxAge = fixtureSessionIdle, fixtureSessionIdle
	}})
	h.Key = fixtureKey(t, dir)
	require.NotEmpty(t, h.Accounts, "the demo user's accounts")
	br := h.NewBrowser()
	br.SetSessionCookie(session)
	out := fixtureAnswers(t, h, br)
	requireAddedFields(t, out)
	// Everything the store held is in the main workspace, the only one.
	r := h.Do("GET", "/v1/workspaces", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Len(t, r.JSON(t)["data"], 1)
	require.Equal(t, "main", r.JSON(t)["data"].([]any)[0].(map[string]any)["id"])
	inMain := fixtureAnswers(t, h.WithHeader("Herald-Workspace", "main"), br)
	requireAddedFields(t, inMain)
	require.Equal(t, out, inMain, "every object is in the main workspace")
	// Each account's sealed credentials open with the directory's secret key; only their hash is
	// kept (Herald's secrets are never written in the clear, a fixture's included).
	for _, a := range h.Accounts {
		var acc *persistence.Account
		require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
			var err error
			acc, err = tx.Account(a.ID)
			return err
		}))
		creds, err := h.App.Box.Open(acc.Secret)
		require.NoError(t, err, "the credentials of %s no longer open", a.ID)
		sum := sha256.Sum256(creds)
		out["credentials "+a.ID] = hex.EncodeToString(sum[:])
	}
	// So do the webhooks' signing secrets.
	var hooks []*persistence.Webhook
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		var err error
		hooks, err = tx.WebhooksIn(h.User.ID)
		return err
	}))
	require.NotEmpty(t, hooks)
	for _, w := range hooks {
		secret, err := h.App.Box.Open(w.Secret)
		require.NoError(t, err, "the signing secret of webhook %s no longer opens", w.ID)
		sum := sha256.Sum256(secret)
		out["webhook secret "+w.ID] = hex.EncodeToString(sum[:])
	}
	return out
}

// TestStoreFixture opens a copy of the store a previous build wrote (testdata/store-v5) and
// requires every object the API shows to be as that build showed it, and the store sound.
func TestStoreFixture(t *testing.T) {
	t.Parallel()
	exp, dir := openFixture(t)
	r, err := persistence.CheckFile(filepath.Join(dir, persistence.FileName), 2*time.Second)
	require.NoError(t, err)
	require.True(t, r.Sound(), "herald check finds problems: %v", r.Problems)

	// The store is still sound once this build has run on it: checked after Herald has stopped
	// (cleanups run last registered first).
	t.Cleanup(func() {
		r, err := persistence.CheckFile(filepath.Join(dir, persistence.FileName), 2*time.Second)
		if err != nil || !r.Sound() {
			t.Errorf("herald check after a start: %v %v", err, r)
		}
	})
	requireFixtureAnswers(t, exp, readFixture(t, dir, "", exp.Session))
}

// TestStoreFixturePostgres copies the fixture's bbolt file into PostgreSQL as herald migrate does
// (the rows as the previous build wrote them, brought up to date when the store opens there) and
// requires the same answers. It runs where PostgreSQL is available (pgtest).
func TestStoreFixturePostgres(t *testing.T) {
	t.Parallel()
	exp, dir := openFixture(t)
	url := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := persistence.MigrateToPostgres(ctx, filepath.Join(dir, persistence.FileName), url)
	require.NoError(t, err)
	for _, r := range rows {
		require.True(t, r.Match(), "bucket %s copied otherwise", r.Bucket)
	}
	// Herald on PostgreSQL keeps only the secret key, media and sandbox files in its directory.
	require.NoError(t, os.Remove(filepath.Join(dir, persistence.FileName)))

	requireFixtureAnswers(t, exp, readFixture(t, dir, url, exp.Session))
}

// openFixture reads expected.json and copies the fixture's data directory to a temporary one.
func openFixture(t *testing.T) (fixtureExpected, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "expected.json"))
	require.NoError(t, err)
	var exp fixtureExpected
	require.NoError(t, json.Unmarshal(b, &exp))
	dir := t.TempDir()
	require.NoError(t, copyTree(filepath.Join(fixtureDir, "data"), dir))
	require.NoError(t, gunzipFile(filepath.Join(dir, persistence.FileName)))
	return exp, dir
}

// addedFields are the fields answers gained after the fixture was written, with the value each
// has for what a previous build stored: requireAddedFields checks and removes them, so that the
// rest is compared with what that build answered.
var addedFields = map[string]map[string]any{
	"GET /v1/me": {"workspace_id": "main", "api_key.scopes": nil, "api_key.workspace_id": nil},
}

// addedKeyFields are the fields every key of the dashboard's key list gained (scopes and a bound
// workspace: a previous build's keys have none).
var addedKeyFields = map[string]any{"scopes": nil, "workspace_id": nil}

func requireAddedFields(t *testing.T, got map[string]any) {
	t.Helper()
	for req, fields := range addedFields {
		m, ok := got[req].(map[string]any)
		require.True(t, ok, "%s is answered", req)
		for path, want := range fields {
			obj, key := m, path
			if parent, child, nested := strings.Cut(path, "."); nested {
				obj, _ = m[parent].(map[string]any)
				key = child
			}
			require.Contains(t, obj, key, "%s answers %s", req, path)
			require.Equal(t, want, obj[key], "%s: %s", req, path)
			delete(obj, key)
		}
	}
	// Every post gained scheduled_zone: null for a post a previous build stored (it kept no zone).
	for req, a := range got {
		if !strings.HasPrefix(req, "GET /v1/posts") {
			continue
		}
		m, _ := a.(map[string]any)
		posts := []any{m}
		if list, ok := m["data"].([]any); ok {
			posts = list
		}
		for _, p := range posts {
			pm, _ := p.(map[string]any)
			if _, ok := pm["scheduled_at"]; !ok {
				continue
			}
			require.Contains(t, pm, "scheduled_zone", "%s answers scheduled_zone", req)
			require.Nil(t, pm["scheduled_zone"], "%s: a stored post's scheduled_zone", req)
			delete(pm, "scheduled_zone")
		}
	}
	if keys, ok := got["api GET /api/keys"].(map[string]any); ok {
		for _, k := range keys["data"].([]any) {
			km := k.(map[string]any)
			for f, want := range addedKeyFields {
				require.Equal(t, want, km[f], "a stored key's %s", f)
				delete(km, f)
			}
		}
	}
}

// requireFixtureAnswers requires got to hold every answer of exp, each the same, and no other.
func requireFixtureAnswers(t *testing.T, exp fixtureExpected, got map[string]any) {
	t.Helper()
	require.NotNil(t, got, "the fixture could not be read")
	requireAddedCampaignTotals(t, got)
	for _, req := range sortedKeys(exp.Answers) {
		require.Contains(t, got, req, "%s is no longer answered", req)
		wj, _ := json.MarshalIndent(exp.Answers[req], "", "  ")
		gj, _ := json.MarshalIndent(got[req], "", "  ")
		require.JSONEq(t, string(wj), string(gj), "%s answers otherwise than the build that wrote the store", req)
	}
	extra := []string{}
	for req := range got {
		if _, ok := exp.Answers[req]; !ok {
			extra = append(extra, req)
		}
	}
	require.Empty(t, extra, "objects the build that wrote the store did not have")
}

// fixtureAnswers reads every object of the demo user through the API (and the dashboard's /api
// for the keys), following the lists to each object, and returns the normalised bodies by
// request.
func fixtureAnswers(t *testing.T, h *apptest.Herald, br *apptest.Browser) map[string]any {
	t.Helper()
	out := map[string]any{}
	get := func(path string, keep ...string) map[string]any {
		r := h.Do("GET", path, nil)
		require.Equal(t, 200, r.Status, "GET %s: %s", path, r.Body)
		// m is returned as answered; n, normalised (in place), is kept.
		var m, n map[string]any
		require.NoError(t, json.Unmarshal(r.Body, &m), "GET %s", path)
		require.NoError(t, json.Unmarshal(r.Body, &n), "GET %s", path)
		if keep != nil {
			kept := map[string]any{}
			for _, k := range keep {
				kept[k] = n[k]
			}
			n = kept
		}
		out["GET "+path] = normaliseFixture(n, h.URL)
		return m
	}
	data := func(m map[string]any) []map[string]any {
		var d []map[string]any
		for _, e := range m["data"].([]any) {
			d = append(d, e.(map[string]any))
		}
		return d
	}
	get("/v1/me")
	for _, a := range data(get("/v1/accounts")) {
		// Of an account's capabilities only the default options are stored; the rest is the
		// network's (choices, fetched now) or the code's (limits, options schema).
		get("/v1/accounts/"+a["id"].(string)+"/capabilities", "account_id", "platform", "default_options")
	}
	jobs, media := map[string]bool{}, map[string]bool{}
	for _, p := range data(get("/v1/posts?limit=100")) {
		id := p["id"].(string)
		collectIDs(get("/v1/posts/"+id), "", jobs, media)
		collectIDs(get("/v1/posts/"+id+"/events"), "", jobs, media)
	}
	for _, s := range []string{"draft", "scheduled", "published", "failed"} {
		get("/v1/posts?status=" + s)
	}
	for _, id := range sortedKeys(jobs) {
		get("/v1/jobs/" + id)
	}
	for _, id := range sortedKeys(media) {
		// The file itself is served, whole, at its signed URL (the media signing key and the
		// file kept).
		m := get("/v1/media/" + id)
		resp, err := h.Client.Get(m["url"].(string))
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, "media file %s: %s", id, body)
		sum := sha256.Sum256(body)
		out["file "+id] = map[string]any{"size_bytes": len(body), "sha256": hex.EncodeToString(sum[:])}
	}
	for _, c := range data(get("/v1/campaigns")) {
		get("/v1/campaigns/" + c["id"].(string))
	}
	for _, w := range data(get("/v1/webhooks")) {
		get("/v1/webhooks/" + w["id"].(string) + "/deliveries")
	}
	// Reading the capabilities asks the networks for the accounts' choices; that changes no
	// account.
	accounts := out["GET /v1/accounts"]
	get("/v1/accounts")
	require.Equal(t, accounts, out["GET /v1/accounts"], "the accounts changed while they were read")
	r := br.Send("GET", "/api/keys", nil, nil)
	require.Equal(t, 200, r.Status, "GET /api/keys with the fixture's session: %s", r.Body)
	out["api GET /api/keys"] = normaliseFixture(r.JSON(t), h.URL)
	return out
}

// collectIDs gathers the job ids (tracking_id) and media ids (the strings and objects' ids of
// media and media_ids) found anywhere in v, in which key holds the field v is the value of.
func collectIDs(v any, key string, jobs, media map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			collectIDs(e, k, jobs, media)
		}
		if id, ok := v["id"].(string); ok && (key == "media" || key == "media_ids") {
			media[id] = true
		}
	case []any:
		for _, e := range v {
			collectIDs(e, key, jobs, media)
		}
	case string:
		switch key {
		case "tracking_id":
			jobs[v] = true
		case "media", "media_ids", "media_id":
			media[v] = true
		}
	}
}

// fixtureKey is the demo key sandbox mode wrote in dir at its first start.
func fixtureKey(t *testing.T, dir string) string {
	t.Helper()
	key, err := os.ReadFile(app.SandboxKeyFile(dir))
	require.NoError(t, err)
	return strings.TrimSpace(string(key))
}

// reschedule moves a scheduled post of the stopped store in dir to at, as the scheduler would
// have stored it: the post's time and its entry in the schedule.
func reschedule(t *testing.T, dir, id string, at time.Time) {
	t.Helper()
	s, err := persistence.OpenStore("", dir, persistence.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error {
		p, err := tx.Post(id)
		if err != nil {
			return err
		}
		if err := tx.Unschedule(id, *p.ScheduledAt); err != nil {
			return err
		}
		p.ScheduledAt = &at
		if err := tx.PutPost(p, nil); err != nil {
			return err
		}
		return tx.Schedule(id, at)
	}))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// signedQuery is the signature and expiry of a signed URL.
var signedQuery = regexp.MustCompile(`\?.*$`)

// normaliseFixture rewrites what differs between two reads of the same stored object: a used
// key's last use (the reads use the key), the server's address (each start chooses a port) and
// the query of signed media URLs (signature and expiry are made at each read). The response
// headers (rate limits among them) are not kept at all.
func normaliseFixture(v any, base string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k == "last_used_at" && e != nil {
				// The reads themselves use the key; a key never used stays null.
				v[k] = "(a time)"
				continue
			}
			v[k] = normaliseFixture(e, base)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = normaliseFixture(e, base)
		}
		return v
	case string:
		if strings.HasPrefix(v, base) {
			return "{base}" + signedQuery.ReplaceAllString(strings.TrimPrefix(v, base), "?{signed}")
		}
		return v
	}
	return v
}

// gzipFile replaces the file at p with p.gz: the bbolt file is mostly free pages, 16 MB that
// compress to a few dozen kB.
func gzipFile(p string) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	z, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := z.Write(b); err != nil {
		return err
	}
	if err := z.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(p+".gz", buf.Bytes(), 0o600); err != nil {
		return err
	}
	return os.Remove(p)
}

// gunzipFile replaces p.gz with the file p it holds.
func gunzipFile(p string) error {
	f, err := os.Open(p + ".gz")
	if err != nil {
		return err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return err
	}
	return os.Remove(p + ".gz")
}

// copyTree copies the files under from to to (the admin socket and lock files excepted), each
// readable by its owner only, as Herald keeps them.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
}

// requireAddedCampaignTotals checks and removes the count campaign totals gained after the fixture
// was written (pending_approval: 0, for a campaign a previous build stored), so that the rest is
// compared with what that build answered.
func requireAddedCampaignTotals(t *testing.T, got map[string]any) {
	t.Helper()
	strip := func(req string, totals any) {
		m, ok := totals.(map[string]any)
		require.True(t, ok, "%s answers totals", req)
		require.Equal(t, 0.0, m["pending_approval"], "%s: totals.pending_approval", req)
		delete(m, "pending_approval")
	}
	for req, answer := range got {
		if !strings.HasPrefix(req, "GET /v1/campaigns") {
			continue
		}
		m, ok := answer.(map[string]any)
		if !ok {
			continue
		}
		if list, ok := m["data"].([]any); ok {
			for _, c := range list {
				strip(req, c.(map[string]any)["totals"])
			}
		} else if _, ok := m["totals"]; ok {
			strip(req, m["totals"])
		}
	}
}

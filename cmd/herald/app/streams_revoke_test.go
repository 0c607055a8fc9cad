package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// liveStream is a job stream followed by a real SSE client.
type liveStream struct {
	first  chan struct{} // closed on the first event
	done   chan struct{} // closed when the stream ended
	cancel context.CancelFunc
	mu     sync.Mutex
	events []string
}

// openStream follows a job's stream with token until the server ends it (or the test cancels
// it), and waits for its first event: from then on the stream is open.
func (b *testBundle) openStream(token, jobID string) *liveStream {
	b.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/jobs/"+jobID+"/stream", nil)
	require.NoError(b.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	s := &liveStream{first: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	var once sync.Once
	client := &sse.Client{HTTPClient: &http.Client{}, Backoff: sse.Backoff{MaxRetries: -1}}
	conn := client.NewConnection(req)
	conn.SubscribeToAll(func(e sse.Event) {
		s.mu.Lock()
		s.events = append(s.events, e.Type)
		s.mu.Unlock()
		once.Do(func() { close(s.first) })
	})
	go func() {
		defer close(s.done)
		_ = conn.Connect()
	}()
	select {
	case <-s.first:
	case <-s.done:
		b.t.Fatalf("the stream with %s… ended before its first event", token[:12])
	case <-time.After(30 * time.Second):
		b.t.Fatal("no first event in 30 s")
	}
	return s
}

// ended waits for the server to end the stream.
func (s *liveStream) ended(t *testing.T, why string) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the stream did not end after %s", why)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Equal(t, []string{"progress"}, s.events, "the job is still running: it ended for %s, not with done", why)
}

func (s *liveStream) open() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// rawStream reads a job's stream byte for byte until the server ends it, and returns the status
// and the text (so that the comment it ends with can be read).
func (b *testBundle) rawStream(token, jobID string) (status chan int, text chan string) {
	status, text = make(chan int, 1), make(chan string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, b.url+"/v1/jobs/"+jobID+"/stream", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- 0
			text <- err.Error()
			return
		}
		defer resp.Body.Close()
		status <- resp.StatusCode
		var sb strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			sb.WriteString(sc.Text() + "\n")
		}
		text <- sb.String()
	}()
	return status, text
}

// Revoking or regenerating a key ends the streams it opened, from every door that does it: the
// dashboard's /api/keys, `herald keys` through the admin socket, a new approval of the same OAuth
// connector (its previous connector key is replaced), POST /oauth/revoke; and a key that expires
// mid-stream ends its streams then. A stream opened with another key stays open throughout.
func TestRevokingAKeyEndsTheStreamsItOpened(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, adminSocket: true,
		budgets: map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}}})
	x := b.account(platforms.X).ID
	b.waitJob(b.publishNew(map[string]any{"content": "spends the budget", "platforms": ids(x)}, nil).json(t)["tracking_id"].(string))
	jobID := b.publishNew(map[string]any{"content": "waits an hour", "platforms": ids(x)}, nil).json(t)["tracking_id"].(string)
	newKey := func(name string, expiresIn time.Duration) *auth.CreatedKey {
		k, err := auth.CreateKey(context.Background(), b.app.Store, b.user.Email, name, expiresIn, time.Now())
		require.NoError(t, err)
		return k
	}
	held := b.app.Auth.HeldStreams()
	require.Zero(t, held)

	// The key that stays: its stream must outlive every other.
	stays := b.openStream(b.key, jobID)
	br := b.signedIn()
	sock := admin.Dial(b.app.Cfg.DataDir)
	require.NotNil(t, sock)

	// Revoked in the dashboard: both of its streams end, and a client that reconnects is refused.
	a := newKey("dashboard revoke", 0)
	a1, a2 := b.openStream(a.Key, jobID), b.openStream(a.Key, jobID)
	aStatus, aText := b.rawStream(a.Key, jobID)
	require.Equal(t, 200, <-aStatus)
	require.Eventually(t, func() bool { return b.app.Auth.HeldStreams() == 4 }, 10*time.Second, 5*time.Millisecond)
	r := br.send("DELETE", "/api/keys/"+a.ID, nil, br.csrfHeader())
	require.Equal(t, 204, r.status, string(r.body))
	a1.ended(t, "the dashboard revoked its key")
	a2.ended(t, "the dashboard revoked its key")
	require.Contains(t, <-aText, ": API key has been revoked; the stream ends\n", "the stream says why it ends")
	require.Equal(t, 401, b.doKey(a.Key, "GET", "/v1/jobs/"+jobID+"/stream", nil, nil).status)

	// Revoked and regenerated through the admin socket (what `herald keys revoke|regenerate` do
	// while a server runs), and regenerated in the dashboard.
	for _, door := range []struct {
		name string
		end  func(id string)
	}{
		{"herald keys revoke", func(id string) {
			var v json.RawMessage
			require.NoError(t, sock.Do("POST", "/keys/"+id+"/revoke", nil, &v))
		}},
		{"herald keys regenerate", func(id string) {
			var v json.RawMessage
			require.NoError(t, sock.Do("POST", "/keys/"+id+"/regenerate", nil, &v))
		}},
		{"the dashboard's regenerate", func(id string) {
			r := br.send("POST", "/api/keys/"+id+"/regenerate", nil, br.csrfHeader())
			require.Equal(t, 200, r.status, string(r.body))
		}},
	} {
		k := newKey(door.name, 0)
		s := b.openStream(k.Key, jobID)
		door.end(k.ID)
		s.ended(t, door.name)
	}

	// A key that expires while its stream is open ends it at expiry. (The stream must open before
	// the key expires: a few seconds of margin.)
	e := newKey("expires", 4*time.Second)
	eStatus, eText := b.rawStream(e.Key, jobID)
	require.Equal(t, 200, <-eStatus, "the stream opened before the key expired")
	require.Contains(t, <-eText, ": API key has expired; the stream ends\n")

	// OAuth: a stream opened with an access token ends when the user approves the same connector
	// again (its connector key is replaced), and when the token is revoked (RFC 7009).
	ob := &apptest.OAuth{Herald: b.h, Redirect: "http://127.0.0.1:7777/callback"}
	ob.ClientID = ob.Register("Claude")
	first := ob.Grant(b.url, "posts:write jobs:read")["access_token"].(string)
	s := b.openStream(first, jobID)
	second := ob.Grant(b.url, "posts:write jobs:read")["access_token"].(string)
	s.ended(t, "the connector was approved again")
	s = b.openStream(second, jobID)
	rv := ob.Post("/oauth/revoke", "application/x-www-form-urlencoded", url.Values{"token": {second}, "client_id": {ob.ClientID}}.Encode())
	require.Equal(t, 200, rv.Status, string(rv.Body))
	s.ended(t, "its access token was revoked")

	require.True(t, stays.open(), "the stream of a key left alone is still open")
	require.Eventually(t, func() bool { return b.app.Auth.HeldStreams() == 1 }, 10*time.Second, 5*time.Millisecond,
		"the ended streams are no longer held")
	stays.cancel()
	<-stays.done
	require.Eventually(t, func() bool { return b.app.Auth.HeldStreams() == 0 }, 10*time.Second, 5*time.Millisecond)
	j := b.do("GET", "/v1/jobs/"+jobID, nil).json(t)
	require.Equal(t, "processing", j["status"], "the job itself went on")
}

// heldOpen is a stream opened with a plain HTTP client and read until the server ends it.
type heldOpen struct {
	status int
	header http.Header
	body   []byte        // a refusal's body
	text   chan string   // the stream's whole text, once the server ended it
	cancel func()        // the client leaves
	done   chan struct{} // closed when the text is in
}

// openHeld sends GET path with client (and hdr) and returns once the answer's headers are in: a
// 200 is then an open stream, read in the background.
func (b *testBundle) openHeld(client *http.Client, path string, hdr http.Header) *heldOpen {
	b.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+path, nil)
	require.NoError(b.t, err)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	require.NoError(b.t, err)
	h := &heldOpen{status: resp.StatusCode, header: resp.Header, text: make(chan string, 1), cancel: cancel, done: make(chan struct{})}
	if resp.StatusCode != http.StatusOK {
		h.body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return h
	}
	go func() {
		defer close(h.done)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		h.text <- string(b)
	}()
	return h
}

// endsWith waits for the server to end the stream and returns its text.
func (h *heldOpen) endsWith(t *testing.T, why string) string {
	t.Helper()
	select {
	case s := <-h.text:
		return s
	case <-time.After(15 * time.Second):
		t.Fatalf("the stream did not end after %s", why)
		return ""
	}
}

func (h *heldOpen) open() bool {
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// scheduledCampaign creates a campaign of one post on acct an hour ahead, with key: its stream
// stays open until then.
func (b *testBundle) scheduledCampaign(key string, acct *persistence.Account) string {
	b.t.Helper()
	post := campaignPost("later", acct)
	post["scheduledAt"] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r := b.doKey(key, "POST", "/v1/campaigns", map[string]any{"publish": "schedule", "posts": []any{post}}, nil)
	require.Equal(b.t, 202, r.status, string(r.body))
	return r.json(b.t)["campaign_id"].(string)
}

// One user may have --max-streams-per-user job and campaign streams open at once, both doors
// together: the next is refused with 429 rate_limit_exceeded and Retry-After before anything of
// it is written, another user still opens one, /healthz still answers, and a place frees when
// one of the streams ends.
func TestStreamsPerUserAreCapped(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, config: func(c *app.Config) { c.MaxStreamsPerUser = 3 },
		budgets: map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}}})
	x := b.account(platforms.X).ID
	b.waitJob(b.publishNew(map[string]any{"content": "spends the budget", "platforms": ids(x)}, nil).json(t)["tracking_id"].(string))
	jobID := b.publishNew(map[string]any{"content": "waits an hour", "platforms": ids(x)}, nil).json(t)["tracking_id"].(string)
	campaign := b.scheduledCampaign(b.key, b.account(platforms.Bluesky))
	bearer := http.Header{"Authorization": {"Bearer " + b.key}}
	br := b.signedIn()

	streams := []*heldOpen{
		b.openHeld(http.DefaultClient, "/v1/jobs/"+jobID+"/stream", bearer),
		b.openHeld(br.client, "/api/jobs/"+jobID+"/stream", nil),
		b.openHeld(http.DefaultClient, "/v1/campaigns/"+campaign+"/stream", bearer),
	}
	for i, s := range streams {
		require.Equal(t, 200, s.status, "stream %d: %s", i, s.body)
	}
	for _, path := range []string{"/api/campaigns/" + campaign + "/stream", "/api/jobs/" + jobID + "/stream"} {
		over := b.openHeld(br.client, path, nil)
		require.Equal(t, 429, over.status, "%s: %s", path, over.body)
		require.Equal(t, "5", over.header.Get("Retry-After"))
		require.Contains(t, string(over.body), `"rate_limit_exceeded"`)
		require.Contains(t, string(over.body), "3 streams open")
	}
	over := b.openHeld(http.DefaultClient, "/v1/jobs/"+jobID+"/stream", bearer)
	require.Equal(t, 429, over.status, string(over.body))
	// A finished job's single done is not a stream: it is served over the cap.
	done := b.publishNew(map[string]any{"content": "done at once", "platforms": ids(b.account(platforms.Bluesky).ID)}, nil).json(t)["tracking_id"].(string)
	b.waitJob(done)
	require.Equal(t, 200, b.openHeld(http.DefaultClient, "/v1/jobs/"+done+"/stream", bearer).status)

	// Another user is not held by it.
	other, otherKey := b.newUser("other@example.com", "pro")
	otherStream := b.openHeld(http.DefaultClient, "/v1/campaigns/"+b.scheduledCampaign(otherKey, b.newAccount(other.ID, string(platforms.Bluesky)))+"/stream",
		http.Header{"Authorization": {"Bearer " + otherKey}})
	require.Equal(t, 200, otherStream.status, string(otherStream.body))
	require.Equal(t, 200, b.doKey("", "GET", "/healthz", nil, nil).status)

	// A stream that ends frees its place.
	streams[2].cancel()
	require.Eventually(t, func() bool {
		s := b.openHeld(br.client, "/api/campaigns/"+campaign+"/stream", nil)
		if s.status == 200 {
			s.cancel()
			return true
		}
		return false
	}, 10*time.Second, 50*time.Millisecond)
}

// A stream opened on a dashboard session ends when the session does: at sign-out, and when a
// password change from another session ends it (the stream of the session that changed it goes
// on). It ends with a comment saying why, and a client that reconnects is refused with 401.
func TestSessionStreamsEndWithTheSession(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, adminSocket: true,
		budgets: map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}}})
	x := b.account(platforms.X).ID
	b.waitJob(b.publishNew(map[string]any{"content": "spends the budget", "platforms": ids(x)}, nil).json(t)["tracking_id"].(string))
	jobID := b.publishNew(map[string]any{"content": "waits an hour", "platforms": ids(x)}, nil).json(t)["tracking_id"].(string)
	campaign := b.scheduledCampaign(b.key, b.account(platforms.Bluesky))
	jobPath, campaignPath := "/api/jobs/"+jobID+"/stream", "/api/campaigns/"+campaign+"/stream"
	signIn := func(password string) *browser {
		br := b.newBrowser()
		r := br.signIn(b.user.Email, password)
		require.Equal(t, 200, r.status, string(r.body))
		return br
	}

	// Sign-out: both kinds of stream end.
	br := signIn(b.password)
	job, camp := b.openHeld(br.client, jobPath, nil), b.openHeld(br.client, campaignPath, nil)
	require.Equal(t, 200, job.status, string(job.body))
	require.Equal(t, 200, camp.status, string(camp.body))
	keyStream := b.openHeld(http.DefaultClient, "/v1/jobs/"+jobID+"/stream", http.Header{"Authorization": {"Bearer " + b.key}})
	require.Equal(t, 200, keyStream.status)
	require.Eventually(t, func() bool { return b.app.Sessions.HeldStreams() == 2 }, 10*time.Second, 5*time.Millisecond)
	r := br.send("DELETE", "/api/session", nil, br.csrfHeader())
	require.Equal(t, 204, r.status, string(r.body))
	require.Contains(t, job.endsWith(t, "sign-out"), ": the session has ended (signed out, or ended by a password change); the stream ends\n")
	require.NotContains(t, camp.endsWith(t, "sign-out"), "event: done")

	// A password change from another session ends this one's streams; the changer's go on.
	stays, ends := signIn(b.password), signIn(b.password)
	staysJob, endsJob := b.openHeld(stays.client, jobPath, nil), b.openHeld(ends.client, jobPath, nil)
	require.Equal(t, 200, staysJob.status)
	require.Equal(t, 200, endsJob.status)
	r = stays.send("POST", "/api/profile/password", map[string]any{"current_password": b.password, "new_password": "a brand new password"}, stays.csrfHeader())
	require.Equal(t, 204, r.status, string(r.body))
	endsJob.endsWith(t, "a password change from another session")
	require.Equal(t, 401, ends.send("GET", jobPath, nil, nil).status, "a reconnect is refused")

	// `herald users set-password` through the admin socket ends every session: the changer's
	// stream too.
	sock := admin.Dial(b.app.Cfg.DataDir)
	require.NotNil(t, sock)
	var v json.RawMessage
	require.NoError(t, sock.Do("POST", "/users/password", map[string]any{"email": b.user.Email, "password": "yet another password"}, &v))
	staysJob.endsWith(t, "herald users set-password")

	require.True(t, keyStream.open(), "the key's stream is not tied to any session")
	require.Eventually(t, func() bool { return b.app.Sessions.HeldStreams() == 0 }, 10*time.Second, 5*time.Millisecond)
}

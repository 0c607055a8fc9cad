package api_test

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
func openStream(h *apptest.Herald, token, jobID string) *liveStream {
	h.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.T.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/v1/jobs/"+jobID+"/stream", nil)
	require.NoError(h.T, err)
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
		h.T.Fatalf("the stream with %s… ended before its first event", token[:12])
	case <-time.After(30 * time.Second):
		h.T.Fatal("no first event in 30 s")
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
func rawStream(h *apptest.Herald, token, jobID string) (status chan int, text chan string) {
	status, text = make(chan int, 1), make(chan string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, h.URL+"/v1/jobs/"+jobID+"/stream", nil)
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
	h := apptest.Start(t, apptest.Options{Demo: true, AdminSocket: true,
		Budgets: map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}}})
	x := h.Account(platforms.X).ID
	h.WaitJob(h.DoKey(h.Key, "POST", "/v1/posts/publish", map[string]any{"content": "spends the budget", "platforms": []string{x}}, nil).JSON(t)["tracking_id"].(string))
	jobID := h.DoKey(h.Key, "POST", "/v1/posts/publish", map[string]any{"content": "waits an hour", "platforms": []string{x}}, nil).JSON(t)["tracking_id"].(string)
	newKey := func(name string, expiresIn time.Duration) *auth.CreatedKey {
		k, err := auth.CreateKey(context.Background(), h.App.Store, h.User.Email, name, expiresIn, time.Now())
		require.NoError(t, err)
		return k
	}
	held := h.App.Auth.HeldStreams()
	require.Zero(t, held)

	// The key that stays: its stream must outlive every other.
	stays := openStream(h, h.Key, jobID)
	br := h.SignedIn()
	sock := admin.Dial(h.App.Cfg.DataDir)
	require.NotNil(t, sock)

	// Revoked in the dashboard: both of its streams end, and a client that reconnects is refused.
	a := newKey("dashboard revoke", 0)
	a1, a2 := openStream(h, a.Key, jobID), openStream(h, a.Key, jobID)
	aStatus, aText := rawStream(h, a.Key, jobID)
	require.Equal(t, 200, <-aStatus)
	require.Eventually(t, func() bool { return h.App.Auth.HeldStreams() == 4 }, 10*time.Second, 5*time.Millisecond)
	r := br.Send("DELETE", "/api/keys/"+a.ID, nil, br.CSRFHeader())
	require.Equal(t, 204, r.Status, string(r.Body))
	a1.ended(t, "the dashboard revoked its key")
	a2.ended(t, "the dashboard revoked its key")
	require.Contains(t, <-aText, ": API key has been revoked; the stream ends\n", "the stream says why it ends")
	require.Equal(t, 401, h.DoKey(a.Key, "GET", "/v1/jobs/"+jobID+"/stream", nil, nil).Status)

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
			r := br.Send("POST", "/api/keys/"+id+"/regenerate", nil, br.CSRFHeader())
			require.Equal(t, 200, r.Status, string(r.Body))
		}},
	} {
		k := newKey(door.name, 0)
		s := openStream(h, k.Key, jobID)
		door.end(k.ID)
		s.ended(t, door.name)
	}

	// A key that expires while its stream is open ends it at expiry. (The stream must open before
	// the key expires: a few seconds of margin.)
	e := newKey("expires", 4*time.Second)
	eStatus, eText := rawStream(h, e.Key, jobID)
	require.Equal(t, 200, <-eStatus, "the stream opened before the key expired")
	require.Contains(t, <-eText, ": API key has expired; the stream ends\n")

	// OAuth: a stream opened with an access token ends when the user approves the same connector
	// again (its connector key is replaced), and when the token is revoked (RFC 7009).
	ob := &apptest.OAuth{Herald: h, Redirect: "http://127.0.0.1:7777/callback"}
	ob.ClientID = ob.Register("Claude")
	first := ob.Grant(h.URL, "posts:write jobs:read")["access_token"].(string)
	s := openStream(h, first, jobID)
	second := ob.Grant(h.URL, "posts:write jobs:read")["access_token"].(string)
	s.ended(t, "the connector was approved again")
	s = openStream(h, second, jobID)
	rv := ob.Post("/oauth/revoke", "application/x-www-form-urlencoded", url.Values{"token": {second}, "client_id": {ob.ClientID}}.Encode())
	require.Equal(t, 200, rv.Status, string(rv.Body))
	s.ended(t, "its access token was revoked")

	require.True(t, stays.open(), "the stream of a key left alone is still open")
	require.Eventually(t, func() bool { return h.App.Auth.HeldStreams() == 1 }, 10*time.Second, 5*time.Millisecond,
		"the ended streams are no longer held")
	stays.cancel()
	<-stays.done
	require.Eventually(t, func() bool { return h.App.Auth.HeldStreams() == 0 }, 10*time.Second, 5*time.Millisecond)
	j := h.Do("GET", "/v1/jobs/"+jobID, nil).JSON(t)
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
func openHeld(h *apptest.Herald, client *http.Client, path string, hdr http.Header) *heldOpen {
	h.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.T.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+path, nil)
	require.NoError(h.T, err)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	require.NoError(h.T, err)
	held := &heldOpen{status: resp.StatusCode, header: resp.Header, text: make(chan string, 1), cancel: cancel, done: make(chan struct{})}
	if resp.StatusCode != http.StatusOK {
		held.body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return held
	}
	go func() {
		defer close(held.done)
		defer resp.Body.Close()
		text, _ := io.ReadAll(resp.Body)
		held.text <- string(text)
	}()
	return held
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
func scheduledCampaign(h *apptest.Herald, key string, acct *persistence.Account) string {
	h.T.Helper()
	post := apptest.CampaignPost("later", acct)
	post["scheduledAt"] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r := h.DoKey(key, "POST", "/v1/campaigns", map[string]any{"publish": "schedule", "posts": []any{post}}, nil)
	require.Equal(h.T, 202, r.Status, string(r.Body))
	return r.JSON(h.T)["campaign_id"].(string)
}

// One user may have --max-streams-per-user job and campaign streams open at once, both doors
// together: the next is refused with 429 rate_limit_exceeded and Retry-After before anything of
// it is written, another user still opens one, /healthz still answers, and a place frees when
// one of the streams ends.
func TestStreamsPerUserAreCapped(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true, Config: func(c *app.Config) { c.MaxStreamsPerUser = 3 },
		Budgets: map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}}})
	x := h.Account(platforms.X).ID
	h.WaitJob(h.DoKey(h.Key, "POST", "/v1/posts/publish", map[string]any{"content": "spends the budget", "platforms": []string{x}}, nil).JSON(t)["tracking_id"].(string))
	jobID := h.DoKey(h.Key, "POST", "/v1/posts/publish", map[string]any{"content": "waits an hour", "platforms": []string{x}}, nil).JSON(t)["tracking_id"].(string)
	campaign := scheduledCampaign(h, h.Key, h.Account(platforms.Bluesky))
	bearer := http.Header{"Authorization": {"Bearer " + h.Key}}
	br := h.SignedIn()

	streams := []*heldOpen{
		openHeld(h, http.DefaultClient, "/v1/jobs/"+jobID+"/stream", bearer),
		openHeld(h, br.Client, "/api/jobs/"+jobID+"/stream", nil),
		openHeld(h, http.DefaultClient, "/v1/campaigns/"+campaign+"/stream", bearer),
	}
	for i, s := range streams {
		require.Equal(t, 200, s.status, "stream %d: %s", i, s.body)
	}
	for _, path := range []string{"/api/campaigns/" + campaign + "/stream", "/api/jobs/" + jobID + "/stream"} {
		over := openHeld(h, br.Client, path, nil)
		require.Equal(t, 429, over.status, "%s: %s", path, over.body)
		require.Equal(t, "5", over.header.Get("Retry-After"))
		require.Contains(t, string(over.body), `"rate_limit_exceeded"`)
		require.Contains(t, string(over.body), "3 streams open")
	}
	over := openHeld(h, http.DefaultClient, "/v1/jobs/"+jobID+"/stream", bearer)
	require.Equal(t, 429, over.status, string(over.body))
	// A finished job's single done is not a stream: it is served over the cap.
	done := h.DoKey(h.Key, "POST", "/v1/posts/publish", map[string]any{"content": "done at once", "platforms": []string{h.Account(platforms.Bluesky).ID}}, nil).JSON(t)["tracking_id"].(string)
	h.WaitJob(done)
	require.Equal(t, 200, openHeld(h, http.DefaultClient, "/v1/jobs/"+done+"/stream", bearer).status)

	// Another user is not held by it.
	other, otherKey := h.NewUser("other@example.com", "pro")
	otherStream := openHeld(h, http.DefaultClient, "/v1/campaigns/"+scheduledCampaign(h, otherKey, h.NewAccount(other.ID, string(platforms.Bluesky)))+"/stream",
		http.Header{"Authorization": {"Bearer " + otherKey}})
	require.Equal(t, 200, otherStream.status, string(otherStream.body))
	require.Equal(t, 200, h.DoKey("", "GET", "/healthz", nil, nil).Status)

	// A stream that ends frees its place.
	streams[2].cancel()
	require.Eventually(t, func() bool {
		s := openHeld(h, br.Client, "/api/campaigns/"+campaign+"/stream", nil)
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
	h := apptest.Start(t, apptest.Options{Demo: true, AdminSocket: true,
		Budgets: map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}}})
	x := h.Account(platforms.X).ID
	h.WaitJob(h.DoKey(h.Key, "POST", "/v1/posts/publish", map[string]any{"content": "spends the budget", "platforms": []string{x}}, nil).JSON(t)["tracking_id"].(string))
	jobID := h.DoKey(h.Key, "POST", "/v1/posts/publish", map[string]any{"content": "waits an hour", "platforms": []string{x}}, nil).JSON(t)["tracking_id"].(string)
	campaign := scheduledCampaign(h, h.Key, h.Account(platforms.Bluesky))
	jobPath, campaignPath := "/api/jobs/"+jobID+"/stream", "/api/campaigns/"+campaign+"/stream"
	signIn := func(password string) *apptest.Browser {
		br := h.NewBrowser()
		r := br.SignIn(h.User.Email, password)
		require.Equal(t, 200, r.Status, string(r.Body))
		return br
	}

	// Sign-out: both kinds of stream end.
	br := signIn(h.Password)
	job, camp := openHeld(h, br.Client, jobPath, nil), openHeld(h, br.Client, campaignPath, nil)
	require.Equal(t, 200, job.status, string(job.body))
	require.Equal(t, 200, camp.status, string(camp.body))
	keyStream := openHeld(h, http.DefaultClient, "/v1/jobs/"+jobID+"/stream", http.Header{"Authorization": {"Bearer " + h.Key}})
	require.Equal(t, 200, keyStream.status)
	require.Eventually(t, func() bool { return h.App.Sessions.HeldStreams() == 2 }, 10*time.Second, 5*time.Millisecond)
	r := br.Send("DELETE", "/api/session", nil, br.CSRFHeader())
	require.Equal(t, 204, r.Status, string(r.Body))
	require.Contains(t, job.endsWith(t, "sign-out"), ": the session has ended (signed out, or ended by a password change); the stream ends\n")
	require.NotContains(t, camp.endsWith(t, "sign-out"), "event: done")

	// A password change from another session ends this one's streams; the changer's go on.
	stays, ends := signIn(h.Password), signIn(h.Password)
	staysJob, endsJob := openHeld(h, stays.Client, jobPath, nil), openHeld(h, ends.Client, jobPath, nil)
	require.Equal(t, 200, staysJob.status)
	require.Equal(t, 200, endsJob.status)
	r = stays.Send("POST", "/api/profile/password", map[string]any{"current_password": h.Password, "new_password": "a brand new password"}, stays.CSRFHeader())
	require.Equal(t, 204, r.Status, string(r.Body))
	endsJob.endsWith(t, "a password change from another session")
	require.Equal(t, 401, ends.Send("GET", jobPath, nil, nil).Status, "a reconnect is refused")

	// `herald users set-password` through the admin socket ends every session: the changer's
	// stream too.
	sock := admin.Dial(h.App.Cfg.DataDir)
	require.NotNil(t, sock)
	var v json.RawMessage
	require.NoError(t, sock.Do("POST", "/users/password", map[string]any{"email": h.User.Email, "password": "yet another password"}, &v))
	staysJob.endsWith(t, "herald users set-password")

	require.True(t, keyStream.open(), "the key's stream is not tied to any session")
	require.Eventually(t, func() bool { return h.App.Sessions.HeldStreams() == 0 }, 10*time.Second, 5*time.Millisecond)
}

package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/http/auth"
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
	ob := &oauthBundle{testBundle: b, redirect: "http://127.0.0.1:7777/callback"}
	reg := ob.post("/oauth/register", "application/json", `{"client_name":"Claude","redirect_uris":["`+ob.redirect+`"]}`)
	require.Equal(t, 201, reg.status, string(reg.body))
	ob.clientID = reg.json(t)["client_id"].(string)
	first := ob.grant(b.url, "posts:write jobs:read")["access_token"].(string)
	s := b.openStream(first, jobID)
	second := ob.grant(b.url, "posts:write jobs:read")["access_token"].(string)
	s.ended(t, "the connector was approved again")
	s = b.openStream(second, jobID)
	rv := ob.post("/oauth/revoke", "application/x-www-form-urlencoded", url.Values{"token": {second}, "client_id": {ob.clientID}}.Encode())
	require.Equal(t, 200, rv.status, string(rv.body))
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

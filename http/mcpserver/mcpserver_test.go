package mcpserver

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

// A response streamed on /mcp ends when the key that opened it is revoked: the handler's request
// context is cancelled, with the reason, while a stream of another key goes on.
func TestMCPStreamsEndWithTheirKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = auth.CreateUser(ctx, s, auth.NewUser{Email: "user@example.com"}, time.Now())
	require.NoError(t, err)
	a := auth.NewAuthenticator(s, nil)
	kA, err := auth.CreateKey(ctx, s, "user@example.com", "a", 0, time.Now())
	require.NoError(t, err)
	kB, err := auth.CreateKey(ctx, s, "user@example.com", "b", 0, time.Now())
	require.NoError(t, err)

	// A response that streams until its request's context ends, then says why.
	streaming := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprint(w, "event: message\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		_, _ = fmt.Fprintf(w, ": %v\n\n", context.Cause(r.Context()))
	})
	v := APIKeys{Auth: a}
	srv := httptest.NewServer(authenticate(v, func() string { return "" }, func(string) {}, nil, held(v, streaming)))
	t.Cleanup(srv.Close)
	open := func(key string) (chan string, context.CancelFunc) {
		cctx, cancel := context.WithCancel(ctx)
		req, err := http.NewRequestWithContext(cctx, http.MethodPost, srv.URL, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
		lines := make(chan string, 16)
		go func() {
			defer close(lines)
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		require.Equal(t, "event: message", <-lines)
		require.Equal(t, "data: {}", <-lines)
		require.Empty(t, <-lines)
		return lines, cancel
	}
	linesA, cancelA := open(kA.Key)
	defer cancelA()
	linesB, cancelB := open(kB.Key)
	defer cancelB()
	require.Equal(t, 2, a.HeldStreams())

	_, err = auth.RevokeKey(ctx, s, kA.ID, time.Now())
	require.NoError(t, err)
	a.Invalidate()
	var rest []string
	for l := range linesA { // ends when the server ends the response
		rest = append(rest, l)
	}
	require.Contains(t, rest, ": API key has been revoked")
	select {
	case l, ok := <-linesB:
		t.Fatalf("the stream of another key ended or moved: %q %v", l, ok)
	default:
	}
	require.Eventually(t, func() bool { return a.HeldStreams() == 1 }, 10*time.Second, 5*time.Millisecond)
	cancelB()
	require.Eventually(t, func() bool { return a.HeldStreams() == 0 }, 10*time.Second, 5*time.Millisecond)
}

package api

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/linkcard"
)

// names is a resolver of the test's host names.
type names map[string]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := n[host]
	if !ok {
		return nil, fmt.Errorf("no such host %s", host)
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// routed is the production egress rules (a strict guard) over a client that takes every
// connection to one loopback TLS server, whatever the name: a request the rules let through
// reaches the page server, so a page server that saw no request proves that none was sent.
type routed struct {
	guard  *webhook.Guard
	client *http.Client
}

func (r routed) CheckURL(ctx context.Context, raw string) (string, error) {
	return r.guard.CheckURL(ctx, raw)
}
func (r routed) Client() *http.Client { return r.client }

func routedEgress(t *testing.T, to string, n names) routed {
	t.Helper()
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, to)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test's own server
	}
	t.Cleanup(tr.CloseIdleConnections)
	return routed{guard: webhook.NewGuard(webhook.EgressOptions{Resolver: n}), client: &http.Client{Transport: tr, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// POST /v1/posts/validate reads each target's link card: the card on the preview, or a warning
// naming the target's field when the page cannot be read; a host resolving to a private address
// is refused before any request.
func TestValidateReadsLinkCards(t *testing.T) {
	t.Parallel()
	// pages is a page server of the subtest; hits counts its requests.
	pages := func(t *testing.T) (string, *atomic.Int64) {
		var hits atomic.Int64
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<head><meta property="og:title" content="Page of ` + r.Host + `"><meta property="og:description" content="A page."></head>`))
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "https://"), &hits
	}
	check := func(t *testing.T, routeTo, content string, options string) TargetCheck {
		t.Helper()
		f := newCheckFixture(t)
		n := names{"news.example.com": "93.184.216.34", "intranet.example.com": "10.20.30.40", "gone.example.com": "93.184.216.35"}
		f.h.Cards = linkcard.New(linkcard.Options{Egress: routedEgress(t, routeTo, n), Timeout: 2 * time.Second})
		s := &submission{content: &content, accounts: []string{f.bsky}, whole: true, publish: true, preview: true}
		if options != "" {
			s.specs = []targetSpec{{AccountID: f.bsky, Options: []byte(options)}}
		}
		c := echo.New().NewContext(httptest.NewRequest("POST", "/v1/posts/validate", nil), httptest.NewRecorder())
		res, err := f.h.checkPost(c, f.user, s, mediaCache{})
		require.NoError(t, err)
		require.Empty(t, res.errs, "a page that cannot be read never refuses a post")
		require.Len(t, res.targets, 1)
		return res.targets[0]
	}

	t.Run("card", func(t *testing.T) {
		t.Parallel()
		addr, hits := pages(t)
		tc := check(t, addr, "read https://news.example.com/story", "")
		assert.Empty(t, tc.Warnings)
		require.NotNil(t, tc.Preview.LinkCard)
		assert.Equal(t, PreviewCard{URL: "https://news.example.com/story", Title: "Page of news.example.com", Description: "A page."}, *tc.Preview.LinkCard)
		assert.EqualValues(t, 1, hits.Load())
	})
	t.Run("private address", func(t *testing.T) {
		t.Parallel()
		addr, hits := pages(t)
		tc := check(t, addr, "no link in the text", `{"link":"https://intranet.example.com/admin"}`)
		assert.True(t, tc.Valid)
		assert.Equal(t, []platforms.FieldError{{Field: "options.link", Message: "no link card: must be a public address: intranet.example.com resolves to 10.20.30.40, which is not public; nothing was fetched; the post goes out without a card"}}, tc.Warnings)
		assert.Nil(t, tc.Preview.LinkCard)
		assert.Zero(t, hits.Load(), "the page server got no request")
	})
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		closedAddr := closed.Addr().String()
		require.NoError(t, closed.Close())
		tc := check(t, closedAddr, "see https://gone.example.com/page", "")
		assert.True(t, tc.Valid)
		assert.Equal(t, []platforms.FieldError{{Field: "content", Message: "no link card: the page could not be read: connection refused by gone.example.com; the post goes out without a card"}}, tc.Warnings)
		assert.Nil(t, tc.Preview.LinkCard)
	})
	t.Run("turned off", func(t *testing.T) {
		t.Parallel()
		addr, hits := pages(t)
		tc := check(t, addr, "see https://news.example.com/other", `{"link_card":false}`)
		assert.Empty(t, tc.Warnings)
		assert.Nil(t, tc.Preview.LinkCard)
		assert.Zero(t, hits.Load())
	})
}

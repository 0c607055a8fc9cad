package linkcard_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/platforms/linkcard"
)

// site is a real loopback HTTP server of pages, counting the requests it answers.
type site struct {
	*httptest.Server
	mux  *http.ServeMux
	hits atomic.Int64
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{mux: http.NewServeMux()}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) page(path, body string) {
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(body))
	})
}

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewRGBA(image.Rect(0, 0, w, h))))
	return b.Bytes()
}

// loopback is the egress a sandbox has: private targets allowed (tests' servers are on
// loopback), every other rule and the dialer as in production.
func loopback() *webhook.Guard {
	return webhook.NewGuard(webhook.EgressOptions{AllowPrivate: true, AttemptTimeout: 10 * time.Second})
}

func TestReadCardOpenGraph(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	img := pngBytes(t, 4, 3)
	s.page("/post", `<!doctype html><html><head>
		<title>Plain title</title>
		<meta property="og:title" content="  The   &amp; Title ">
		<meta property="og:description" content="What it is about.">
		<meta property="og:image" content="/img/card.png">
		<meta name="description" content="ignored: og:description is there">
	</head><body><meta property="og:title" content="in the body: not read"></body></html>`)
	s.mux.HandleFunc("/img/card.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream") // the bytes decide
		_, _ = w.Write(img)
	})
	r := linkcard.New(linkcard.Options{Egress: loopback()})
	card, err := r.ReadCard(context.Background(), s.URL+"/post")
	require.NoError(t, err)
	assert.Equal(t, s.URL+"/post", card.URL)
	assert.Equal(t, "The & Title", card.Title)
	assert.Equal(t, "What it is about.", card.Description)
	require.NotNil(t, card.Image)
	assert.Equal(t, s.URL+"/img/card.png", card.Image.URL, "a relative og:image is resolved against the page")
	assert.Equal(t, "image/png", card.Image.ContentType)
	assert.Equal(t, img, card.Image.Data)

	// A link to a part of the page reads the page.
	part, err := r.ReadCard(context.Background(), s.URL+"/post#comments")
	require.NoError(t, err)
	assert.Equal(t, s.URL+"/post#comments", part.URL)
	assert.Equal(t, "The & Title", part.Title)

	// A second read is the cache's: the site is not asked again.
	hits := s.hits.Load()
	again, err := r.ReadCard(context.Background(), s.URL+"/post")
	require.NoError(t, err)
	assert.Equal(t, card, again)
	assert.Equal(t, hits, s.hits.Load())
	assert.Equal(t, 2, r.Len())
}

func TestReadCardFallsBackToTitleAndDescription(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.page("/plain", `<html><head><title>
		Only a
		title</title><meta name="Description" content="And a meta description."></head><body>x</body></html>`)
	// A page in Latin-1, as its header says.
	s.mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		_, _ = w.Write([]byte("<html><head><title>Caf\xe9 cr\xe8me</title></head></html>"))
	})
	r := linkcard.New(linkcard.Options{Egress: loopback()})
	card, err := r.ReadCard(context.Background(), s.URL+"/plain")
	require.NoError(t, err)
	assert.Equal(t, "Only a title", card.Title)
	assert.Equal(t, "And a meta description.", card.Description)
	assert.Nil(t, card.Image)
	card, err = r.ReadCard(context.Background(), s.URL+"/latin1")
	require.NoError(t, err)
	assert.Equal(t, "Café crème", card.Title)
}

func TestReadCardLimits(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	// The tags after the first MiB are not read.
	s.page("/huge", "<html><head>"+strings.Repeat("<!-- padding -->", (1<<20)/16+1)+`<meta property="og:title" content="too far"></head></html>`)
	// An image over the limit, or not an image, leaves a card without one.
	s.page("/big-image", `<head><meta property="og:title" content="Big"><meta property="og:image" content="/big.png"></head>`)
	s.mux.HandleFunc("/big.png", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(append(pngBytes(t, 1, 1), make([]byte, 2000)...))
	})
	s.page("/svg-image", `<head><meta property="og:title" content="Svg"><meta property="og:image" content="/i.svg"></head>`)
	s.mux.HandleFunc("/i.svg", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		_, _ = w.Write([]byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`))
	})
	s.mux.HandleFunc("/photo.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pngBytes(t, 2, 2))
	})
	s.mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "gone", http.StatusGone) })
	s.page("/empty", `<html><head></head><body>nothing to say</body></html>`)

	r := linkcard.New(linkcard.Options{Egress: loopback(), MaxImageBytes: 1000})
	_, err := r.ReadCard(context.Background(), s.URL+"/huge")
	require.EqualError(t, err, "the page has no title, description or image")
	for _, path := range []string{"/big-image", "/svg-image"} {
		card, err := r.ReadCard(context.Background(), s.URL+path)
		require.NoError(t, err, path)
		assert.NotEmpty(t, card.Title, path)
		assert.Nil(t, card.Image, path)
	}
	_, err = r.ReadCard(context.Background(), s.URL+"/photo.png")
	require.EqualError(t, err, "the link is not an HTML page (image/png)")
	_, err = r.ReadCard(context.Background(), s.URL+"/gone")
	require.EqualError(t, err, "127.0.0.1 answered HTTP 410")
	_, err = r.ReadCard(context.Background(), s.URL+"/empty")
	require.EqualError(t, err, "the page has no title, description or image")
	assert.Equal(t, 2, r.Len(), "failures are not kept")
}

func TestReadCardTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := newSite(t)
	s.mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	r := linkcard.New(linkcard.Options{Egress: loopback(), Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := r.ReadCard(context.Background(), s.URL+"/slow")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the page could not be read: timed out")
	assert.Less(t, time.Since(start), 5*time.Second)
	var e *linkcard.Error
	require.ErrorAs(t, err, &e)
	assert.False(t, e.Refused)
}

func TestReadCardFollowsRedirects(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.page("/final", `<head><meta property="og:title" content="Arrived"><meta property="og:image" content="card.png"></head>`)
	s.mux.HandleFunc("/dir/card.png", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pngBytes(t, 1, 1)) })
	s.mux.HandleFunc("/card.png", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(pngBytes(t, 1, 1)) })
	s.mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/final", http.StatusMovedPermanently)
	})
	s.mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	r := linkcard.New(linkcard.Options{Egress: loopback(), MaxRedirects: 3})
	card, err := r.ReadCard(context.Background(), s.URL+"/start")
	require.NoError(t, err)
	assert.Equal(t, s.URL+"/start", card.URL, "the card is for the link as given")
	assert.Equal(t, "Arrived", card.Title)
	require.NotNil(t, card.Image)
	assert.Equal(t, s.URL+"/card.png", card.Image.URL, "resolved against the page it arrived at")
	_, err = r.ReadCard(context.Background(), s.URL+"/loop")
	require.EqualError(t, err, "the page redirects more than 3 times")
}

// resolver maps names to addresses, each name's answers in turn (the last one repeats).
type resolver struct {
	mu sync.Mutex
	m  map[string][]string
}

func (r *resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	answers := r.m[host]
	if len(answers) == 0 {
		return nil, fmt.Errorf("no such host %s", host)
	}
	a := answers[0]
	if len(answers) > 1 {
		r.m[host] = answers[1:]
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// The production egress refuses a link to a private address before anything is sent: a literal
// address, a name resolving to one when checked, and a name resolving to one only when dialled.
func TestReadCardRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	res := &resolver{m: map[string][]string{
		"intranet.example.com": {"10.1.2.3"},
		"rebind.example.com":   {"93.184.216.34", "127.0.0.1"},
	}}
	r := linkcard.New(linkcard.Options{Egress: webhook.NewGuard(webhook.EgressOptions{Resolver: res})})
	for link, want := range map[string]string{
		"https://127.0.0.1/page":            "must be a public address: 127.0.0.1 is loopback, private, link-local, shared (CGNAT), multicast or reserved; nothing was fetched",
		"https://intranet.example.com/page": "must be a public address: intranet.example.com resolves to 10.1.2.3, which is not public; nothing was fetched",
		"https://rebind.example.com/page":   "address not allowed: rebind.example.com is, or resolves to, a loopback, private or reserved address; nothing was fetched",
		"https://localhost/page":            "must be a public host name: localhost names a local host; nothing was fetched",
		"http://example.com/page":           "must use https; nothing was fetched",
	} {
		_, err := r.ReadCard(context.Background(), link)
		require.EqualError(t, err, want, link)
		var e *linkcard.Error
		require.ErrorAs(t, err, &e)
		assert.True(t, e.Refused, link)
	}
}

// allowOne is an egress that allows one loopback site and applies the production rules to every
// other URL: a site that redirects to a private address.
type allowOne struct {
	site   string // host:port
	strict *webhook.Guard
	client *http.Client
}

func (a allowOne) CheckURL(ctx context.Context, raw string) (string, error) {
	if u, err := url.Parse(raw); err == nil && u.Host == a.site {
		return raw, nil
	}
	return a.strict.CheckURL(ctx, raw)
}

func (a allowOne) Client() *http.Client { return a.client }

func TestReadCardRefusesRedirectToPrivateAddress(t *testing.T) {
	t.Parallel()
	inside := newSite(t)
	inside.page("/admin", `<head><meta property="og:title" content="secret"></head>`)
	outside := newSite(t)
	outside.mux.HandleFunc("/go", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	outside.page("/page", `<head><meta property="og:title" content="Public"><meta property="og:image" content="`+inside.URL+`/admin"></head>`)
	res := &resolver{m: map[string][]string{"inside.example.com": {"192.168.0.10"}}}
	eg := allowOne{site: strings.TrimPrefix(outside.URL, "http://"), strict: webhook.NewGuard(webhook.EgressOptions{Resolver: res}), client: loopback().Client()}
	r := linkcard.New(linkcard.Options{Egress: eg})
	for to, want := range map[string]string{
		inside.URL + "/admin":                   "the page redirects to 127.0.0.1, which is refused: must use https; nothing was fetched",
		"https://inside.example.com/admin":      "the page redirects to inside.example.com, which is refused: must be a public address: inside.example.com resolves to 192.168.0.10, which is not public; nothing was fetched",
		"https://[::ffff:127.0.0.1]:8443/admin": "the page redirects to ::ffff:127.0.0.1, which is refused: must use port 443; nothing was fetched",
	} {
		_, err := r.ReadCard(context.Background(), outside.URL+"/go?to="+url.QueryEscape(to))
		require.EqualError(t, err, want, to)
	}
	// An og:image on a private address is not read either: the card goes without it.
	card, err := r.ReadCard(context.Background(), outside.URL+"/page")
	require.NoError(t, err)
	assert.Equal(t, "Public", card.Title)
	assert.Nil(t, card.Image)
	assert.Zero(t, inside.hits.Load(), "the private site was never asked")
}

func TestReadCardCacheIsBounded(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	for i := range 5 {
		s.page(fmt.Sprintf("/p%d", i), fmt.Sprintf(`<title>Page %d</title>`, i))
	}
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r := linkcard.New(linkcard.Options{Egress: loopback(), CacheEntries: 3, CacheTTL: time.Minute, Now: clock})
	for i := range 5 {
		_, err := r.ReadCard(context.Background(), fmt.Sprintf("%s/p%d", s.URL, i))
		require.NoError(t, err)
	}
	assert.Equal(t, 3, r.Len())
	hits := s.hits.Load()
	_, err := r.ReadCard(context.Background(), s.URL+"/p4")
	require.NoError(t, err)
	assert.Equal(t, hits, s.hits.Load(), "a recent card is the cache's")
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	_, err = r.ReadCard(context.Background(), s.URL+"/p4")
	require.NoError(t, err)
	assert.Equal(t, hits+1, s.hits.Load(), "an old card is read again")
}

// herald_link_card_reads_total counts reads by outcome; its only label is the outcome.
func TestReadCardMetrics(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.page("/ok", `<title>ok</title>`)
	reg := prometheus.NewRegistry()
	r := linkcard.New(linkcard.Options{Egress: loopback(), Registry: reg})
	for _, link := range []string{s.URL + "/ok", s.URL + "/ok", s.URL + "/missing"} {
		_, _ = r.ReadCard(context.Background(), link)
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP herald_link_card_reads_total Link card reads by outcome: read, cached, refused (the egress refused the address), failed.
# TYPE herald_link_card_reads_total counter
herald_link_card_reads_total{outcome="cached"} 1
herald_link_card_reads_total{outcome="failed"} 1
herald_link_card_reads_total{outcome="read"} 1
`), "herald_link_card_reads_total"))

	strictReg := prometheus.NewRegistry()
	strict := linkcard.New(linkcard.Options{Egress: webhook.NewGuard(webhook.EgressOptions{}), Registry: strictReg})
	_, err := strict.ReadCard(context.Background(), "https://10.0.0.1/")
	require.Error(t, err)
	require.NoError(t, testutil.GatherAndCompare(strictReg, strings.NewReader(`
# HELP herald_link_card_reads_total Link card reads by outcome: read, cached, refused (the egress refused the address), failed.
# TYPE herald_link_card_reads_total counter
herald_link_card_reads_total{outcome="refused"} 1
`), "herald_link_card_reads_total"))
}

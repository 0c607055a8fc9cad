// Package linkcard reads the link card of a page: its og:title, og:description and og:image (else
// its <title> and meta description), the image read too, for the networks that show only the card
// a post sends (Bluesky's external embed, LinkedIn's article share).
//
// A page is chosen by whoever writes a post, so it is read through the egress webhooks use
// (actors/webhook.Guard): the same URL rules (https on port 443, no local names, no address that
// is or resolves to a private, loopback, link-local or reserved one) and the same dial-time checks
// of every address connected to, so that a name resolving to a public address when checked and to
// a private one when dialled is still refused. A host that is refused is never sent a request.
// Redirects are followed (at most MaxRedirects), each target checked the same way before it is
// asked. Everything is bounded: one read takes at most Timeout (5 s), at most MaxPageBytes of the
// page are parsed (1 MiB; the tags are in its head), an image is at most MaxImageBytes (1,000,000,
// Bluesky's blob limit) and must be a JPEG, PNG, GIF or WEBP by its bytes.
//
// Cards read are kept a while (CacheTTL) in a cache bounded in entries and bytes, so that a post
// validated and then published reads its page once; failures are not kept.
package linkcard

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/platforms"
)

// Egress is what the reader asks of the outbound side: the URL rules and the client whose dialer
// checks every address (*webhook.Guard).
type Egress interface {
	CheckURL(ctx context.Context, raw string) (string, error)
	Client() *http.Client
}

var _ Egress = (*webhook.Guard)(nil)

// Options configure a Reader. Zero values take the defaults.
type Options struct {
	// Egress reads the pages. Required.
	Egress Egress
	// Timeout bounds one card's read, page and image together (default 5 s).
	Timeout time.Duration
	// MaxPageBytes is how much of a page is parsed (default 1 MiB).
	MaxPageBytes int64
	// MaxImageBytes is the largest image kept (default 1,000,000 bytes).
	MaxImageBytes int64
	// MaxRedirects is how many redirects one fetch follows (default 5).
	MaxRedirects int
	// CacheEntries and CacheBytes bound the cache (default 256 cards, 32 MiB of images);
	// CacheTTL is how long a card is kept (default 10 minutes).
	CacheEntries int
	CacheBytes   int64
	CacheTTL     time.Duration
	// Now is the cache's clock (default time.Now).
	Now func() time.Time
	// Registry receives herald_link_card_reads_total (nil: unregistered).
	Registry prometheus.Registerer
}

// Limits of what a card keeps of a page's text.
const (
	maxTitle       = 300
	maxDescription = 1000
)

// userAgent names Herald to the sites it reads.
const userAgent = "Mozilla/5.0 (compatible; HeraldLinkCard/1.0)"

// Reader reads link cards. It is safe for concurrent use.
type Reader struct {
	opts  Options
	cache *cache
	// reads counts ReadCard by outcome: read, cached, refused (the egress refused an address),
	// failed (any other reason the page gave no card).
	reads *prometheus.CounterVec
}

var _ platforms.CardReader = (*Reader)(nil)

// New returns a reader.
func New(o Options) *Reader {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.MaxPageBytes <= 0 {
		o.MaxPageBytes = 1 << 20
	}
	if o.MaxImageBytes <= 0 {
		o.MaxImageBytes = 1_000_000
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = 5
	}
	if o.CacheEntries <= 0 {
		o.CacheEntries = 256
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 32 << 20
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = 10 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Reader{opts: o, cache: newCache(o.CacheEntries, o.CacheBytes, o.CacheTTL, o.Now),
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_link_card_reads_total", Help: "Link card reads by outcome: read, cached, refused (the egress refused the address), failed.",
		}, []string{"outcome"})}
	if o.Registry != nil {
		o.Registry.MustRegister(r.reads)
	}
	return r
}

// Error is a page that could not be read. Its message is safe to show to the one who chose the
// link: it names the link's host and nothing of Herald's own network.
type Error struct {
	// Reason says why.
	Reason string
	// Refused is true when the egress refused an address (a private one, a local name, a port or
	// scheme it does not allow): nothing was sent to it.
	Refused bool
	// Err is the underlying error, for the logs.
	Err error
}

func (e *Error) Error() string { return e.Reason }
func (e *Error) Unwrap() error { return e.Err }

// ReadCard reads the card of the page at link.
func (r *Reader) ReadCard(ctx context.Context, link string) (platforms.LinkCard, error) {
	card, cached, err := r.read(ctx, link)
	var e *Error
	switch {
	case errors.As(err, &e) && e.Refused:
		r.reads.WithLabelValues("refused").Inc()
	case err != nil:
		r.reads.WithLabelValues("failed").Inc()
	case cached:
		r.reads.WithLabelValues("cached").Inc()
	default:
		r.reads.WithLabelValues("read").Inc()
	}
	return card, err
}

// read is ReadCard; cached says the card is the cache's.
func (r *Reader) read(ctx context.Context, link string) (platforms.LinkCard, bool, error) {
	if r.opts.Egress == nil {
		return platforms.LinkCard{}, false, &Error{Reason: "pages are not read here"}
	}
	if card, ok := r.cache.get(link); ok {
		return card, true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	resp, err := r.open(ctx, link)
	if err != nil {
		return platforms.LinkCard{}, false, err
	}
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); ct != "" && (err != nil || (mt != "text/html" && mt != "application/xhtml+xml")) {
		return platforms.LinkCard{}, false, &Error{Reason: fmt.Sprintf("the link is not an HTML page (%s)", strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))}
	}
	m, err := parse(io.LimitReader(resp.Body, r.opts.MaxPageBytes), ct)
	if err != nil {
		return platforms.LinkCard{}, false, &Error{Reason: "reading the page failed: " + webhook.DescribeError(err, resp.Request.URL.Hostname()), Err: err}
	}
	card := platforms.LinkCard{URL: link, Title: clip(m.title(), maxTitle), Description: clip(m.description(), maxDescription)}
	if src := m.image(); src != "" {
		if u, err := resp.Request.URL.Parse(src); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
			// An image that cannot be read leaves a card without one.
			card.Image, _ = r.readImage(ctx, u.String())
		}
	}
	if card.Title == "" && card.Description == "" && card.Image == nil {
		return platforms.LinkCard{}, false, &Error{Reason: "the page has no title, description or image"}
	}
	r.cache.put(link, card)
	return card, false, nil
}

// open GETs raw through the egress, following redirects (each target checked before it is
// asked), and answers the 200 response.
func (r *Reader) open(ctx context.Context, raw string) (*http.Response, error) {
	for hop := 0; ; hop++ {
		// A fragment names a part of the page and is never sent: the page is the URL without it.
		if u, err := url.Parse(raw); err == nil && (u.Fragment != "" || strings.HasSuffix(raw, "#")) {
			u.Fragment, u.RawFragment = "", ""
			raw = u.String()
		}
		checked, err := r.opts.Egress.CheckURL(ctx, raw)
		if err != nil {
			reason := err.Error()
			var ue *webhook.URLError
			if errors.As(err, &ue) {
				reason = ue.Reason
			}
			if hop > 0 {
				reason = "the page redirects to " + hostOf(raw) + ", which is refused: " + reason
			}
			return nil, &Error{Reason: reason + "; nothing was fetched", Refused: true, Err: err}
		}
		host := hostOf(checked)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, checked, nil)
		if err != nil {
			return nil, &Error{Reason: "the link is not a URL Herald can read", Err: err}
		}
		req.Header.Set("User-Agent", userAgent)
		req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,image/*;q=0.8,*/*;q=0.1")
		resp, err := r.opts.Egress.Client().Do(req)
		if err != nil {
			if errors.Is(err, webhook.ErrBlocked) {
				return nil, &Error{Reason: webhook.DescribeError(err, host) + "; nothing was fetched", Refused: true, Err: err}
			}
			return nil, &Error{Reason: "the page could not be read: " + webhook.DescribeError(err, host), Err: err}
		}
		switch resp.StatusCode {
		case http.StatusOK:
			return resp, nil
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			loc := resp.Header.Get("Location")
			resp.Body.Close()
			next, err := resp.Request.URL.Parse(loc)
			switch {
			case loc == "" || err != nil:
				return nil, &Error{Reason: fmt.Sprintf("%s answered HTTP %d without a usable Location", host, resp.StatusCode)}
			case hop >= r.opts.MaxRedirects:
				return nil, &Error{Reason: fmt.Sprintf("the page redirects more than %d times", r.opts.MaxRedirects)}
			}
			raw = next.String()
		default:
			resp.Body.Close()
			return nil, &Error{Reason: fmt.Sprintf("%s answered HTTP %d", host, resp.StatusCode)}
		}
	}
}

// readImage reads a card's image: at most MaxImageBytes, a JPEG, PNG, GIF or WEBP by its bytes.
func (r *Reader) readImage(ctx context.Context, src string) (*platforms.CardImage, error) {
	resp, err := r.open(ctx, src)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > r.opts.MaxImageBytes {
		return nil, &Error{Reason: fmt.Sprintf("the image is %d bytes; at most %d", resp.ContentLength, r.opts.MaxImageBytes)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, r.opts.MaxImageBytes+1))
	if err != nil {
		return nil, &Error{Reason: "reading the image failed: " + webhook.DescribeError(err, resp.Request.URL.Hostname()), Err: err}
	}
	if int64(len(data)) > r.opts.MaxImageBytes {
		return nil, &Error{Reason: fmt.Sprintf("the image is over %d bytes", r.opts.MaxImageBytes)}
	}
	switch ct := http.DetectContentType(data); ct {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return &platforms.CardImage{URL: resp.Request.URL.String(), ContentType: ct, Data: data}, nil
	default:
		return nil, &Error{Reason: "the image is not a JPEG, PNG, GIF or WEBP (" + ct + ")"}
	}
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "the host"
	}
	return u.Hostname()
}

// meta is what a page's head says of it.
type meta struct {
	og           map[string]string // og:title, og:description, og:image, twitter:... (first of each)
	htmlTitle    string
	metaDesc     string
	sawTitleText bool
}

func (m *meta) title() string {
	return first(m.og["og:title"], m.og["twitter:title"], m.htmlTitle)
}

func (m *meta) description() string {
	return first(m.og["og:description"], m.og["twitter:description"], m.metaDesc)
}

func (m *meta) image() string {
	return strings.TrimSpace(first(m.og["og:image"], m.og["og:image:url"], m.og["og:image:secure_url"], m.og["twitter:image"], m.og["twitter:image:src"]))
}

func first(vs ...string) string {
	for _, v := range vs {
		if v = collapse(v); v != "" {
			return v
		}
	}
	return ""
}

// parse reads a page's head (up to <body> or </head>) in the page's encoding.
func parse(body io.Reader, contentType string) (*meta, error) {
	utf, err := charset.NewReader(body, contentType)
	if err != nil {
		return nil, err
	}
	m := &meta{og: map[string]string{}}
	z := html.NewTokenizer(utf)
	inTitle := false
	for {
		switch z.Next() {
		case html.ErrorToken:
			if err := z.Err(); err != io.EOF {
				return m, err
			}
			return m, nil
		case html.TextToken:
			if inTitle && !m.sawTitleText {
				m.htmlTitle += string(z.Text())
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "title":
				inTitle, m.sawTitleText = false, m.htmlTitle != ""
			case "head":
				return m, nil
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch string(name) {
			case "body":
				return m, nil
			case "title":
				inTitle = !m.sawTitleText
			case "meta":
				if !hasAttr {
					continue
				}
				var key, content string
				for {
					k, v, more := z.TagAttr()
					switch strings.ToLower(string(k)) {
					case "property", "name":
						if key == "" {
							key = strings.ToLower(strings.TrimSpace(string(v)))
						}
					case "content":
						content = string(v)
					}
					if !more {
						break
					}
				}
				switch {
				case key == "description":
					if m.metaDesc == "" {
						m.metaDesc = content
					}
				case strings.HasPrefix(key, "og:"), strings.HasPrefix(key, "twitter:"):
					if _, ok := m.og[key]; !ok && strings.TrimSpace(content) != "" {
						m.og[key] = content
					}
				}
			}
		}
	}
}

// collapse trims s and collapses its runs of white space to one space.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip cuts s to at most n characters, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.TrimSpace(string([]rune(s)[:n-1])) + "…"
}

// cache keeps cards read, by link: at most entries cards and bytes of images, each for ttl; the
// least recently used goes first.
type cache struct {
	mu      sync.Mutex
	entries int
	bytes   int64
	ttl     time.Duration
	now     func() time.Time
	used    int64
	order   *list.List // of *cached, most recently used first
	byLink  map[string]*list.Element
}

type cached struct {
	link string
	card platforms.LinkCard
	at   time.Time
	size int64
}

func newCache(entries int, bytes int64, ttl time.Duration, now func() time.Time) *cache {
	return &cache{entries: entries, bytes: bytes, ttl: ttl, now: now, order: list.New(), byLink: map[string]*list.Element{}}
}

func (c *cache) get(link string) (platforms.LinkCard, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byLink[link]
	if !ok {
		return platforms.LinkCard{}, false
	}
	v := e.Value.(*cached)
	if c.now().Sub(v.at) > c.ttl {
		c.remove(e)
		return platforms.LinkCard{}, false
	}
	c.order.MoveToFront(e)
	return v.card, true
}

func (c *cache) put(link string, card platforms.LinkCard) {
	size := int64(len(link) + len(card.Title) + len(card.Description))
	if card.Image != nil {
		size += int64(len(card.Image.Data) + len(card.Image.URL))
	}
	if size > c.bytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byLink[link]; ok {
		c.remove(e)
	}
	c.byLink[link] = c.order.PushFront(&cached{link: link, card: card, at: c.now(), size: size})
	c.used += size
	for c.order.Len() > c.entries || c.used > c.bytes {
		c.remove(c.order.Back())
	}
}

func (c *cache) remove(e *list.Element) {
	v := c.order.Remove(e).(*cached)
	delete(c.byLink, v.link)
	c.used -= v.size
}

// Len is how many cards the cache holds.
func (r *Reader) Len() int {
	r.cache.mu.Lock()
	defer r.cache.mu.Unlock()
	return r.cache.order.Len()
}

package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// agencyMix is what each client of the agency has connected: two LinkedIn members (the
// founder's and the marketing lead's profiles) and the brand's Pinterest account. Every post goes
// to its client's three accounts.
//
// The networks are chosen for limits that apply per account only. The others hold a burst of
// 10,000 posts back for hours whatever Herald does, because their limits are shared by every
// account of one app or one IP address: the Graph API app budget of Facebook, Instagram and
// Threads (20,000 calls an hour), Bluesky's 3,000 requests per 5 minutes per IP address, X's
// 10,000 posts a day per app (networks.md). The scenario measures Herald, not those limits.
var agencyMix = []string{"linkedin", "linkedin", "pinterest"}

// agencyAccount is one connected account of an agency's client: its platform and handle.
type agencyAccount struct{ platform, handle string }

// connectAgency connects the accounts of clients agency clients (agencyMix each, handles named
// prefix, client, platform and place) through the browser flow, and returns them in order with
// their ids by "platform/handle".
func (e *Env) connectAgency(clients int, prefix string) ([]agencyAccount, map[string]string, error) {
	var wanted []agencyAccount
	for c := 0; c < clients; c++ {
		for i, p := range agencyMix {
			wanted = append(wanted, agencyAccount{p, fmt.Sprintf("%s%03d-%s-%d", prefix, c, p, i)})
		}
	}
	if err := parallel(8, len(wanted), func(i int) error { return e.connectBrowser(wanted[i].platform, wanted[i].handle) }); err != nil {
		return nil, nil, err
	}
	var listed struct {
		Data []struct {
			ID       string  `json:"id"`
			Platform string  `json:"platform"`
			Username *string `json:"username"`
		} `json:"data"`
	}
	if err := e.getJSON("/v1/accounts", &listed); err != nil {
		return nil, nil, err
	}
	byHandle := map[string]string{}
	for _, a := range listed.Data {
		if a.Username != nil {
			byHandle[a.Platform+"/"+*a.Username] = a.ID
		}
	}
	return wanted, byHandle, nil
}

// agencyScale multiplies the networks' published limits, on Herald's budgets and on the
// simulator alike (--budget-scale and --sim-limit-scale). At 0.7 a LinkedIn member may post 105
// times a day (the client's 100 posts fit) and a Pinterest account 70 times a minute (its 100 Pins
// take two windows: the budget binds, and resets within the run).
const agencyScale = 0.7

// bulkAgency: an agency's bulk load. 10,000 posts (--quick: 1,000), three targets each, over 300
// accounts (--quick: 30) connected through the sandbox's browser connect flow, with the
// networks' real limits scaled down. It reports how long until every post is final, the budget
// efficiency where a budget bound, and the 429s the networks answered (which must be zero).
func bulkAgency(base *Env) (Result, error) {
	posts, clients, scale := 10000, 100, agencyScale
	if base.Quick {
		// 100 posts per account whatever the size; at the published limits they fit in the
		// first window, so that the smoke run does not wait a minute for a budget to reset.
		posts, clients, scale = 1000, 10, 1
	}
	s := strconv.FormatFloat(scale, 'f', -1, 64)
	e, err := base.Spawn("--sim-limit-scale", s, "--budget-scale", s)
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	simURL, err := e.simURL()
	if err != nil {
		return Result{}, err
	}

	// Setup: one image (a Pin needs one), then every client's accounts.
	setupStart := time.Now()
	mediaID, err := e.uploadImage()
	if err != nil {
		return Result{}, fmt.Errorf("upload the image: %w", err)
	}
	wanted, byHandle, err := e.connectAgency(clients, "client")
	if err != nil {
		return Result{}, err
	}
	targets := make([]string, clients) // each client's three account ids, quoted
	for c := 0; c < clients; c++ {
		var ids []string
		for _, a := range wanted[c*len(agencyMix) : (c+1)*len(agencyMix)] {
			id, ok := byHandle[a.platform+"/"+a.handle]
			if !ok {
				return Result{}, fmt.Errorf("connected %s account %s is not listed", a.platform, a.handle)
			}
			ids = append(ids, id)
		}
		targets[c] = quoteAll(ids)
	}
	setup := time.Since(setupStart)
	// An agency connects its accounts before it publishes. The networks' per-second request
	// limits (Pinterest: 100 a second per user, scaled) count the connect flow's own calls, which
	// Herald's publish budgets do not model; publishing in the same second as connecting could
	// trip them, and a Pinterest 429 carries no reset, so Herald then waits a whole minute.
	time.Sleep(1100 * time.Millisecond)

	// The load: every post at once, from e.Connections clients.
	var next, refused atomic.Int64
	start := time.Now()
	r, err := drive(e.log, "bulk-agency (publish)", e.Connections, 24*time.Hour, func(w, i int) error {
		k := next.Add(1) - 1
		if k >= int64(posts) {
			return errStop
		}
		body := fmt.Sprintf(`{"content":"Client %03d, post %05d: the spring campaign goes live today, see the new lookbook. #spring","platforms":[%s],"media":["%s"]}`,
			k%int64(clients), k, targets[k%int64(clients)], mediaID)
		return e.acceptedAfterRetries("/v1/posts/publish", body, &refused)
	})
	if err != nil {
		return r, err
	}
	accepted := time.Since(start)
	if r.Errors > 0 {
		return Result{}, fmt.Errorf("%d publish requests failed (%s)", r.Errors, r.Notes)
	}

	// Until every post is final: every job finished.
	limit := int(math.Max(1, math.Floor(100*scale))) // Pinterest's org_write, per minute
	perAccount := posts * len(agencyMix) / (clients * len(agencyMix))
	windows := (perAccount + limit - 1) / limit
	expected := time.Duration(windows-1)*time.Minute + accepted + 10*time.Second
	done := make(chan struct{})
	go progress(e.log, "bulk-agency (final)", expected, done)
	var final time.Duration
	for deadline := time.Now().Add(expected + 5*time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if f, err := e.metric("herald_jobs_finished_total", ""); err == nil && f >= float64(posts) {
			final = time.Since(start)
			break
		}
	}
	close(done)
	finished, _ := e.metric("herald_jobs_finished_total", "")
	failed, _ := e.metric("herald_jobs_finished_total", `status="failed"`)
	rejected, _ := e.metric("herald_network_rate_limited_total", "")
	waits, _ := e.metric("herald_rate_budget_waits_total", "")
	if final == 0 {
		return Result{}, fmt.Errorf("only %.0f of %d posts were final %s after the first request", finished, posts, time.Since(start).Round(time.Second))
	}

	// Budget efficiency, from the network's own record: on every Pinterest account whose 100 Pins
	// needed more than one window, the time the budget forces (one window per extra batch)
	// divided by the time taken from its first Pin to its last.
	pins, err := simPublications(simURL, "pinterest")
	if err != nil {
		return Result{}, err
	}
	linkedin, err := simPublications(simURL, "linkedin")
	if err != nil {
		return Result{}, err
	}
	perPin := map[string][]time.Time{}
	for _, p := range pins {
		perPin[p.Account] = append(perPin[p.Account], p.CreatedAt)
	}
	var forced, taken time.Duration
	worst, bound := 1.0, 0
	for _, ts := range perPin {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		w := (len(ts) + limit - 1) / limit
		if w < 2 {
			continue
		}
		bound++
		f := time.Duration(w-1) * time.Minute
		t := ts[len(ts)-1].Sub(ts[0])
		forced += f
		taken += t
		worst = math.Min(worst, f.Seconds()/t.Seconds())
	}
	dupPins, dupLinkedIn := duplicates(pins), duplicates(linkedin)
	dups := dupPins + dupLinkedIn
	missing := max(0, posts*2-(len(linkedin)-dupLinkedIn)) + max(0, posts-(len(pins)-dupPins))
	res := Result{Ops: posts, Seconds: final.Seconds(), Throughput: float64(posts) / final.Seconds(),
		P50ms: r.P50ms, P99ms: r.P99ms, P999ms: r.P999ms, Errors: int(failed) + missing + dups}
	notes := fmt.Sprintf("%d posts to %d accounts (%d clients × LinkedIn, LinkedIn, Pinterest; one image each), limits scaled ×%s on Herald and the simulator: every post final %.1fs after the first request (requests accepted in %.1fs, %.0f/s, after %d refusals of a full publish backlog each retried after its Retry-After; latencies are of the publish requests); jobs failed %.0f, publications missing %d, duplicated %d; network 429s seen: %.0f; budget waits %.0f; setup (image, %d accounts through POST /v1/accounts/connect and the consent page with login_hint) %.1fs",
		posts, len(wanted), clients, s, final.Seconds(), accepted.Seconds(), float64(posts)/accepted.Seconds(), refused.Load(), failed, missing, dups, rejected, waits, len(wanted), setup.Seconds())
	if bound > 0 {
		eff := forced.Seconds() / taken.Seconds()
		res.LimitName = fmt.Sprintf("budget-bound rate (%d Pins/min/account)", limit)
		res.Limit = float64(posts) / (time.Duration(windows-1) * time.Minute).Seconds()
		notes += fmt.Sprintf("; budget efficiency %.3f over the %d Pinterest accounts whose budget bound (time the budget forces / time taken, first to last Pin; worst account %.3f); the limit is the posts per second the budgets allow (%d posts / %d window(s) of a minute), the ratio the whole run's against it", eff, bound, worst, posts, windows-1)
	} else {
		res.LimitName = "no budget bound (limits ×" + s + ")"
		notes += "; no budget bound at these limits (the quick run keeps the published limits so as not to wait for a window), so no efficiency"
	}
	res.Notes = notes
	return res, nil
}

// connectBrowser connects one account through the browser flow: POST /v1/accounts/connect, then
// the authorization_url followed the way a browser does. The simulator's consent pages approve at
// once as the network user named by login_hint, which a browser would get by signing in as
// someone else; the client adds it to the consent page's URL (the redirect away from Herald).
func (e *Env) connectBrowser(platform, handle string) error {
	st, b, err := e.post("/v1/accounts/connect", `{"platform":"`+platform+`"}`, nil)
	if err != nil {
		return err
	}
	if st != http.StatusOK {
		return fmt.Errorf("connect %s: %d %s", platform, st, b)
	}
	var r struct {
		AuthorizationURL string `json:"authorization_url"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	herald, err := url.Parse(e.URL)
	if err != nil {
		return err
	}
	jar, err := e.Session()
	if err != nil {
		return err
	}
	browser := &http.Client{Jar: jar, Transport: e.Client.Transport, Timeout: 30 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > 10 {
				return errors.New("too many redirects")
			}
			if req.URL.Host != herald.Host {
				q := req.URL.Query()
				q.Set("login_hint", handle)
				req.URL.RawQuery = q.Encode()
			}
			return nil
		}}
	resp, err := browser.Get(r.AuthorizationURL)
	if err != nil {
		return err
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(page, []byte("is now connected")) {
		return fmt.Errorf("connect %s as %s: %s: %.300s", platform, handle, resp.Status, page)
	}
	return nil
}

// uploadImage uploads a small PNG through presign, PUT and confirm, and returns the media id.
func (e *Env) uploadImage() (string, error) {
	img := image.NewRGBA(image.Rect(0, 0, 600, 400))
	for y := 0; y < 400; y++ {
		for x := 0; x < 600; x++ {
			img.Set(x, y, color.RGBA{uint8(x / 3), uint8(y / 2), 160, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return "", err
	}
	size := buf.Len()
	st, b, err := e.post("/v1/media/presign", fmt.Sprintf(`{"filename":"lookbook.png","content_type":"image/png","size_bytes":%d}`, size), nil)
	if err != nil || st != http.StatusOK {
		return "", fmt.Errorf("presign: %d %s %v", st, b, err)
	}
	var p struct {
		UploadURL       string `json:"upload_url"`
		Key             string `json:"key"`
		StorageFilename string `json:"storage_filename"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return "", err
	}
	req, _ := http.NewRequest(http.MethodPut, p.UploadURL, bytes.NewReader(buf.Bytes()))
	req.Header.Set("Content-Type", "image/png")
	resp, err := e.Client.Do(req)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("PUT upload_url: %s", resp.Status)
	}
	confirm, _ := json.Marshal(map[string]any{"key": p.Key, "storage_filename": p.StorageFilename, "original_filename": "lookbook.png",
		"content_type": "image/png", "size_bytes": size})
	st, b, err = e.post("/v1/media/confirm", string(confirm), nil)
	if err != nil || st != http.StatusCreated {
		return "", fmt.Errorf("confirm: %d %s %v", st, b, err)
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	return m.ID, nil
}

// simPublication is one entry of the simulator's record (GET /_sim/publications).
type simPublication struct {
	ID        string    `json:"id"`
	Platform  string    `json:"platform"`
	Account   string    `json:"account"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// simPublications reads what the simulator published (on one platform, or all when "").
func simPublications(simURL, platform string) ([]simPublication, error) {
	u := strings.TrimRight(simURL, "/") + "/_sim/publications"
	if platform != "" {
		u += "?platform=" + url.QueryEscape(platform)
	}
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /_sim/publications: %s", resp.Status)
	}
	var out struct {
		Data []simPublication `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	return out.Data, nil
}

// duplicates counts the publications beyond the first of each text on each account.
func duplicates(pubs []simPublication) int {
	seen := map[string]bool{}
	n := 0
	for _, p := range pubs {
		k := publicationKey(p)
		if seen[k] {
			n++
		}
		seen[k] = true
	}
	return n
}

// publicationKey names what one publication is of: a text on an account of a network. Two
// publications with one key are a duplicate.
func publicationKey(p simPublication) string {
	return p.Platform + "\x00" + p.Account + "\x00" + p.Text
}

// duplicated lists every publication whose key was published more than once, in order.
func duplicated(pubs []simPublication) []simPublication {
	count := map[string]int{}
	for _, p := range pubs {
		count[publicationKey(p)]++
	}
	var out []simPublication
	for _, p := range pubs {
		if count[publicationKey(p)] > 1 {
			out = append(out, p)
		}
	}
	return out
}

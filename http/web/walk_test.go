package web_test

import (
	"bufio"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// binary is a `herald serve --sandbox` process built from cmd/herald, as `make run` starts it.
type binary struct {
	url, simURL   string
	key, password string
	dir           string
}

// startBinary builds the herald binary and runs it in sandbox mode on loopback ports; it reads
// the dashboard password and the demo key from the data directory, and the addresses from the
// log.
func startBinary(t *testing.T) *binary {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "herald")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/herald")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build herald: %s", out)

	b := &binary{dir: t.TempDir()}
	cmd := exec.Command(bin, "serve", "--sandbox", "--data", b.dir, "--addr", "127.0.0.1:0", "--sim-addr", "127.0.0.1:0", "--metrics-addr", "off", "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	urls := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var app, sim string
		for sc.Scan() {
			var l struct{ Msg string }
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			switch {
			case strings.HasPrefix(l.Msg, "sandbox network simulator listening on "):
				sim = strings.TrimPrefix(l.Msg, "sandbox network simulator listening on ")
			case strings.HasPrefix(l.Msg, "listening on http://"):
				app = strings.TrimPrefix(l.Msg, "listening on ")
			}
			if app != "" && sim != "" {
				urls <- [2]string{app, sim}
				app = ""
			}
		}
	}()
	select {
	case u := <-urls:
		b.url, b.simURL = u[0], u[1]
	case <-done:
		t.Fatal("herald serve exited")
	case <-time.After(30 * time.Second):
		t.Fatal("herald serve did not start")
	}
	read := func(name string) string {
		raw, err := os.ReadFile(filepath.Join(b.dir, name))
		require.NoError(t, err)
		return strings.TrimSpace(string(raw))
	}
	b.password, b.key = read("sandbox-password"), read("sandbox-api-key")
	return b
}

// v1 calls the binary's /v1 with a key and decodes the JSON answer.
func (b *binary) v1(t *testing.T, method, path, key string) (int, map[string]any) {
	t.Helper()
	resp := apiCall(t, method, b.url+path, key, nil)
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	}
	return resp.StatusCode, out
}

// accounts lists the demo user's accounts through /v1.
func (b *binary) accounts(t *testing.T) []map[string]any {
	t.Helper()
	status, out := b.v1(t, "GET", "/v1/accounts", b.key)
	require.Equal(t, 200, status)
	var list []map[string]any
	for _, a := range out["data"].([]any) {
		list = append(list, a.(map[string]any))
	}
	return list
}

func writePNG(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for x := 0; x < 64; x++ {
		for y := 0; y < 48; y++ {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 5), 160, 255})
		}
	}
	path := filepath.Join(t.TempDir(), "walk.png")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, png.Encode(f, img))
	require.NoError(t, f.Close())
	return path
}

// The whole dashboard against the real binary, as a newcomer runs it after `make run`: sign in,
// an API key made and used, LinkedIn connected through the simulated consent page, an image
// uploaded and a post published to three networks with its live progress, a post scheduled in
// another zone found on the calendar, the key revoked, and signing out.
func TestBrowserWalkAgainstTheBinary(t *testing.T) {
	t.Parallel()
	b := startBinary(t)
	tb := newTab(t)
	dir := screenshots(t)

	// Sign in.
	tb.do(chromedp.Navigate(b.url+"/"), chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)))
	tb.shoot(dir, "01-signin")
	tb.signIn(b.url, "demo@herald.local", b.password, "/")
	require.Equal(t, b.url+"/", get(tb, chromedp.Location()))
	tb.shoot(dir, "02-overview")

	// An API key, shown once, opens /v1.
	tb.do(chromedp.Navigate(b.url+"/developer"), chromedp.WaitVisible(chromedp.CSS(`#key-name`)))
	key := createKey(tb, "walk key")
	tb.shoot(dir, "03-key-created")
	status, me := b.v1(t, "GET", "/v1/me", key)
	require.Equal(t, 200, status, "%v", me)
	require.Equal(t, "demo@herald.local", me["email"])

	// LinkedIn through the simulator's consent page and back.
	before := 0
	for _, a := range b.accounts(t) {
		if a["platform"] == "linkedin" {
			before++
		}
	}
	tb.do(chromedp.Navigate(b.url+"/accounts"), chromedp.WaitVisible(chromedp.CSS(`button.connect-linkedin`)))
	tb.shoot(dir, "04-accounts")
	// The sandbox's consent page asks which simulated member signs in; the default one has no
	// organisation, so the connection ends without a picker.
	tb.do(chromedp.Click(chromedp.CSS(`button.connect-linkedin`)), chromedp.WaitVisible(chromedp.CSS(`#sim_member`)))
	tb.shoot(dir, "05-consent")
	tb.do(chromedp.Click(chromedp.CSS(`#allow`)), chromedp.WaitVisible(chromedp.CSS(`a#back-to-accounts`)))
	h1 := get(tb, chromedp.Text(chromedp.CSS(`h1`)))
	require.Contains(t, h1, "LinkedIn is connected")
	require.True(t, strings.HasPrefix(get(tb, chromedp.Location()), b.url+"/v1/accounts/connect/callback?"), "the consent page came back to Herald")
	tb.shoot(dir, "05-connected")
	tb.do(chromedp.Click(chromedp.CSS(`a#back-to-accounts`)), chromedp.WaitVisible(chromedp.CSS(`#accounts`)))
	require.Equal(t, b.url+"/accounts", get(tb, chromedp.Location()))
	after := 0
	for _, a := range b.accounts(t) {
		if a["platform"] == "linkedin" {
			after++
		}
	}
	rows := eval[int](tb, `document.querySelectorAll('#accounts tr[data-platform=linkedin]').length`)
	require.Equal(t, after, rows, "the page lists the LinkedIn accounts /v1 lists")
	if h1 == "LinkedIn is connected" {
		require.Equal(t, before+1, after, "a second LinkedIn account")
	} else {
		require.Equal(t, before, after, "the account was renewed")
	}
	tb.shoot(dir, "06-accounts-after")

	// Compose: an image uploaded with its progress bar, published to three networks.
	tb.do(chromedp.Navigate(b.url+"/compose"), chromedp.WaitVisible(chromedp.CSS(`#content`)))
	tb.do(
		chromedp.SendKeys(chromedp.CSS(`#content`), "Hello from the walk, with a picture"),
		chromedp.Click(chromedp.CSS(`input[name=platforms][data-platform=twitter_x]`)),
		chromedp.Click(chromedp.CSS(`input[name=platforms][data-platform=bluesky]`)),
		chromedp.Click(chromedp.CSS(`input[name=platforms][data-platform=linkedin]`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#media-file`), []string{writePNG(t)}),
		chromedp.WaitVisible(chromedp.CSS(`#media-list li[data-media-id]`)),
	)
	require.Equal(t, 1.0, eval[float64](tb, `document.querySelector('#media-list progress').value`), "the upload's progress bar is full")
	require.Equal(t, "ready", get(tb, chromedp.Text(chromedp.CSS(`#media-list .media-state`))))
	tb.shoot(dir, "07-compose-uploaded")
	tb.do(chromedp.Click(chromedp.CSS(`#submit-post`)), chromedp.WaitVisible(chromedp.CSS(`#progress[data-done] #progress-links a`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#progress-summary`))), "Done: 3 published, 0 failed, of 3.")
	links := eval[[]string](tb, `Array.from(document.querySelectorAll('#progress-targets a.published-link')).map(a => a.href)`)
	require.Len(t, links, 3, "a link to each published post")
	tb.shoot(dir, "08-published")
	postPath := get(tb, chromedp.AttributeValue(chromedp.CSS(`#progress-links a`), "href")).Value
	status, post := b.v1(t, "GET", "/v1"+postPath, b.key)
	require.Equal(t, 200, status)
	require.Equal(t, "published", post["status"])
	require.Len(t, post["media_ids"], 1, "%v", post)
	// In sandbox mode the links lead to the simulator's page of each publication; the API's
	// platform_post_url keeps the network's shape.
	var want []string
	for _, pl := range post["platforms"].([]any) {
		m := pl.(map[string]any)
		want = append(want, b.simURL+sim.PublicationPath(platforms.Platform(m["platform"].(string)), m["platform_post_id"].(string)))
		require.False(t, strings.HasPrefix(m["platform_post_url"].(string), b.simURL), "%v", m)
	}
	require.ElementsMatch(t, want, links, "the links are the simulator's pages of the publications")
	tb.do(chromedp.Navigate(links[0]), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`pre`))), "Hello from the walk, with a picture")
	tb.shoot(dir, "08-sim-record")

	// Scheduled at 08:00 in Tokyo, three days on: the day before in the user's zone (UTC).
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	day := time.Now().In(tokyo).AddDate(0, 0, 3)
	at := time.Date(day.Year(), day.Month(), day.Day(), 8, 0, 0, 0, tokyo)
	tb.do(chromedp.Navigate(b.url+"/compose"), chromedp.WaitVisible(chromedp.CSS(`#content`)))
	tb.do(
		chromedp.SendKeys(chromedp.CSS(`#content`), "Good morning, Tokyo"),
		chromedp.Click(chromedp.CSS(`input[name=platforms][data-platform=bluesky]`)),
		chromedp.Click(chromedp.CSS(`input[name=when][value=later]`)),
		chromedp.WaitVisible(chromedp.CSS(`#sched-date`)),
		chromedp.SetValue(chromedp.CSS(`#sched-date`), at.Format("2006-01-02")),
		chromedp.SetValue(chromedp.CSS(`#sched-time`), "08:00"),
		chromedp.SetValue(chromedp.CSS(`#sched-zone`), "Asia/Tokyo"),
	)
	tb.shoot(dir, "09-schedule")
	tb.do(chromedp.Click(chromedp.CSS(`#submit-post`)), chromedp.WaitVisible(chromedp.CSS(`#post-content`)))
	postPath = strings.TrimPrefix(get(tb, chromedp.Location()), b.url)
	status, post = b.v1(t, "GET", "/v1"+postPath, b.key)
	require.Equal(t, 200, status)
	require.Equal(t, "scheduled", post["status"])
	stored, err := time.Parse(time.RFC3339, post["scheduled_at"].(string))
	require.NoError(t, err)
	require.True(t, at.Equal(stored), "scheduled for %s, stored %s", at, stored)
	tb.shoot(dir, "10-scheduled")
	utcDay := at.UTC().Format("2006-01-02")
	tb.do(chromedp.Navigate(b.url+"/calendar?view=week&date="+utcDay), chromedp.WaitVisible(chromedp.CSS(`.calendar`)))
	cell := `#calendar [data-date="` + utcDay + `"] a[href="` + postPath + `"]`
	require.Equal(t, "23:00", get(tb, chromedp.Text(chromedp.CSS(cell+` time`))), "23:00 UTC the day before")
	tb.shoot(dir, "11-calendar-week")
	tb.do(chromedp.Navigate(b.url+"/calendar?view=month&date="+utcDay), chromedp.WaitVisible(chromedp.CSS(cell)))
	tb.shoot(dir, "12-calendar-month")

	// The key revoked on the developer page is refused on the next call.
	tb.do(chromedp.Navigate(b.url+"/developer"), chromedp.WaitVisible(chromedp.CSS(`#keys`)))
	revokeKey(tb, "walk key")
	tb.shoot(dir, "13-key-revoked")
	status, refused := b.v1(t, "GET", "/v1/me", key)
	require.Equal(t, 401, status)
	require.Equal(t, "API key has been revoked", refused["error"].(map[string]any)["message"])

	// Signed out, a page sends the browser to the sign-in page.
	tb.do(chromedp.Click(chromedp.CSS(`form.signout button`)), chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)))
	tb.do(chromedp.Navigate(b.url+"/posts"), chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)))
	require.Equal(t, b.url+"/signin?next="+url.QueryEscape("/posts"), get(tb, chromedp.Location()))
	tb.shoot(dir, "14-signed-out")
	tb.noErrors()
	_ = http.StatusOK
}

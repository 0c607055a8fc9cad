package sim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// graphCall makes a raw call and decodes the JSON answer.
func graphCall(t *testing.T, method, u, token string, form url.Values) (int, http.Header, map[string]any) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := testHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: answer %q is not JSON", method, u, raw)
	}
	return resp.StatusCode, resp.Header, out
}

func graphErrCode(out map[string]any) (code, subcode float64) {
	e, _ := out["error"].(map[string]any)
	code, _ = e["code"].(float64)
	subcode, _ = e["error_subcode"].(float64)
	return code, subcode
}

type graphTestClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *graphTestClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *graphTestClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func graphStartSim(t *testing.T, opts sim.Options) *sim.Server {
	t.Helper()
	srv, err := sim.Start("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func TestGraphRoutingTokensAndUsage(t *testing.T) {
	srv := graphStartSim(t, sim.Options{})
	creds, _ := srv.NewAccount(platforms.Facebook, "acme")
	base := srv.BaseURL() + "/facebook"
	for _, path := range []string{"/v19.0/me", "/me", "/v25.0/me?access_token=" + creds.AccessToken} {
		token := creds.AccessToken
		if strings.Contains(path, "access_token") {
			token = ""
		}
		status, h, out := graphCall(t, http.MethodGet, base+path, token, nil)
		if status != 200 || out["id"] != creds.UserID {
			t.Fatalf("%s: %d %v", path, status, out)
		}
		var buc map[string][]map[string]any
		if err := json.Unmarshal([]byte(h.Get("X-Business-Use-Case-Usage")), &buc); err != nil || buc[creds.UserID][0]["type"] != "pages" || h.Get("X-App-Usage") == "" {
			t.Fatalf("usage headers %v", h)
		}
	}
	status, _, out := graphCall(t, http.MethodGet, base+"/v25.0/"+creds.UserID+"/nonexistent_edge", creds.AccessToken, nil)
	if code, _ := graphErrCode(out); status != 400 || code != 100 {
		t.Fatalf("unknown edge: %d %v", status, out)
	}
	status, _, out = graphCall(t, http.MethodGet, base+"/v25.0/me", "garbage", nil)
	if code, sub := graphErrCode(out); status != 400 || code != 190 || sub != 0 {
		t.Fatalf("bad token: %d %v", status, out)
	}
	_ = srv.InjectFault(platforms.Facebook, sim.FaultExpireTokens, 0)
	_, _, out = graphCall(t, http.MethodGet, base+"/v25.0/me", creds.AccessToken, nil)
	if code, sub := graphErrCode(out); code != 190 || sub != 463 {
		t.Fatalf("expired token: %v", out)
	}
}

func TestGraphRateLimitFaultShapes(t *testing.T) {
	srv := graphStartSim(t, sim.Options{})
	for _, c := range []struct {
		p        platforms.Platform
		code     float64
		typ, api string
	}{
		{platforms.Facebook, 80001, "pages", "/v25.0/me"},
		{platforms.Instagram, 80002, "instagram", "/v25.0/me"},
		{platforms.Threads, 4, "threads", "/v1.0/me"},
	} {
		creds, _ := srv.NewAccount(c.p, "acme")
		_ = srv.InjectFault(c.p, sim.FaultRateLimit, 1)
		status, h, out := graphCall(t, http.MethodGet, srv.BaseURL()+sim.Prefix(c.p)+c.api, creds.AccessToken, nil)
		code, _ := graphErrCode(out)
		var buc map[string][]map[string]any
		_ = json.Unmarshal([]byte(h.Get("X-Business-Use-Case-Usage")), &buc)
		if status != 400 || code != c.code || buc[creds.UserID][0]["type"] != c.typ || buc[creds.UserID][0]["estimated_time_to_regain_access"].(float64) < 1 {
			t.Fatalf("%s: %d %v %v", c.p, status, out, h)
		}
	}
}

func TestFacebookUserAndPageTokens(t *testing.T) {
	srv := graphStartSim(t, sim.Options{})
	page, _ := srv.NewAccount(platforms.Facebook, "acme")
	base := srv.BaseURL() + "/facebook/v25.0"
	status, _, out := graphCall(t, http.MethodGet, base+"/me/accounts", page.AccessToken, nil)
	if code, _ := graphErrCode(out); status != 400 || code != 100 {
		t.Fatalf("accounts with a page token: %d %v", status, out)
	}
	status, _, out = graphCall(t, http.MethodDelete, base+"/me/permissions", page.AccessToken, nil)
	if code, _ := graphErrCode(out); status != 400 || code != 100 {
		t.Fatalf("permissions with a page token: %d %v", status, out)
	}
	other, _ := srv.NewAccount(platforms.Facebook, "other")
	status, _, out = graphCall(t, http.MethodPost, base+"/"+page.UserID+"/feed", other.AccessToken, url.Values{"message": {"x"}})
	if code, _ := graphErrCode(out); status != 403 || code != 200 {
		t.Fatalf("posting to another page: %d %v", status, out)
	}
	status, _, out = graphCall(t, http.MethodPost, base+"/"+page.UserID+"/feed", page.AccessToken, url.Values{"attached_media[0]": {`{"media_fbid":"42"}`}})
	if code, _ := graphErrCode(out); status != 400 || code != 100 {
		t.Fatalf("foreign media: %d %v", status, out)
	}
	if n := len(srv.Publications(platforms.Facebook)); n != 0 {
		t.Fatalf("%d publications", n)
	}
}

func TestInstagramContainers(t *testing.T) {
	clk := &graphTestClock{t: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}
	srv := graphStartSim(t, sim.Options{Now: clk.Now, ProcessingDelay: time.Minute})
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("\xff\xd8\xffimage")) }))
	defer files.Close()
	creds, _ := srv.NewAccount(platforms.Instagram, "acme")
	base := srv.BaseURL() + "/instagram/v25.0/" + creds.UserID
	status, _, out := graphCall(t, http.MethodPost, base+"/media", creds.AccessToken, url.Values{"caption": {"text only"}})
	if status != 400 {
		t.Fatalf("text-only container: %d %v", status, out)
	}
	_, _, out = graphCall(t, http.MethodPost, base+"/media", creds.AccessToken, url.Values{"image_url": {files.URL + "/a.jpg"}, "caption": {"hi"}})
	id, _ := out["id"].(string)
	status, _, out = graphCall(t, http.MethodPost, base+"/media_publish", creds.AccessToken, url.Values{"creation_id": {id}})
	if code, sub := graphErrCode(out); status != 400 || code != 9007 || sub != 2207027 {
		t.Fatalf("publish before FINISHED: %d %v", status, out)
	}
	_, _, out = graphCall(t, http.MethodGet, srv.BaseURL()+"/instagram/v25.0/"+id+"?fields=status_code,status", creds.AccessToken, nil)
	if out["status_code"] != "IN_PROGRESS" {
		t.Fatalf("status %v", out)
	}
	clk.Add(2 * time.Minute)
	_, _, out = graphCall(t, http.MethodGet, srv.BaseURL()+"/instagram/v25.0/"+id+"?fields=status_code,status", creds.AccessToken, nil)
	if out["status_code"] != "FINISHED" {
		t.Fatalf("status %v", out)
	}
	clk.Add(24 * time.Hour)
	_, _, out = graphCall(t, http.MethodGet, srv.BaseURL()+"/instagram/v25.0/"+id+"?fields=status_code,status", creds.AccessToken, nil)
	if out["status_code"] != "EXPIRED" {
		t.Fatalf("status %v", out)
	}
	// A fresh container publishes, and the quota counts it.
	_, _, out = graphCall(t, http.MethodPost, base+"/media", creds.AccessToken, url.Values{"image_url": {files.URL + "/a.jpg"}})
	id, _ = out["id"].(string)
	clk.Add(2 * time.Minute)
	if status, _, out := graphCall(t, http.MethodPost, base+"/media_publish", creds.AccessToken, url.Values{"creation_id": {id}}); status != 200 {
		t.Fatalf("publish: %d %v", status, out)
	}
	if status, _, _ := graphCall(t, http.MethodPost, base+"/media_publish", creds.AccessToken, url.Values{"creation_id": {id}}); status != 400 {
		t.Fatal("a container published twice")
	}
	_, _, out = graphCall(t, http.MethodGet, base+"/content_publishing_limit?fields=quota_usage,config", creds.AccessToken, nil)
	data := out["data"].([]any)[0].(map[string]any)
	if data["quota_usage"].(float64) != 1 || data["config"].(map[string]any)["quota_total"].(float64) != 100 {
		t.Fatalf("limit %v", out)
	}
	// Carousels need 2 to 10 carousel items of the same account.
	status, _, out = graphCall(t, http.MethodPost, base+"/media", creds.AccessToken, url.Values{"media_type": {"CAROUSEL"}, "children": {id}})
	if status != 400 {
		t.Fatalf("carousel of one: %d %v", status, out)
	}
}

func TestThreadsLimits(t *testing.T) {
	srv := graphStartSim(t, sim.Options{})
	creds, _ := srv.NewAccount(platforms.Threads, "acme")
	base := srv.BaseURL() + "/threads/v1.0/" + creds.UserID
	status, _, out := graphCall(t, http.MethodPost, base+"/threads", creds.AccessToken, url.Values{"media_type": {"TEXT"}, "text": {"https://a.x https://b.x https://c.x https://d.x https://e.x https://f.x"}})
	if e, _ := out["error"].(map[string]any); status != 400 || e["message"] != "THREADS_API__LINK_LIMIT_EXCEEDED" {
		t.Fatalf("links: %d %v", status, out)
	}
	_, _, out = graphCall(t, http.MethodGet, base+"/threads_publishing_limit?fields=quota_usage,config,reply_quota_usage,reply_config", creds.AccessToken, nil)
	data := out["data"].([]any)[0].(map[string]any)
	if data["config"].(map[string]any)["quota_total"].(float64) != 250 || data["reply_config"] == nil {
		t.Fatalf("limit %v", out)
	}
	status, _, out = graphCall(t, http.MethodPost, base+"/threads", creds.AccessToken, url.Values{"media_type": {"IMAGE"}, "image_url": {"ftp://nowhere/x.jpg"}})
	id, _ := out["id"].(string)
	if status != 200 || id == "" {
		t.Fatalf("container: %d %v", status, out)
	}
	_, _, out = graphCall(t, http.MethodGet, srv.BaseURL()+"/threads/v1.0/"+id+"?fields=status,error_message", creds.AccessToken, nil)
	if out["status"] != "ERROR" || out["error_message"] == nil {
		t.Fatalf("status %v", out)
	}
}

// The Facebook host serves the Instagram account linked to a Page with that Page's token: the
// Page names it (instagram_business_account{id,username}); its containers, quota, posts and
// listing are the Instagram network's, shared with the same account signed in through Instagram
// Login, and the listing's next page stays on Facebook's host. Another Page's token and a Page
// without a linked account are refused, and a Facebook object is still Facebook's.
func TestFacebookServesLinkedInstagram(t *testing.T) {
	t.Parallel()
	srv := graphStartSim(t, sim.Options{ProcessingDelay: time.Millisecond})
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("\xff\xd8\xffimage")) }))
	defer files.Close()
	fb := srv.BaseURL() + "/facebook/v25.0/"
	cafe := srv.Tokens(platforms.Facebook).Issue(sim.PageCafe.ID, sim.PageCafe.Name)
	bakery := srv.Tokens(platforms.Facebook).Issue(sim.PageBakery.ID, sim.PageBakery.Name)
	ig := sim.PageCafe.Instagram.ID

	_, _, out := graphCall(t, http.MethodGet, fb+sim.PageCafe.ID+"?fields=instagram_business_account{id,username}", cafe.AccessToken, nil)
	if linked, _ := out["instagram_business_account"].(map[string]any); linked["id"] != ig || linked["username"] != sim.PageCafe.Instagram.Name {
		t.Fatalf("linked account: %v", out)
	}
	_, _, out = graphCall(t, http.MethodGet, fb+sim.PageCafe.ID+"?fields=name", cafe.AccessToken, nil)
	if _, ok := out["instagram_business_account"]; ok {
		t.Fatalf("a field not asked for: %v", out)
	}

	publish := func(base, token, caption string) string {
		t.Helper()
		status, _, out := graphCall(t, http.MethodPost, base+"/media", token, url.Values{"image_url": {files.URL + "/a.jpg"}, "caption": {caption}})
		id, _ := out["id"].(string)
		if status != 200 || id == "" {
			t.Fatalf("container: %d %v", status, out)
		}
		for range 100 {
			_, _, out = graphCall(t, http.MethodGet, strings.TrimSuffix(base, ig)+id+"?fields=status_code", token, nil)
			if out["status_code"] == "FINISHED" {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		status, _, out = graphCall(t, http.MethodPost, base+"/media_publish", token, url.Values{"creation_id": {id}})
		if status != 200 {
			t.Fatalf("publish: %d %v", status, out)
		}
		return out["id"].(string)
	}
	first := publish(fb+ig, cafe.AccessToken, "through Facebook")
	login, err := srv.NewAccount(platforms.Instagram, sim.PageCafe.Instagram.Name)
	if err != nil || login.UserID != ig {
		t.Fatalf("Instagram Login names the account %q (%v)", login.UserID, err)
	}
	publish(srv.BaseURL()+"/instagram/v25.0/"+ig, login.AccessToken, "through Instagram Login")

	pubs := srv.Publications(platforms.Instagram)
	if len(pubs) != 2 || pubs[0].ID != first || pubs[0].Account != ig || pubs[1].Account != ig {
		t.Fatalf("publications %+v", pubs)
	}
	if n := len(srv.Publications(platforms.Facebook)); n != 0 {
		t.Fatalf("%d Facebook publications", n)
	}
	_, _, out = graphCall(t, http.MethodGet, fb+ig+"/content_publishing_limit", cafe.AccessToken, nil)
	if data := out["data"].([]any)[0].(map[string]any); data["quota_usage"].(float64) != 2 {
		t.Fatalf("one quota for both logins: %v", out)
	}
	_, _, out = graphCall(t, http.MethodGet, fb+ig+"/media?fields=id,caption&limit=1", cafe.AccessToken, nil)
	next, _ := out["paging"].(map[string]any)["next"].(string)
	if !strings.HasPrefix(next, fb+ig+"/media?") {
		t.Fatalf("next page %q", next)
	}
	_, _, out = graphCall(t, http.MethodGet, next, cafe.AccessToken, nil)
	if data := out["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != first {
		t.Fatalf("second page %v", out)
	}
	if status, _, out := graphCall(t, http.MethodPost, fb+first+"/comments", cafe.AccessToken, url.Values{"message": {"hello"}}); status != 200 {
		t.Fatalf("comment: %d %v", status, out)
	}
	if c := srv.Publications(platforms.Instagram)[2]; c.CommentOn != first || c.Account != ig {
		t.Fatalf("comment %+v", c)
	}

	bistro, _ := srv.NewAccount(platforms.Facebook, "bistro")
	for name, token := range map[string]string{"another Page's token": bakery.AccessToken, "a Page without a linked account": bistro.AccessToken} {
		status, _, out := graphCall(t, http.MethodPost, fb+ig+"/media", token, url.Values{"image_url": {files.URL + "/a.jpg"}})
		if code, _ := graphErrCode(out); status != 400 || code != 100 {
			t.Fatalf("%s: %d %v", name, status, out)
		}
		status, _, out = graphCall(t, http.MethodGet, fb+first, token, nil)
		if code, _ := graphErrCode(out); status != 400 || code != 100 {
			t.Fatalf("%s reads the media: %d %v", name, status, out)
		}
	}
	if n := len(srv.Publications(platforms.Instagram)); n != 3 {
		t.Fatalf("%d Instagram publications", n)
	}
	// A Facebook post of the Page is still Facebook's.
	_, _, out = graphCall(t, http.MethodPost, fb+sim.PageCafe.ID+"/feed", cafe.AccessToken, url.Values{"message": {"on the Page"}})
	post, _ := out["id"].(string)
	_, _, out = graphCall(t, http.MethodGet, fb+post, cafe.AccessToken, nil)
	if out["message"] != "on the Page" {
		t.Fatalf("Facebook post %v", out)
	}
}

package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// campaignPost is one post of a campaign's JSON body.
func campaignPost(content string, accounts ...*persistence.Account) map[string]any {
	ids := make([]string, len(accounts))
	for i, a := range accounts {
		ids[i] = a.ID
	}
	return map[string]any{"content": content, "platforms": ids}
}

func (b *testBundle) createCampaign(body map[string]any, hdr http.Header) *response {
	b.t.Helper()
	return b.doKey(b.key, "POST", "/v1/campaigns", body, hdr)
}

// csvCampaign posts a CSV campaign with the query (name, publish, dry_run).
func (b *testBundle) csvCampaign(csv, query string) *response {
	b.t.Helper()
	return b.doKey(b.key, "POST", "/v1/campaigns?"+query, []byte(csv), http.Header{"Content-Type": {"text/csv; charset=utf-8"}})
}

// rowErrors reads details.rows of a 400.
func rowErrors(t *testing.T, r *response) map[int][]string {
	t.Helper()
	require.Equal(t, 400, r.status, string(r.body))
	require.Equal(t, "validation_error", r.errorCode(t))
	details, ok := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
	require.True(t, ok, "details in %s", r.body)
	out := map[int][]string{}
	for _, it := range details["rows"].([]any) {
		m := it.(map[string]any)
		var errs []string
		for _, e := range m["errors"].([]any) {
			errs = append(errs, e.(string))
		}
		out[int(m["row"].(float64))] = errs
	}
	return out
}

// followCampaign follows a campaign's stream with a real SSE client until the server ends it,
// calling each for every event as it arrives; lastEventID resumes after an event.
func (b *testBundle) followCampaign(ctx context.Context, id, lastEventID string, each func(sseEvent)) ([]sseEvent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/campaigns/"+id+"/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.key)
	client := &sse.Client{HTTPClient: &http.Client{}, Backoff: sse.Backoff{MaxRetries: -1}}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	conn := client.NewConnection(req)
	conn.Buffer(nil, 4<<20) // done carries the campaign: its failed targets may be many
	var mu sync.Mutex
	var events []sseEvent
	conn.SubscribeToAll(func(e sse.Event) {
		var data map[string]any
		_ = json.Unmarshal([]byte(e.Data), &data)
		ev := sseEvent{Type: e.Type, ID: e.LastEventID, Data: data}
		if each != nil {
			each(ev)
		}
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	err = conn.Connect()
	if errors.Is(err, io.EOF) {
		err = nil // the server ended the stream (after done)
	}
	mu.Lock()
	defer mu.Unlock()
	return events, err
}

// simTexts counts what the simulator published, by text.
func (b *testBundle) simTexts() map[string]int {
	out := map[string]int{}
	for _, r := range b.app.Sim.Publications("") {
		out[r.Text]++
	}
	return out
}

// A campaign published at once: 202 with every post and its job in the order of the request,
// one stream from the first step to done, its totals and targets per network, the posts in the
// post list, one request against the hourly quota, and Idempotency-Key as on publish.
func TestCampaignPublishesOnOneStream(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	x, bsky, li := b.account(platforms.X), b.account(platforms.Bluesky), b.account(platforms.LinkedIn)
	var posts []any
	for i := 0; i < 6; i++ {
		posts = append(posts, campaignPost(fmt.Sprintf("launch %d", i), []*persistence.Account{x, bsky, li}[i%3]))
	}
	posts = append(posts, campaignPost("everywhere", x, bsky))
	body := map[string]any{"name": "Launch", "publish": "now", "posts": posts}
	before := b.do("GET", "/v1/me", nil)
	r := b.createCampaign(body, http.Header{"Idempotency-Key": {"launch-1"}})
	require.Equal(t, 202, r.status, string(r.body))
	acc := r.json(t)
	id := acc["campaign_id"].(string)
	require.Equal(t, "/v1/campaigns/"+id, r.header.Get("Location"))
	require.Equal(t, "/v1/campaigns/"+id+"/stream", acc["stream_url"])
	require.Len(t, acc["posts"], 7)
	remaining := func(r *response) int { n, _ := strconv.Atoi(r.header.Get("RateLimit-Remaining")); return n }
	require.Equal(t, remaining(before)-1, remaining(r), "a campaign is one request against the hourly quota")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, _ := b.followCampaign(ctx, id, "", nil)
	require.NotEmpty(t, events)
	done := events[len(events)-1]
	require.Equal(t, "done", done.Type)
	require.Equal(t, "completed", done.Data["status"])
	require.Equal(t, 7.0, done.Data["totals"].(map[string]any)["published"])
	success := map[string]int{}
	last := 0
	for _, e := range events[:len(events)-1] {
		require.Equal(t, "progress", e.Type)
		n, err := strconv.Atoi(e.ID)
		require.NoError(t, err)
		require.Greater(t, n, last, "ids follow the timeline")
		last = n
		for _, k := range []string{"post_id", "tracking_id", "target", "platform", "connected_account_id", "phase", "message", "at"} {
			require.Contains(t, e.Data, k)
		}
		if e.Data["phase"] == persistence.PhaseSuccess {
			success[e.Data["post_id"].(string)]++
		}
	}
	require.Len(t, success, 7)
	require.Equal(t, 2, success[acc["posts"].([]any)[6].(map[string]any)["post_id"].(string)], "both targets of the last post")

	g := b.do("GET", "/v1/campaigns/"+id, nil)
	require.Equal(t, 200, g.status, string(g.body))
	d := g.json(t)
	require.Equal(t, "Launch", d["name"])
	require.Equal(t, "now", d["publish"])
	require.Equal(t, 7.0, d["posts"])
	require.Equal(t, map[string]any{"targets": 3.0, "pending": 0.0, "publishing": 0.0, "published": 3.0, "failed": 0.0}, d["by_platform"].(map[string]any)["twitter_x"])
	require.Empty(t, d["failed_targets"])
	l := b.do("GET", "/v1/campaigns?limit=5", nil)
	require.Equal(t, 200, l.status)
	require.Equal(t, 1.0, l.json(t)["pagination"].(map[string]any)["total"])
	require.Equal(t, 7, b.countPosts())
	for i, p := range acc["posts"].([]any) {
		m := p.(map[string]any)
		pd := b.do("GET", "/v1/posts/"+m["post_id"].(string), nil).json(t)
		require.Equal(t, "published", pd["status"])
		require.Equal(t, m["tracking_id"], pd["tracking_id"])
		if i < 6 {
			require.Equal(t, fmt.Sprintf("launch %d", i), pd["content"], "posts in the order of the request")
		}
	}

	// The same key and body replay the answer; another body is refused.
	again := b.createCampaign(body, http.Header{"Idempotency-Key": {"launch-1"}})
	require.Equal(t, 202, again.status)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(r.body), string(again.body))
	body["name"] = "Another"
	require.Equal(t, 422, b.createCampaign(body, http.Header{"Idempotency-Key": {"launch-1"}}).status)
	require.Equal(t, 7, b.countPosts())
	texts := b.simTexts()
	require.Len(t, texts, 7)
	for text, n := range texts {
		require.Equal(t, map[bool]int{true: 2, false: 1}[text == "everywhere"], n, text)
	}

	// A late client gets the whole timeline again, then done; one that resumes after the last
	// progress gets only done.
	late, _ := b.followCampaign(ctx, id, "", nil)
	require.Len(t, late, len(events))
	resumed, _ := b.followCampaign(ctx, id, strconv.Itoa(last), nil)
	require.Len(t, resumed, 1)
	require.Equal(t, "done", resumed[0].Type)
}

// Bad campaigns are refused whole, with every bad post's errors by row, and create nothing:
// an empty campaign, 1,001 posts, posts that break the create rules, another user's account,
// each network's own rules, a time where none is taken; one bad row among 999 good ones.
func TestCampaignBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	x, bsky, ig := b.account(platforms.X), b.account(platforms.Bluesky), b.account(platforms.Instagram)
	other, _ := b.newUser("other@example.com", "pro")
	foreign := b.newAccount(other.ID, "linkedin")
	nothingCreated := func() {
		t.Helper()
		require.Equal(t, 0, b.countPosts())
		l := b.do("GET", "/v1/campaigns", nil)
		require.Equal(t, 0.0, l.json(t)["pagination"].(map[string]any)["total"])
	}

	r := b.createCampaign(map[string]any{"publish": "now", "posts": []any{}}, nil)
	require.Equal(t, 400, r.status)
	require.Contains(t, r.errorMessage(t), "at least one post")
	many := make([]any, 1001)
	for i := range many {
		many[i] = campaignPost(fmt.Sprintf("post %d", i), bsky)
	}
	r = b.createCampaign(map[string]any{"publish": "now", "posts": many}, nil)
	require.Equal(t, 400, r.status)
	require.Contains(t, r.errorMessage(t), "at most 1000 posts; this one has 1001")
	for name, body := range map[string]any{
		"no publish":      map[string]any{"posts": []any{campaignPost("x", bsky)}},
		"unknown publish": map[string]any{"publish": "later", "posts": []any{campaignPost("x", bsky)}},
		"posts an object": map[string]any{"publish": "now", "posts": map[string]any{}},
		"dry_run string":  map[string]any{"publish": "now", "dry_run": "yes", "posts": []any{campaignPost("x", bsky)}},
	} {
		r := b.createCampaign(body.(map[string]any), nil)
		require.Equal(t, 400, r.status, name)
		require.Equal(t, "validation_error", r.errorCode(t), name)
	}
	r = b.doKey(b.key, "POST", "/v1/campaigns", `{"publish":"now","posts":[`, nil)
	require.Equal(t, 400, r.status)
	nothingCreated()

	// Every bad post reported at once, each with all its errors.
	withTime := campaignPost("timed", bsky)
	withTime["scheduledAt"] = "2030-01-01T10:00:00Z"
	r = b.createCampaign(map[string]any{"publish": "now", "posts": []any{
		campaignPost("fine", bsky),
		map[string]any{"platforms": []string{bsky.ID}},
		campaignPost("someone else's account", foreign),
		campaignPost("no photo", ig),
		campaignPost(strings.Repeat("a", 281), x, bsky),
		"not an object",
		map[string]any{"content": "names", "platforms": []string{"linkedin"}},
		withTime,
		map[string]any{"content": 42, "platforms": []string{uuid.NewString()}},
	}}, nil)
	rows := rowErrors(t, r)
	require.Len(t, rows, 8, "%v", rows)
	require.NotContains(t, rows, 1)
	require.Equal(t, []string{"content: Required"}, rows[2])
	require.Equal(t, []string{"platforms: connected account " + foreign.ID + " does not exist or is not yours"}, rows[3])
	require.Len(t, rows[4], 1)
	require.Contains(t, rows[4][0], "instagram: an Instagram post needs a photo or a video")
	require.Equal(t, []string{"twitter_x: text is 281 weighted characters; X allows 280 (URLs count 23, most emoji and CJK characters 2)"}, rows[5])
	require.Equal(t, []string{"Expected object, received string"}, rows[6])
	require.Contains(t, rows[7][0], "platforms: Invalid uuid")
	require.Equal(t, []string{`scheduledAt: only a campaign with publish "schedule" takes a time`}, rows[8])
	require.Len(t, rows[9], 2, "a row's errors are all reported: %v", rows[9])
	require.Contains(t, r.errorMessage(t), "8 of 9 posts are invalid")
	nothingCreated()

	// One bad post among 999 good ones: nothing is created, and the one row says why.
	posts := make([]any, 1000)
	for i := range posts {
		posts[i] = campaignPost(fmt.Sprintf("good %d", i), []*persistence.Account{x, bsky}[i%2])
	}
	posts[499] = campaignPost("the bad one", bsky, foreign)
	rows = rowErrors(t, b.createCampaign(map[string]any{"publish": "now", "posts": posts}, nil))
	require.Equal(t, map[int][]string{500: {"platforms: connected account " + foreign.ID + " does not exist or is not yours"}}, rows)
	nothingCreated()
	require.Empty(t, b.app.Sim.Publications(""))

	// A dry run checks the same and creates nothing.
	r = b.createCampaign(map[string]any{"publish": "now", "posts": posts, "dry_run": true}, nil)
	require.Equal(t, map[int][]string{500: {"platforms: connected account " + foreign.ID + " does not exist or is not yours"}}, rowErrors(t, r))
	posts[499] = campaignPost("fixed", bsky)
	r = b.createCampaign(map[string]any{"publish": "now", "posts": posts, "dry_run": true}, nil)
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, map[string]any{"dry_run": true, "valid": true, "publish": "now", "posts": 1000.0, "targets": 1000.0,
		"by_platform": map[string]any{"twitter_x": 500.0, "bluesky": 500.0}, "rows": []any{}}, r.json(t))
	nothingCreated()

	// A scheduled campaign needs a valid time for every post.
	late := campaignPost("late", bsky)
	late["scheduledAt"] = "2020-01-01T10:00:00Z"
	zoneless := campaignPost("zoneless", bsky)
	zoneless["scheduledAt"] = "2030-01-01T10:00:00"
	rows = rowErrors(t, b.createCampaign(map[string]any{"publish": "schedule", "posts": []any{campaignPost("no time", bsky), late, zoneless}}, nil))
	require.Len(t, rows, 3)
	require.Contains(t, rows[1][0], "scheduledAt: Required")
	require.Contains(t, rows[2][0], "scheduledAt")
	require.Contains(t, rows[3][0], "scheduledAt")
	nothingCreated()
}

// The free plan's monthly quota counts a campaign as its posts, all or none; drafts do not count.
func TestCampaignFreePlanQuota(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{plan: "free", freeQuota: 5})
	posts := make([]any, 6)
	for i := range posts {
		posts[i] = campaignPost(fmt.Sprintf("post %d", i), b.accounts[0])
	}
	for _, dry := range []bool{true, false} {
		r := b.createCampaign(map[string]any{"publish": "now", "posts": posts, "dry_run": dry}, nil)
		require.Equal(t, 403, r.status, string(r.body))
		require.Equal(t, "limit_exceeded", r.errorCode(t))
		require.Contains(t, r.errorMessage(t), "the campaign has 6 posts")
	}
	require.Equal(t, 0, b.countPosts())
	r := b.createCampaign(map[string]any{"publish": "draft", "posts": posts}, nil)
	require.Equal(t, 202, r.status, string(r.body))
	r = b.createCampaign(map[string]any{"publish": "now", "posts": posts[:5]}, nil)
	require.Equal(t, 202, r.status, string(r.body))
	r = b.createCampaign(map[string]any{"publish": "now", "posts": posts[:1]}, nil)
	require.Equal(t, 403, r.status)
	require.Equal(t, 11, b.countPosts())
}

// A CSV campaign: UTF-8 with a byte order mark, columns in any order, RFC 4180 quoting (a
// content over several lines, commas and doubled quotes), several ids in one cell; and the CSVs
// that are refused: a wrong header, a missing column, a short row, another user's account, a
// stray quote, another charset.
func TestCampaignCSV(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	x, bsky := b.account(platforms.X), b.account(platforms.Bluesky)
	other, _ := b.newUser("other@example.com", "pro")
	foreign := b.newAccount(other.ID, "bluesky")

	csv := "\ufeffPlatforms,content,media\r\n" +
		x.ID + " " + bsky.ID + ",\"Line one,\nline two with \"\"quotes\"\"\",\r\n" +
		bsky.ID + ",plain,\r\n"
	r := b.csvCampaign(csv, "publish=draft&name=From+a+sheet")
	require.Equal(t, 202, r.status, string(r.body))
	acc := r.json(t)
	require.Len(t, acc["posts"], 2)
	first := b.do("GET", "/v1/posts/"+acc["posts"].([]any)[0].(map[string]any)["post_id"].(string), nil).json(t)
	require.Equal(t, "Line one,\nline two with \"quotes\"", first["content"])
	require.Equal(t, "draft", first["status"])
	require.Len(t, first["platforms"], 2)
	g := b.do("GET", "/v1/campaigns/"+acc["campaign_id"].(string), nil).json(t)
	require.Equal(t, "From a sheet", g["name"])
	require.Equal(t, "draft", g["status"])
	require.Equal(t, 2.0, g["totals"].(map[string]any)["draft"])

	// A dry run through the query.
	r = b.csvCampaign("content,platforms\nhello,"+bsky.ID+"\n", "publish=now&dry_run=true")
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, 1.0, r.json(t)["posts"])
	require.Equal(t, 2, b.countPosts())

	headerErrors := func(r *response) []any {
		t.Helper()
		require.Equal(t, 400, r.status, string(r.body))
		return r.json(t)["error"].(map[string]any)["details"].(map[string]any)["header"].([]any)
	}
	h := headerErrors(b.csvCampaign("text,platforms\nhello,"+bsky.ID+"\n", "publish=now"))
	require.Len(t, h, 2)
	require.Contains(t, h[0], `unknown column "text" (column 1)`)
	require.Contains(t, h[1], "the content column is required")
	h = headerErrors(b.csvCampaign("content,platforms,content\nhello,"+bsky.ID+",again\n", "publish=now"))
	require.Equal(t, []any{"column content appears twice (columns 1 and 3)"}, h)
	h = headerErrors(b.csvCampaign("content\nhello\n", "publish=now"))
	require.Equal(t, []any{"the platforms column is required"}, h, "a missing column")

	// Row numbers count data rows, not lines: the quoted line break of row 1 does not shift row 2.
	rows := rowErrors(t, b.csvCampaign("content,platforms\n\"two\nlines\","+bsky.ID+"\nstranger's,"+foreign.ID+"\nshort\n", "publish=now"))
	require.Equal(t, map[int][]string{
		2: {"platforms: connected account " + foreign.ID + " does not exist or is not yours"},
		3: {"the row has 1 fields; the header has 2"},
	}, rows)
	rows = rowErrors(t, b.csvCampaign("content,platforms\nfine,"+bsky.ID+"\nbad \"quote,"+bsky.ID+"\n", "publish=now"))
	require.Len(t, rows, 1)
	require.Contains(t, rows[2][0], `CSV: line 3, column 5: bare " in non-quoted-field`)
	rows = rowErrors(t, b.csvCampaign("content,platforms\n\xff\xfe,"+bsky.ID+"\n", "publish=now"))
	require.Equal(t, map[int][]string{1: {"content: is not valid UTF-8; send the CSV as UTF-8"}}, rows)
	r = b.doKey(b.key, "POST", "/v1/campaigns?publish=now", []byte("content,platforms\nhé,"+bsky.ID+"\n"), http.Header{"Content-Type": {"text/csv; charset=iso-8859-1"}})
	require.Equal(t, 400, r.status)
	require.Contains(t, r.errorMessage(t), "UTF-8")
	r = b.csvCampaign("content,platforms\nhello,"+bsky.ID+"\n", "")
	require.Equal(t, 400, r.status)
	require.Contains(t, r.errorMessage(t), "publish: Required")
	r = b.csvCampaign("content,platforms\n", "publish=now")
	require.Equal(t, 400, r.status)
	require.Contains(t, r.errorMessage(t), "at least one post")
	require.Equal(t, 2, b.countPosts())
}

// reconnectX connects the demo X account again with fresh tokens for the same X user, as
// `herald accounts add` does.
func (b *testBundle) reconnectX(x *persistence.Account) {
	b.t.Helper()
	creds, err := b.app.Sim.NewAccount(platforms.X, *x.Username)
	require.NoError(b.t, err)
	res, err := b.app.Connect.Add(context.Background(), accountlink.Add{Email: b.user.Email, Platform: "twitter_x", ClientID: sim.ClientID,
		AccessToken: creds.AccessToken, RefreshToken: creds.RefreshToken, ExpiresIn: 7200})
	require.NoError(b.t, err)
	require.Equal(b.t, x.ID, res.Account.ID, "the same account, renewed")
}

// lastID is the id of a stream's last event.
func lastID(events []sseEvent) string { return events[len(events)-1].ID }

// The X account's consent was withdrawn: the campaign's X targets fail, campaign.completed says
// so; once X is connected again, two retries of its targets at once publish each of them once,
// and campaign.completed comes again.
func TestCampaignRetriedTwiceAtOnce(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	b := setup(t, bundleOpts{demo: true, config: withReceivers(ca)})
	rcv := webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	b.createWebhook(rcv.URL, persistence.CampaignEventCompleted)
	x, bsky := b.account(platforms.X), b.account(platforms.Bluesky)
	require.True(t, b.app.Sim.Tokens(platforms.X).RevokeUser(x.NetworkUserID))
	var posts []any
	for i := 0; i < 20; i++ {
		posts = append(posts, campaignPost(fmt.Sprintf("both %d", i), x, bsky))
	}
	r := b.createCampaign(map[string]any{"name": "Retried", "publish": "now", "posts": posts}, nil)
	require.Equal(t, 202, r.status, string(r.body))
	id := r.json(t)["campaign_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first, _ := b.followCampaign(ctx, id, "", nil)
	done := first[len(first)-1]
	require.Equal(t, "done", done.Type)
	require.Equal(t, 20.0, done.Data["totals"].(map[string]any)["partial"])
	failed := done.Data["failed_targets"].([]any)
	require.Len(t, failed, 20)
	for _, f := range failed {
		m := f.(map[string]any)
		require.Equal(t, x.ID, m["connected_account_id"])
		require.Contains(t, m["error"], "connect the account again")
	}
	ev := rcv.Next(t)
	require.Equal(t, "campaign.completed", ev.Header.Get("X-Service-Event"))
	var body struct {
		Data struct {
			CampaignID string         `json:"campaign_id"`
			Name       string         `json:"name"`
			Posts      int            `json:"posts"`
			Totals     map[string]int `json:"totals"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(ev.Body, &body))
	require.Equal(t, id, body.Data.CampaignID)
	require.Equal(t, "Retried", body.Data.Name)
	require.Equal(t, 20, body.Data.Posts)
	require.Equal(t, 20, body.Data.Totals["partial"])

	b.reconnectX(x)
	var wg sync.WaitGroup
	retries := make([]map[string]any, 2)
	for i := range retries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := b.do("POST", "/v1/campaigns/"+id+"/retry", map[string]any{"account_id": x.ID})
			if r.status != 202 {
				t.Errorf("retry: %d %s", r.status, r.body)
				return
			}
			retries[i] = r.json(t)
		}()
	}
	wg.Wait()
	retried := map[string]int{}
	targets := 0.0
	for _, r := range retries {
		require.Equal(t, map[string]any{"account_id": x.ID}, r["only"])
		require.Empty(t, r["skipped"])
		targets += r["targets"].(float64)
		for _, p := range r["retried"].([]any) {
			retried[p.(map[string]any)["post_id"].(string)]++
		}
	}
	require.Equal(t, 20.0, targets, "each failed target retried once")
	require.Len(t, retried, 20)

	// The same stream, resumed after its done, follows the retry to its own done.
	again, _ := b.followCampaign(ctx, id, lastID(first), nil)
	require.Equal(t, "done", again[len(again)-1].Type)
	require.Equal(t, 20.0, again[len(again)-1].Data["totals"].(map[string]any)["published"])
	for _, e := range again[:len(again)-1] {
		require.Equal(t, "twitter_x", e.Data["platform"], "only X was published again")
	}
	ev = rcv.Next(t)
	require.NoError(t, json.Unmarshal(ev.Body, &body))
	require.Equal(t, 20, body.Data.Totals["published"])
	for text, n := range b.simTexts() {
		require.Equal(t, 2, n, "%q once on each network", text)
	}
	require.Len(t, b.app.Sim.Publications(platforms.X), 20)

	// Nothing is left to retry.
	r = b.do("POST", "/v1/campaigns/"+id+"/retry", nil)
	require.Equal(t, 202, r.status)
	require.Empty(t, r.json(t)["retried"])
	r = b.do("POST", "/v1/campaigns/"+id+"/retry", map[string]any{"account_id": uuid.NewString()})
	require.Equal(t, 400, r.status)
	r = b.do("POST", "/v1/campaigns/"+id+"/retry", map[string]any{"platform": "myspace"})
	require.Equal(t, 400, r.status)
}

// Deleting a campaign while it publishes: its scheduled posts are cancelled, the ones publishing
// go on and are published once; a campaign of drafts is deleted whole. Another user sees none of
// it.
func TestCampaignDeletedWhilePublishing(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, simLatency: 150 * time.Millisecond})
	bsky := b.account(platforms.Bluesky)
	now := time.Now().UTC()
	var posts []any
	for i := 0; i < 10; i++ {
		p := campaignPost(fmt.Sprintf("scheduled %d", i), bsky)
		at := now.Add(-10 * time.Second)
		if i >= 5 {
			at = now.Add(time.Hour)
		}
		p["scheduledAt"] = at.Format(time.RFC3339Nano)
		posts = append(posts, p)
	}
	r := b.createCampaign(map[string]any{"publish": "schedule", "posts": posts}, nil)
	require.Equal(t, 202, r.status, string(r.body))
	id := r.json(t)["campaign_id"].(string)
	var ids []string
	for _, p := range r.json(t)["posts"].([]any) {
		ids = append(ids, p.(map[string]any)["post_id"].(string))
	}
	require.Eventually(t, func() bool {
		return b.do("GET", "/v1/campaigns/"+id, nil).json(t)["totals"].(map[string]any)["publishing"].(float64) > 0
	}, 10*time.Second, 5*time.Millisecond)

	_, otherKey := b.newUser("other@example.com", "pro")
	for _, req := range [][2]string{{"GET", ""}, {"GET", "/stream"}, {"POST", "/retry"}, {"DELETE", ""}} {
		r := b.doKey(otherKey, req[0], "/v1/campaigns/"+id+req[1], nil, nil)
		require.Equal(t, 404, r.status, "%s %s", req[0], req[1])
		require.Equal(t, "not_found", r.errorCode(t))
	}
	require.Equal(t, 0.0, b.doKey(otherKey, "GET", "/v1/campaigns", nil, nil).json(t)["pagination"].(map[string]any)["total"])

	r = b.do("DELETE", "/v1/campaigns/"+id, nil)
	require.Equal(t, 200, r.status, string(r.body))
	res := r.json(t)
	require.Equal(t, false, res["deleted"])
	cancelled := map[string]bool{}
	for _, c := range res["cancelled"].([]any) {
		cancelled[c.(string)] = true
	}
	kept := map[string]bool{}
	for _, k := range res["kept"].([]any) {
		m := k.(map[string]any)
		require.Contains(t, []string{"publishing", "published"}, m["status"])
		kept[m["post_id"].(string)] = true
	}
	require.NotEmpty(t, kept, "a post publishing is kept")
	for i, pid := range ids {
		require.NotEqual(t, cancelled[pid], kept[pid], "post %d is cancelled or kept", i)
		if i >= 5 {
			require.True(t, cancelled[pid], "post %d was scheduled in an hour", i)
		}
	}
	require.Eventually(t, func() bool {
		return b.do("GET", "/v1/campaigns/"+id, nil).json(t)["status"] == "cancelled"
	}, 20*time.Second, 10*time.Millisecond)
	texts := b.simTexts()
	for i, pid := range ids {
		if kept[pid] {
			require.Equal(t, 1, texts[fmt.Sprintf("scheduled %d", i)], "post %d published once", i)
			continue
		}
		require.Zero(t, texts[fmt.Sprintf("scheduled %d", i)], "post %d never published", i)
		require.Equal(t, 404, b.do("GET", "/v1/posts/"+pid, nil).status)
	}
	g := b.do("GET", "/v1/campaigns/"+id, nil).json(t)
	require.NotNil(t, g["cancelled_at"])
	require.Equal(t, float64(len(kept)), g["posts"])

	// A campaign of drafts is deleted whole.
	r = b.createCampaign(map[string]any{"publish": "draft", "posts": []any{campaignPost("a draft", bsky), campaignPost("another", bsky)}}, nil)
	require.Equal(t, 202, r.status)
	drafts := r.json(t)["campaign_id"].(string)
	r = b.do("DELETE", "/v1/campaigns/"+drafts, nil)
	require.Equal(t, 200, r.status)
	require.Equal(t, true, r.json(t)["deleted"])
	require.Len(t, r.json(t)["cancelled"], 2)
	require.Equal(t, 404, b.do("GET", "/v1/campaigns/"+drafts, nil).status)
	require.Equal(t, 404, b.do("DELETE", "/v1/campaigns/"+drafts, nil).status)
	require.Equal(t, 404, b.do("GET", "/v1/campaigns/"+uuid.NewString()+"/stream", nil).status)
}

// Done when: a 1,000-post campaign over five sandbox accounts, followed to the end on one SSE
// stream with a real SSE client; the X account's token is revoked mid-way (the user withdrew
// Herald's access), so its remaining targets fail with an error that says to connect it again;
// the account is connected again, the campaign's failed targets of that account are retried, and
// every post is published exactly once (the simulator's record).
func TestThousandPostCampaign(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, simLatency: 10 * time.Millisecond, config: func(c *app.Config) {
		// The networks' published budgets, scaled so that a thousand posts fit in the test's time.
		c.SimLimitScale = 1e5
		c.Budgets = account.ScaleRules(account.DefaultRules, 1e5)
	}})
	x := b.account(platforms.X)
	accounts := []*persistence.Account{x, b.account(platforms.Bluesky), b.account(platforms.LinkedIn), b.account(platforms.Facebook), b.account(platforms.Threads)}
	posts := make([]any, 1000)
	for i := range posts {
		posts[i] = campaignPost(fmt.Sprintf("campaign post %d of 1000", i+1), accounts[i%len(accounts)])
	}
	start := time.Now()
	r := b.createCampaign(map[string]any{"name": "Product launch", "publish": "now", "posts": posts}, nil)
	require.Equal(t, 202, r.status, string(r.body))
	submitted := time.Since(start)
	id := r.json(t)["campaign_id"].(string)
	require.Len(t, r.json(t)["posts"], 1000)

	// One stream, from the first step to done. When 30 X posts are out, X's consent is
	// withdrawn.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	xDone := 0
	revoked := false
	events, err := b.followCampaign(ctx, id, "", func(e sseEvent) {
		if e.Type == "progress" && e.Data["platform"] == "twitter_x" && e.Data["phase"] == persistence.PhaseSuccess {
			if xDone++; xDone == 30 {
				require.True(t, b.app.Sim.Tokens(platforms.X).RevokeUser(x.NetworkUserID))
				revoked = true
			}
		}
	})
	require.NoError(t, err)
	require.True(t, revoked)
	done := events[len(events)-1]
	require.Equal(t, "done", done.Type)
	for i, e := range events[:len(events)-1] {
		require.Equal(t, strconv.Itoa(i+1), e.ID, "one stream, every event in order, none missed")
	}
	require.Equal(t, events[len(events)-2].ID, done.ID, "done carries the id of the last step")
	final := map[string]string{}
	for _, e := range events[:len(events)-1] {
		require.Equal(t, "progress", e.Type)
		if p := e.Data["phase"]; p == persistence.PhaseSuccess || p == persistence.PhaseFailed {
			pid := e.Data["post_id"].(string)
			require.NotContains(t, final, pid, "one outcome per post")
			final[pid] = p.(string)
		}
	}
	require.Len(t, final, 1000)
	totals := done.Data["totals"].(map[string]any)
	failedX := int(totals["failed"].(float64))
	require.Equal(t, 1000, int(totals["published"].(float64))+failedX)
	require.Positive(t, failedX, "X's remaining posts failed")
	require.Less(t, failedX, 200-29, "X published until its consent was withdrawn")
	xTotals := done.Data["by_platform"].(map[string]any)["twitter_x"].(map[string]any)
	require.Equal(t, float64(failedX), xTotals["failed"])
	for _, f := range done.Data["failed_targets"].([]any) {
		m := f.(map[string]any)
		require.Equal(t, x.ID, m["connected_account_id"])
		require.Contains(t, m["error"], "connect the account again")
	}
	require.Len(t, done.Data["failed_targets"], failedX)
	t.Logf("submitted in %s, done after %s: %d events on one stream, %d X posts failed", submitted.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond), len(events), failedX)

	// X is connected again; its failed targets are retried, and the stream, resumed after its
	// done, follows them to the end.
	b.reconnectX(x)
	rr := b.do("POST", "/v1/campaigns/"+id+"/retry", map[string]any{"account_id": x.ID})
	require.Equal(t, 202, rr.status, string(rr.body))
	require.Equal(t, float64(failedX), rr.json(t)["targets"])
	again, err := b.followCampaign(ctx, id, lastID(events), nil)
	require.NoError(t, err)
	end := again[len(again)-1]
	require.Equal(t, "done", end.Type)
	require.Equal(t, 1000.0, end.Data["totals"].(map[string]any)["published"])
	require.Empty(t, end.Data["failed_targets"])

	texts := b.simTexts()
	require.Len(t, texts, 1000)
	for i := range posts {
		require.Equal(t, 1, texts[fmt.Sprintf("campaign post %d of 1000", i+1)], "post %d published exactly once", i+1)
	}
	require.Len(t, b.app.Sim.Publications(platforms.X), 200)
}

// A campaign through the dashboard's door: the session and CSRF token, links through /api, the
// stream on the session, and an Idempotency-Key that names the operation whichever the door. A
// campaign's body may be larger than other routes' (8 MiB), not more.
func TestCampaignThroughTheDashboardDoor(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	br := b.signedIn()
	bsky := b.account(platforms.Bluesky)
	body := map[string]any{"publish": "now", "posts": []any{campaignPost("from the dashboard", bsky), campaignPost("and another", bsky)}}
	r := br.send("POST", "/api/campaigns", body, nil)
	require.Equal(t, 403, r.status, "no CSRF token")
	hdr := br.csrfHeader()
	hdr.Set("Idempotency-Key", "dash-1")
	r = br.send("POST", "/api/campaigns", body, hdr)
	require.Equal(t, 202, r.status, string(r.body))
	id := r.json(t)["campaign_id"].(string)
	require.Equal(t, "/api/campaigns/"+id+"/stream", r.json(t)["stream_url"])
	require.Equal(t, "/api/campaigns/"+id, r.header.Get("Location"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, _ := br.stream(ctx, r.json(t)["stream_url"].(string))
	require.Equal(t, "done", events[len(events)-1].Type, "%v", events)
	require.Equal(t, 2.0, events[len(events)-1].Data["totals"].(map[string]any)["published"])

	again := b.createCampaign(body, http.Header{"Idempotency-Key": {"dash-1"}})
	require.Equal(t, 202, again.status, string(again.body))
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, id, again.json(t)["campaign_id"])
	require.Equal(t, "/v1/campaigns/"+id+"/stream", again.json(t)["stream_url"])
	require.Equal(t, "/v1/campaigns/"+id, again.header.Get("Location"))
	require.Equal(t, r.json(t)["posts"], again.json(t)["posts"])
	require.Len(t, b.app.Sim.Publications(platforms.Bluesky), 2)

	other, _ := b.newUser("other@example.com", "pro")
	ob := b.newBrowser()
	require.Equal(t, 200, ob.signIn(other.Email, passwordOf(other.Email)).status)
	require.Equal(t, 404, ob.send("GET", "/api/campaigns/"+id, nil, nil).status)

	// 1,000 posts of 1,500 characters are about 1.6 MB: taken (here as a dry run). Over 8 MiB is
	// refused before it is read.
	long := strings.Repeat("x", 1500) // within LinkedIn's 3,000 characters
	posts := make([]any, 1000)
	for i := range posts {
		posts[i] = campaignPost(long, b.account(platforms.LinkedIn))
	}
	r = b.createCampaign(map[string]any{"publish": "draft", "dry_run": true, "posts": posts}, nil)
	require.Equal(t, 200, r.status, truncate(string(r.body), 300))
	huge := strings.Repeat("y", 9000)
	for i := range posts {
		posts[i] = campaignPost(huge, bsky)
	}
	r = b.createCampaign(map[string]any{"publish": "draft", "posts": posts}, nil)
	require.Equal(t, 413, r.status)
	require.Contains(t, r.errorMessage(t), "larger than 8388608 bytes")
}

// A campaign whose commit fails is answered 503 and leaves nothing: no campaign, no post, no
// job, no Idempotency-Key answer; sent again once the store writes, it is created and published.
func TestCampaignStoreFault(t *testing.T) {
	t.Parallel()
	faults := &persistence.Faults{}
	b := setup(t, bundleOpts{demo: true, config: withFaults(faults)})
	bsky := b.account(platforms.Bluesky)
	body := map[string]any{"publish": "now", "posts": []any{campaignPost("one", bsky), campaignPost("two", bsky)}}
	key := http.Header{"Idempotency-Key": {"fault-1"}}
	faults.FailCommits(syscall.EIO)
	requireStoreFailure(t, "create a campaign", b.createCampaign(body, key))
	faults.ClearCommits()
	require.Equal(t, 0, b.countPosts())
	require.Equal(t, 0.0, b.do("GET", "/v1/campaigns", nil).json(t)["pagination"].(map[string]any)["total"])

	r := b.createCampaign(body, key)
	require.Equal(t, 202, r.status, string(r.body))
	require.Empty(t, r.header.Get("Idempotent-Replayed"), "the failed request stored no answer")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, err := b.followCampaign(ctx, r.json(t)["campaign_id"].(string), "", nil)
	require.NoError(t, err)
	require.Equal(t, 2.0, events[len(events)-1].Data["totals"].(map[string]any)["published"])
}

package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// simTexts counts what the simulator published, by text.
func simTexts(h *apptest.Herald) map[string]int {
	out := map[string]int{}
	for _, r := range h.App.Sim.Publications("") {
		out[r.Text]++
	}
	return out
}

// A campaign published at once: 202 with every post and its job in the order of the request,
// one stream from the first step to done, its totals and targets per network, the posts in the
// post list, one request against the hourly quota, and Idempotency-Key as on publish.
func TestCampaignPublishesOnOneStream(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, li := h.Account(platforms.X), h.Account(platforms.Bluesky), h.Account(platforms.LinkedIn)
	var posts []any
	for i := 0; i < 6; i++ {
		posts = append(posts, apptest.CampaignPost(fmt.Sprintf("launch %d", i), []*persistence.Account{x, bsky, li}[i%3]))
	}
	posts = append(posts, apptest.CampaignPost("everywhere", x, bsky))
	body := map[string]any{"name": "Launch", "publish": "now", "posts": posts}
	before := h.Do("GET", "/v1/me", nil)
	r := h.CreateCampaign(body, http.Header{"Idempotency-Key": {"launch-1"}})
	require.Equal(t, 202, r.Status, string(r.Body))
	acc := r.JSON(t)
	id := acc["campaign_id"].(string)
	require.Equal(t, "/v1/campaigns/"+id, r.Header.Get("Location"))
	require.Equal(t, "/v1/campaigns/"+id+"/stream", acc["stream_url"])
	require.Len(t, acc["posts"], 7)
	remaining := func(r *apptest.Response) int { n, _ := strconv.Atoi(r.Header.Get("RateLimit-Remaining")); return n }
	require.Equal(t, remaining(before)-1, remaining(r), "a campaign is one request against the hourly quota")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, _ := h.FollowCampaign(ctx, id, "", nil)
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

	g := h.Do("GET", "/v1/campaigns/"+id, nil)
	require.Equal(t, 200, g.Status, string(g.Body))
	d := g.JSON(t)
	require.Equal(t, "Launch", d["name"])
	require.Equal(t, "now", d["publish"])
	require.Equal(t, 7.0, d["posts"])
	require.Equal(t, map[string]any{"targets": 3.0, "pending": 0.0, "publishing": 0.0, "published": 3.0, "failed": 0.0}, d["by_platform"].(map[string]any)["twitter_x"])
	require.Empty(t, d["failed_targets"])
	l := h.Do("GET", "/v1/campaigns?limit=5", nil)
	require.Equal(t, 200, l.Status)
	require.Equal(t, 1.0, l.JSON(t)["pagination"].(map[string]any)["total"])
	require.Equal(t, 7, h.CountPosts())
	for i, p := range acc["posts"].([]any) {
		m := p.(map[string]any)
		pd := h.Do("GET", "/v1/posts/"+m["post_id"].(string), nil).JSON(t)
		require.Equal(t, "published", pd["status"])
		require.Equal(t, m["tracking_id"], pd["tracking_id"])
		if i < 6 {
			require.Equal(t, fmt.Sprintf("launch %d", i), pd["content"], "posts in the order of the request")
		}
	}

	// The same key and body replay the answer; another body is refused.
	again := h.CreateCampaign(body, http.Header{"Idempotency-Key": {"launch-1"}})
	require.Equal(t, 202, again.Status)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(r.Body), string(again.Body))
	body["name"] = "Another"
	require.Equal(t, 422, h.CreateCampaign(body, http.Header{"Idempotency-Key": {"launch-1"}}).Status)
	require.Equal(t, 7, h.CountPosts())
	texts := simTexts(h)
	require.Len(t, texts, 7)
	for text, n := range texts {
		require.Equal(t, map[bool]int{true: 2, false: 1}[text == "everywhere"], n, text)
	}

	// A late client gets the whole timeline again, then done; one that resumes after the last
	// progress gets only done.
	late, _ := h.FollowCampaign(ctx, id, "", nil)
	require.Len(t, late, len(events))
	resumed, _ := h.FollowCampaign(ctx, id, strconv.Itoa(last), nil)
	require.Len(t, resumed, 1)
	require.Equal(t, "done", resumed[0].Type)
}

// Bad campaigns are refused whole, with every bad post's errors by row, and create nothing:
// an empty campaign, 1,001 posts, posts that break the create rules, another user's account,
// each network's own rules, a time where none is taken; one bad row among 999 good ones.
func TestCampaignBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, ig := h.Account(platforms.X), h.Account(platforms.Bluesky), h.Account(platforms.Instagram)
	other, _ := h.NewUser("other@example.com", "pro")
	foreign := h.NewAccount(other.ID, "linkedin")
	nothingCreated := func() {
		t.Helper()
		require.Equal(t, 0, h.CountPosts())
		l := h.Do("GET", "/v1/campaigns", nil)
		require.Equal(t, 0.0, l.JSON(t)["pagination"].(map[string]any)["total"])
	}

	r := h.CreateCampaign(map[string]any{"publish": "now", "posts": []any{}}, nil)
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.ErrorMessage(t), "at least one post")
	many := make([]any, 1001)
	for i := range many {
		many[i] = apptest.CampaignPost(fmt.Sprintf("post %d", i), bsky)
	}
	r = h.CreateCampaign(map[string]any{"publish": "now", "posts": many}, nil)
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.ErrorMessage(t), "at most 1000 posts; this one has 1001")
	for name, body := range map[string]any{
		"no publish":      map[string]any{"posts": []any{apptest.CampaignPost("x", bsky)}},
		"unknown publish": map[string]any{"publish": "later", "posts": []any{apptest.CampaignPost("x", bsky)}},
		"posts an object": map[string]any{"publish": "now", "posts": map[string]any{}},
		"dry_run string":  map[string]any{"publish": "now", "dry_run": "yes", "posts": []any{apptest.CampaignPost("x", bsky)}},
	} {
		r := h.CreateCampaign(body.(map[string]any), nil)
		require.Equal(t, 400, r.Status, name)
		require.Equal(t, "validation_error", r.ErrorCode(t), name)
	}
	r = h.DoKey(h.Key, "POST", "/v1/campaigns", `{"publish":"now","posts":[`, nil)
	require.Equal(t, 400, r.Status)
	nothingCreated()

	// Every bad post reported at once, each with all its errors.
	withTime := apptest.CampaignPost("timed", bsky)
	withTime["scheduledAt"] = "2030-01-01T10:00:00Z"
	r = h.CreateCampaign(map[string]any{"publish": "now", "posts": []any{
		apptest.CampaignPost("fine", bsky),
		map[string]any{"platforms": []string{bsky.ID}},
		apptest.CampaignPost("someone else's account", foreign),
		apptest.CampaignPost("no photo", ig),
		apptest.CampaignPost(strings.Repeat("a", 281), x, bsky),
		"not an object",
		map[string]any{"content": "names", "platforms": []string{"linkedin"}},
		withTime,
		map[string]any{"content": 42, "platforms": []string{uuid.NewString()}},
	}}, nil)
	rows := apptest.RowErrors(t, r)
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
	require.Contains(t, r.ErrorMessage(t), "8 of 9 posts are invalid")
	nothingCreated()

	// One bad post among 999 good ones: nothing is created, and the one row says why.
	posts := make([]any, 1000)
	for i := range posts {
		posts[i] = apptest.CampaignPost(fmt.Sprintf("good %d", i), []*persistence.Account{x, bsky}[i%2])
	}
	posts[499] = apptest.CampaignPost("the bad one", bsky, foreign)
	rows = apptest.RowErrors(t, h.CreateCampaign(map[string]any{"publish": "now", "posts": posts}, nil))
	require.Equal(t, map[int][]string{500: {"platforms: connected account " + foreign.ID + " does not exist or is not yours"}}, rows)
	nothingCreated()
	require.Empty(t, h.App.Sim.Publications(""))

	// A dry run checks the same and creates nothing.
	r = h.CreateCampaign(map[string]any{"publish": "now", "posts": posts, "dry_run": true}, nil)
	require.Equal(t, map[int][]string{500: {"platforms: connected account " + foreign.ID + " does not exist or is not yours"}}, apptest.RowErrors(t, r))
	posts[499] = apptest.CampaignPost("fixed", bsky)
	r = h.CreateCampaign(map[string]any{"publish": "now", "posts": posts, "dry_run": true}, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, map[string]any{"dry_run": true, "valid": true, "publish": "now", "posts": 1000.0, "targets": 1000.0,
		"by_platform": map[string]any{"twitter_x": 500.0, "bluesky": 500.0}, "rows": []any{}}, r.JSON(t))
	nothingCreated()

	// A scheduled campaign needs a valid time for every post.
	late := apptest.CampaignPost("late", bsky)
	late["scheduledAt"] = "2020-01-01T10:00:00Z"
	zoneless := apptest.CampaignPost("zoneless", bsky)
	zoneless["scheduledAt"] = "2030-01-01T10:00:00"
	rows = apptest.RowErrors(t, h.CreateCampaign(map[string]any{"publish": "schedule", "posts": []any{apptest.CampaignPost("no time", bsky), late, zoneless}}, nil))
	require.Len(t, rows, 3)
	require.Contains(t, rows[1][0], "scheduledAt: Required")
	require.Contains(t, rows[2][0], "scheduledAt")
	require.Contains(t, rows[3][0], "scheduledAt")
	nothingCreated()
}

// The free plan's monthly quota counts a campaign as its posts, all or none; drafts do not count.
func TestCampaignFreePlanQuota(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Plan: "free", FreeQuota: 5})
	posts := make([]any, 6)
	for i := range posts {
		posts[i] = apptest.CampaignPost(fmt.Sprintf("post %d", i), h.Accounts[0])
	}
	for _, dry := range []bool{true, false} {
		r := h.CreateCampaign(map[string]any{"publish": "now", "posts": posts, "dry_run": dry}, nil)
		require.Equal(t, 403, r.Status, string(r.Body))
		require.Equal(t, "limit_exceeded", r.ErrorCode(t))
		require.Contains(t, r.ErrorMessage(t), "the campaign has 6 posts")
	}
	require.Equal(t, 0, h.CountPosts())
	r := h.CreateCampaign(map[string]any{"publish": "draft", "posts": posts}, nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	r = h.CreateCampaign(map[string]any{"publish": "now", "posts": posts[:5]}, nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	r = h.CreateCampaign(map[string]any{"publish": "now", "posts": posts[:1]}, nil)
	require.Equal(t, 403, r.Status)
	require.Equal(t, 11, h.CountPosts())
}

// A CSV campaign: UTF-8 with a byte order mark, columns in any order, RFC 4180 quoting (a
// content over several lines, commas and doubled quotes), several ids in one cell; and the CSVs
// that are refused: a wrong header, a missing column, a short row, another user's account, a
// stray quote, another charset.
func TestCampaignCSV(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky := h.Account(platforms.X), h.Account(platforms.Bluesky)
	other, _ := h.NewUser("other@example.com", "pro")
	foreign := h.NewAccount(other.ID, "bluesky")

	csv := "\ufeffPlatforms,content,media\r\n" +
		x.ID + " " + bsky.ID + ",\"Line one,\nline two with \"\"quotes\"\"\",\r\n" +
		bsky.ID + ",plain,\r\n"
	r := csvCampaign(h, csv, "publish=draft&name=From+a+sheet")
	require.Equal(t, 202, r.Status, string(r.Body))
	acc := r.JSON(t)
	require.Len(t, acc["posts"], 2)
	first := h.Do("GET", "/v1/posts/"+acc["posts"].([]any)[0].(map[string]any)["post_id"].(string), nil).JSON(t)
	require.Equal(t, "Line one,\nline two with \"quotes\"", first["content"])
	require.Equal(t, "draft", first["status"])
	require.Len(t, first["platforms"], 2)
	g := h.Do("GET", "/v1/campaigns/"+acc["campaign_id"].(string), nil).JSON(t)
	require.Equal(t, "From a sheet", g["name"])
	require.Equal(t, "draft", g["status"])
	require.Equal(t, 2.0, g["totals"].(map[string]any)["draft"])

	// A dry run through the query.
	r = csvCampaign(h, "content,platforms\nhello,"+bsky.ID+"\n", "publish=now&dry_run=true")
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, 1.0, r.JSON(t)["posts"])
	require.Equal(t, 2, h.CountPosts())

	headerErrors := func(r *apptest.Response) []any {
		t.Helper()
		require.Equal(t, 400, r.Status, string(r.Body))
		return r.JSON(t)["error"].(map[string]any)["details"].(map[string]any)["header"].([]any)
	}
	he := headerErrors(csvCampaign(h, "text,platforms\nhello,"+bsky.ID+"\n", "publish=now"))
	require.Len(t, he, 2)
	require.Contains(t, he[0], `unknown column "text" (column 1)`)
	require.Contains(t, he[1], "the content column is required")
	he = headerErrors(csvCampaign(h, "content,platforms,content\nhello,"+bsky.ID+",again\n", "publish=now"))
	require.Equal(t, []any{"column content appears twice (columns 1 and 3)"}, he)
	he = headerErrors(csvCampaign(h, "content\nhello\n", "publish=now"))
	require.Equal(t, []any{"the platforms column is required"}, he, "a missing column")

	// Row numbers count data rows, not lines: the quoted line break of row 1 does not shift row 2.
	rows := apptest.RowErrors(t, csvCampaign(h, "content,platforms\n\"two\nlines\","+bsky.ID+"\nstranger's,"+foreign.ID+"\nshort\n", "publish=now"))
	require.Equal(t, map[int][]string{
		2: {"platforms: connected account " + foreign.ID + " does not exist or is not yours"},
		3: {"the row has 1 fields; the header has 2"},
	}, rows)
	rows = apptest.RowErrors(t, csvCampaign(h, "content,platforms\nfine,"+bsky.ID+"\nbad \"quote,"+bsky.ID+"\n", "publish=now"))
	require.Len(t, rows, 1)
	require.Contains(t, rows[2][0], `CSV: line 3, column 5: bare " in non-quoted-field`)
	rows = apptest.RowErrors(t, csvCampaign(h, "content,platforms\n\xff\xfe,"+bsky.ID+"\n", "publish=now"))
	require.Equal(t, map[int][]string{1: {"content: is not valid UTF-8; send the CSV as UTF-8"}}, rows)
	r = h.DoKey(h.Key, "POST", "/v1/campaigns?publish=now", []byte("content,platforms\nhé,"+bsky.ID+"\n"), http.Header{"Content-Type": {"text/csv; charset=iso-8859-1"}})
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.ErrorMessage(t), "UTF-8")
	r = csvCampaign(h, "content,platforms\nhello,"+bsky.ID+"\n", "")
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.ErrorMessage(t), "publish: Required")
	r = csvCampaign(h, "content,platforms\n", "publish=now")
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.ErrorMessage(t), "at least one post")
	require.Equal(t, 2, h.CountPosts())
}

// reconnectX connects the demo X account again with fresh tokens for the same X user, as
// `herald accounts add` does.
func reconnectX(h *apptest.Herald, x *persistence.Account) {
	h.T.Helper()
	creds, err := h.App.Sim.NewAccount(platforms.X, *x.Username)
	require.NoError(h.T, err)
	res, err := h.App.Connect.Add(context.Background(), accountlink.Add{Email: h.User.Email, Platform: "twitter_x", ClientID: sim.ClientID,
		AccessToken: creds.AccessToken, RefreshToken: creds.RefreshToken, ExpiresIn: 7200})
	require.NoError(h.T, err)
	require.Equal(h.T, x.ID, res.Account.ID, "the same account, renewed")
}

// lastID is the id of a stream's last event.
func lastID(events []apptest.SSEEvent) string { return events[len(events)-1].ID }

// The X account's consent was withdrawn: the campaign's X targets fail, campaign.completed says
// so; once X is connected again, two retries of its targets at once publish each of them once,
// and campaign.completed comes again.
func TestCampaignRetriedTwiceAtOnce(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	h := apptest.Start(t, apptest.Options{Demo: true, Config: apptest.WithReceivers(ca)})
	rcv := webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	h.CreateWebhook(rcv.URL, persistence.CampaignEventCompleted)
	x, bsky := h.Account(platforms.X), h.Account(platforms.Bluesky)
	require.True(t, h.App.Sim.Tokens(platforms.X).RevokeUser(x.NetworkUserID))
	var posts []any
	for i := 0; i < 20; i++ {
		posts = append(posts, apptest.CampaignPost(fmt.Sprintf("both %d", i), x, bsky))
	}
	r := h.CreateCampaign(map[string]any{"name": "Retried", "publish": "now", "posts": posts}, nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	id := r.JSON(t)["campaign_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first, _ := h.FollowCampaign(ctx, id, "", nil)
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

	reconnectX(h, x)
	var wg sync.WaitGroup
	retries := make([]map[string]any, 2)
	for i := range retries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.Do("POST", "/v1/campaigns/"+id+"/retry", map[string]any{"account_id": x.ID})
			if r.Status != 202 {
				t.Errorf("retry: %d %s", r.Status, r.Body)
				return
			}
			retries[i] = r.JSON(t)
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
	again, _ := h.FollowCampaign(ctx, id, lastID(first), nil)
	require.Equal(t, "done", again[len(again)-1].Type)
	require.Equal(t, 20.0, again[len(again)-1].Data["totals"].(map[string]any)["published"])
	for _, e := range again[:len(again)-1] {
		require.Equal(t, "twitter_x", e.Data["platform"], "only X was published again")
	}
	ev = rcv.Next(t)
	require.NoError(t, json.Unmarshal(ev.Body, &body))
	require.Equal(t, 20, body.Data.Totals["published"])
	for text, n := range simTexts(h) {
		require.Equal(t, 2, n, "%q once on each network", text)
	}
	require.Len(t, h.App.Sim.Publications(platforms.X), 20)

	// Nothing is left to retry.
	r = h.Do("POST", "/v1/campaigns/"+id+"/retry", nil)
	require.Equal(t, 202, r.Status)
	require.Empty(t, r.JSON(t)["retried"])
	r = h.Do("POST", "/v1/campaigns/"+id+"/retry", map[string]any{"account_id": uuid.NewString()})
	require.Equal(t, 400, r.Status)
	r = h.Do("POST", "/v1/campaigns/"+id+"/retry", map[string]any{"platform": "myspace"})
	require.Equal(t, 400, r.Status)
}

// Deleting a campaign while it publishes: its scheduled posts are cancelled, the ones publishing
// go on and are published once; a campaign of drafts is deleted whole. Another user sees none of
// it.
func TestCampaignDeletedWhilePublishing(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true, SimLatency: 150 * time.Millisecond})
	bsky := h.Account(platforms.Bluesky)
	now := time.Now().UTC()
	var posts []any
	for i := 0; i < 10; i++ {
		p := apptest.CampaignPost(fmt.Sprintf("scheduled %d", i), bsky)
		at := now.Add(-10 * time.Second)
		if i >= 5 {
			at = now.Add(time.Hour)
		}
		p["scheduledAt"] = at.Format(time.RFC3339Nano)
		posts = append(posts, p)
	}
	r := h.CreateCampaign(map[string]any{"publish": "schedule", "posts": posts}, nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	id := r.JSON(t)["campaign_id"].(string)
	var ids []string
	for _, p := range r.JSON(t)["posts"].([]any) {
		ids = append(ids, p.(map[string]any)["post_id"].(string))
	}
	require.Eventually(t, func() bool {
		return h.Do("GET", "/v1/campaigns/"+id, nil).JSON(t)["totals"].(map[string]any)["publishing"].(float64) > 0
	}, 10*time.Second, 5*time.Millisecond)

	_, otherKey := h.NewUser("other@example.com", "pro")
	for _, req := range [][2]string{{"GET", ""}, {"GET", "/stream"}, {"POST", "/retry"}, {"DELETE", ""}} {
		r := h.DoKey(otherKey, req[0], "/v1/campaigns/"+id+req[1], nil, nil)
		require.Equal(t, 404, r.Status, "%s %s", req[0], req[1])
		require.Equal(t, "not_found", r.ErrorCode(t))
	}
	require.Equal(t, 0.0, h.DoKey(otherKey, "GET", "/v1/campaigns", nil, nil).JSON(t)["pagination"].(map[string]any)["total"])

	r = h.Do("DELETE", "/v1/campaigns/"+id, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	res := r.JSON(t)
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
		return h.Do("GET", "/v1/campaigns/"+id, nil).JSON(t)["status"] == "cancelled"
	}, 20*time.Second, 10*time.Millisecond)
	texts := simTexts(h)
	for i, pid := range ids {
		if kept[pid] {
			require.Equal(t, 1, texts[fmt.Sprintf("scheduled %d", i)], "post %d published once", i)
			continue
		}
		require.Zero(t, texts[fmt.Sprintf("scheduled %d", i)], "post %d never published", i)
		require.Equal(t, 404, h.Do("GET", "/v1/posts/"+pid, nil).Status)
	}
	g := h.Do("GET", "/v1/campaigns/"+id, nil).JSON(t)
	require.NotNil(t, g["cancelled_at"])
	require.Equal(t, float64(len(kept)), g["posts"])

	// A campaign of drafts is deleted whole.
	r = h.CreateCampaign(map[string]any{"publish": "draft", "posts": []any{apptest.CampaignPost("a draft", bsky), apptest.CampaignPost("another", bsky)}}, nil)
	require.Equal(t, 202, r.Status)
	drafts := r.JSON(t)["campaign_id"].(string)
	r = h.Do("DELETE", "/v1/campaigns/"+drafts, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, true, r.JSON(t)["deleted"])
	require.Len(t, r.JSON(t)["cancelled"], 2)
	require.Equal(t, 404, h.Do("GET", "/v1/campaigns/"+drafts, nil).Status)
	require.Equal(t, 404, h.Do("DELETE", "/v1/campaigns/"+drafts, nil).Status)
	require.Equal(t, 404, h.Do("GET", "/v1/campaigns/"+uuid.NewString()+"/stream", nil).Status)
}

// Done when: a 1,000-post campaign over five sandbox accounts, followed to the end on one SSE
// stream with a real SSE client; the X account's token is revoked mid-way (the user withdrew
// Herald's access), so its remaining targets fail with an error that says to connect it again;
// the account is connected again, the campaign's failed targets of that account are retried, and
// every post is published exactly once (the simulator's record).
func TestThousandPostCampaign(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true, SimLatency: 10 * time.Millisecond, Config: func(c *app.Config) {
		// The networks' published budgets, scaled so that a thousand posts fit in the test's time.
		c.SimLimitScale = 1e5
		c.Budgets = account.ScaleRules(account.DefaultRules, 1e5)
	}})
	x := h.Account(platforms.X)
	accounts := []*persistence.Account{x, h.Account(platforms.Bluesky), h.Account(platforms.LinkedIn), h.Account(platforms.Facebook), h.Account(platforms.Threads)}
	posts := make([]any, 1000)
	for i := range posts {
		posts[i] = apptest.CampaignPost(fmt.Sprintf("campaign post %d of 1000", i+1), accounts[i%len(accounts)])
	}
	start := time.Now()
	r := h.CreateCampaign(map[string]any{"name": "Product launch", "publish": "now", "posts": posts}, nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	submitted := time.Since(start)
	id := r.JSON(t)["campaign_id"].(string)
	require.Len(t, r.JSON(t)["posts"], 1000)

	// One stream, from the first step to done. When 30 X posts are out, X's consent is
	// withdrawn.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	xDone := 0
	revoked := false
	events, err := h.FollowCampaign(ctx, id, "", func(e apptest.SSEEvent) {
		if e.Type == "progress" && e.Data["platform"] == "twitter_x" && e.Data["phase"] == persistence.PhaseSuccess {
			if xDone++; xDone == 30 {
				require.True(t, h.App.Sim.Tokens(platforms.X).RevokeUser(x.NetworkUserID))
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
	reconnectX(h, x)
	rr := h.Do("POST", "/v1/campaigns/"+id+"/retry", map[string]any{"account_id": x.ID})
	require.Equal(t, 202, rr.Status, string(rr.Body))
	require.Equal(t, float64(failedX), rr.JSON(t)["targets"])
	again, err := h.FollowCampaign(ctx, id, lastID(events), nil)
	require.NoError(t, err)
	end := again[len(again)-1]
	require.Equal(t, "done", end.Type)
	require.Equal(t, 1000.0, end.Data["totals"].(map[string]any)["published"])
	require.Empty(t, end.Data["failed_targets"])

	texts := simTexts(h)
	require.Len(t, texts, 1000)
	for i := range posts {
		require.Equal(t, 1, texts[fmt.Sprintf("campaign post %d of 1000", i+1)], "post %d published exactly once", i+1)
	}
	require.Len(t, h.App.Sim.Publications(platforms.X), 200)
}

// A campaign through the dashboard's door: the session and CSRF token, links through /api, the
// stream on the session, and an Idempotency-Key that names the operation whichever the door. A
// campaign's body may be larger than other routes' (8 MiB), not more.
func TestCampaignThroughTheDashboardDoor(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	br := h.SignedIn()
	bsky := h.Account(platforms.Bluesky)
	body := map[string]any{"publish": "now", "posts": []any{apptest.CampaignPost("from the dashboard", bsky), apptest.CampaignPost("and another", bsky)}}
	r := br.Send("POST", "/api/campaigns", body, nil)
	require.Equal(t, 403, r.Status, "no CSRF token")
	hdr := br.CSRFHeader()
	hdr.Set("Idempotency-Key", "dash-1")
	r = br.Send("POST", "/api/campaigns", body, hdr)
	require.Equal(t, 202, r.Status, string(r.Body))
	id := r.JSON(t)["campaign_id"].(string)
	require.Equal(t, "/api/campaigns/"+id+"/stream", r.JSON(t)["stream_url"])
	require.Equal(t, "/api/campaigns/"+id, r.Header.Get("Location"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+r.JSON(t)["stream_url"].(string), nil)
	require.NoError(t, err)
	events, _ := apptest.ReadStream(br.Client, req, nil)
	require.Equal(t, "done", events[len(events)-1].Type, "%v", events)
	require.Equal(t, 2.0, events[len(events)-1].Data["totals"].(map[string]any)["published"])

	again := h.CreateCampaign(body, http.Header{"Idempotency-Key": {"dash-1"}})
	require.Equal(t, 202, again.Status, string(again.Body))
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, id, again.JSON(t)["campaign_id"])
	require.Equal(t, "/v1/campaigns/"+id+"/stream", again.JSON(t)["stream_url"])
	require.Equal(t, "/v1/campaigns/"+id, again.Header.Get("Location"))
	require.Equal(t, r.JSON(t)["posts"], again.JSON(t)["posts"])
	require.Len(t, h.App.Sim.Publications(platforms.Bluesky), 2)

	other, _ := h.NewUser("other@example.com", "pro")
	ob := h.NewBrowser()
	require.Equal(t, 200, ob.SignIn(other.Email, apptest.PasswordOf(other.Email)).Status)
	require.Equal(t, 404, ob.Send("GET", "/api/campaigns/"+id, nil, nil).Status)

	// 1,000 posts of 1,500 characters are about 1.6 MB: taken (here as a dry run). Over 8 MiB is
	// refused before it is read.
	long := strings.Repeat("x", 1500) // within LinkedIn's 3,000 characters
	posts := make([]any, 1000)
	for i := range posts {
		posts[i] = apptest.CampaignPost(long, h.Account(platforms.LinkedIn))
	}
	r = h.CreateCampaign(map[string]any{"publish": "draft", "dry_run": true, "posts": posts}, nil)
	require.Equal(t, 200, r.Status, apptest.Truncate(string(r.Body), 300))
	huge := strings.Repeat("y", 9000)
	for i := range posts {
		posts[i] = apptest.CampaignPost(huge, bsky)
	}
	r = h.CreateCampaign(map[string]any{"publish": "draft", "posts": posts}, nil)
	require.Equal(t, 413, r.Status)
	require.Contains(t, r.ErrorMessage(t), "larger than 8388608 bytes")
}

// A campaign whose commit fails is answered 503 and leaves nothing: no campaign, no post, no

// csvCampaign posts a CSV campaign with the query (name, publish, dry_run).
func csvCampaign(h *apptest.Herald, csv, query string) *apptest.Response {
	h.T.Helper()
	return h.DoKey(h.Key, "POST", "/v1/campaigns?"+query, []byte(csv), http.Header{"Content-Type": {"text/csv; charset=utf-8"}})
}

// A campaign's posts take targets as a single post does: each network publishes its own text and
// the created post keeps it (JSON and the CSV's targets column); a broken target is named with its
// network in details.rows, dry run included, and nothing is written.
func TestCampaignTargets(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky := h.Account(platforms.X), h.Account(platforms.Bluesky)

	row := apptest.CampaignPost("for everyone", x, bsky)
	row["targets"] = []any{
		map[string]any{"account_id": x.ID, "content": "short, for X", "options": map[string]any{"reply_settings": "following"}},
		map[string]any{"account_id": bsky.ID, "content": "a longer text, for Bluesky", "options": map[string]any{"langs": []string{"en"}}},
	}
	r := h.CreateCampaign(map[string]any{"publish": "now", "posts": []any{row}}, nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	id := r.JSON(t)["campaign_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, _ := h.FollowCampaign(ctx, id, "", nil)
	require.Equal(t, "done", events[len(events)-1].Type)
	byPlatform := map[string]string{}
	for _, rec := range h.App.Sim.Publications("") {
		byPlatform[rec.Platform] = rec.Text
	}
	require.Equal(t, "short, for X", byPlatform[string(platforms.X)])
	require.Equal(t, "a longer text, for Bluesky", byPlatform[string(platforms.Bluesky)])
	require.NotContains(t, simTexts(h), "for everyone", "no network got the post's own text")

	// CSV: the targets column holds the same JSON; the draft keeps each target's own content and
	// options.
	cell, err := json.Marshal([]any{map[string]any{"account_id": bsky.ID, "content": "bluesky's own", "options": map[string]any{"langs": []string{"fr"}}}})
	require.NoError(t, err)
	csv := "content,platforms,targets\nshared," + x.ID + " " + bsky.ID + ",\"" + strings.ReplaceAll(string(cell), `"`, `""`) + "\"\n"
	r = csvCampaign(h, csv, "publish=draft")
	require.Equal(t, 202, r.Status, string(r.Body))
	p := h.Do("GET", "/v1/posts/"+r.JSON(t)["posts"].([]any)[0].(map[string]any)["post_id"].(string), nil).JSON(t)
	require.Equal(t, "shared", p["content"])
	got := map[string]map[string]any{}
	for _, pl := range p["platforms"].([]any) {
		pl := pl.(map[string]any)
		got[pl["platform"].(string)] = pl
	}
	require.Equal(t, "bluesky's own", got["bluesky"]["content"])
	require.Equal(t, map[string]any{"langs": []any{"fr"}}, got["bluesky"]["options"])
	require.NotEqual(t, "bluesky's own", got["twitter_x"]["content"])

	// A broken target: its network and field are named, in a dry run as in the real request, and
	// nothing is written.
	posts, published := h.CountPosts(), len(h.App.Sim.Publications(""))
	bad := apptest.CampaignPost("fine", x, bsky)
	bad["targets"] = []any{
		map[string]any{"account_id": x.ID, "content": strings.Repeat("x", 300)},
		map[string]any{"account_id": bsky.ID, "options": map[string]any{"reply_settings": "everyone"}},
	}
	for _, dry := range []bool{true, false} {
		rows := apptest.RowErrors(t, h.CreateCampaign(map[string]any{"publish": "now", "dry_run": dry, "posts": []any{apptest.CampaignPost("ok", x), bad}}, nil))
		require.Len(t, rows, 1, "dry run %v", dry)
		require.Len(t, rows[2], 2, "dry run %v: %v", dry, rows[2])
		require.True(t, strings.HasPrefix(rows[2][0], "twitter_x: "), rows[2][0])
		require.Contains(t, rows[2][0], "300")
		require.True(t, strings.HasPrefix(rows[2][1], "bluesky: options.reply_settings"), rows[2][1])
	}
	rows := apptest.RowErrors(t, csvCampaign(h, "content,platforms,targets\nhello,"+bsky.ID+",\"[{\"\"account_id\"\": 1}]\"\nhi,"+bsky.ID+",not json\n", "publish=draft"))
	require.Len(t, rows, 2)
	require.Contains(t, rows[1][0], "targets.0.account_id")
	require.Contains(t, rows[2][0], "targets: Malformed JSON")
	require.Equal(t, posts, h.CountPosts())
	require.Len(t, h.App.Sim.Publications(""), published)
}

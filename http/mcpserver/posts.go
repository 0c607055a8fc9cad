package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldhq/herald/http/api"
)

// maxStatusWait is the longest get_publish_status follows a job.
const maxStatusWait = 30 * time.Second

// statusPoll is how often get_publish_status reads the job while it waits.
const statusPoll = 250 * time.Millisecond

// postStatuses are a post's statuses (list_posts' status filter).
var postStatuses = []string{"draft", "scheduled", "publishing", "published", "partial", "failed"}

// postParams are the /v1 post fields the tools name otherwise.
var postParams = []string{"platforms", "accounts", "media", "media_ids", "scheduledAt", "scheduled_at"}

// targetsNote is what the post tools say of targets.
const targetsNote = " targets gives an account its own text, media or network options (a shorter text for X, a TikTok privacy level, a YouTube title); read get_account_capabilities for what an account takes."

func (t *Tools) addPostTools() {
	add(t, read("list_posts", "List posts").params("page", "cursor").enum("status", postStatuses...).enum("platform", platformNames()...),
		"The user's posts, newest first: id, status, the start of the text, when scheduled. Pages of limit posts (default 20, at most 100): pass next_cursor of an answer as cursor for the next page.",
		t.listPosts)
	add(t, read("get_post", "Get a post"),
		"One post: its text, status (draft, scheduled, publishing, published, partial when some targets failed, failed when all did) and each target account's status, link and error.",
		t.getPost)
	add(t, write("create_draft", "Create a draft").params(postParams...),
		"Creates a draft post (not published). Answers the post with its post_id. A draft is not held to the networks' rules: validate_post tells what it still lacks."+targetsNote,
		t.createDraft)
	add(t, write("update_draft", "Update a draft").params(postParams...),
		"Changes a draft's text, accounts, media or targets; only the parameters given change (targets given replace every target's own text, media and options)."+targetsNote,
		t.updateDraft)
	add(t, write("delete_draft", "Delete a draft").destructive().idempotent(),
		"Deletes a draft or a scheduled post (published posts stay).",
		t.deleteDraft)
	add(t, write("publish_post", "Publish a post").params(postParams...),
		"Publishes now: a draft by post_id, or a new post from content and accounts. Answers post_id and tracking_id at once, before the networks answer: follow the tracking_id with get_publish_status. "+
			"Every target is checked first by its network's rules, as validate_post checks it: a post any target refuses is not published, and the error lists each target's errors."+targetsNote,
		t.publishPost)
	add(t, write("schedule_post", "Schedule a post").params(postParams...),
		"Schedules a post for later: a draft by post_id, or a new post from content and accounts. Every target is checked by its network's rules first, as validate_post checks it."+targetsNote,
		t.schedulePost)
	add(t, write("add_to_queue", "Add a draft to the queue"),
		"Schedules a draft in the earliest free slot of its workspace's posting queue (the weekly slots set with PUT /v1/queue): the first slot after now at which none of its accounts has another post scheduled. "+
			"The draft is checked by its networks' rules first, as schedule_post checks it. Answers the post with its scheduled_at.",
		t.addToQueue)
	add(t, read("validate_post", "Validate a post").params(postParams...),
		"Checks a post as publish_post (or schedule_post, with scheduled_at) would, by every rule of every target's network, and publishes nothing: "+
			"valid, the post's own errors, and for each target its errors, warnings and a preview of what its network would receive (text and its length as the network counts it, media, options). "+
			"Error fields use the API's names (platforms for accounts, media for media_ids)."+targetsNote,
		t.validatePost)
	add(t, read("get_publish_status", "Get publishing status"),
		"A publish job's status: publishing while targets are in progress, then published (every target), partial (some failed) or failed (all failed), with each target's link or error. With wait_seconds, follows the job until it ends or the wait does.",
		t.getPublishStatus)
}

// Inputs. Fields without omitempty are required.

type listPostsIn struct {
	Status   string `json:"status,omitempty" jsonschema:"only posts in this status"`
	Platform string `json:"platform,omitempty" jsonschema:"only posts targeting this platform"`
	Search   string `json:"search,omitempty" jsonschema:"only posts whose content contains this text"`
	Cursor   int    `json:"cursor,omitempty" jsonschema:"next_cursor of the previous answer (omit for the first page)"`
	Limit    int    `json:"limit,omitempty" jsonschema:"posts per page (default 20, at most 100)"`
}

type postIDIn struct {
	PostID string `json:"post_id" jsonschema:"the post's id"`
}

// targetIn is one entry of a post's targets: what one of its accounts receives instead of the
// post's own text and media, and the options of its network (the /v1 TargetInput).
type targetIn struct {
	AccountID    string         `json:"account_id" jsonschema:"one of the post's accounts: its account_id, or its platform name when the user has exactly one account there"`
	Content      *string        `json:"content,omitempty" jsonschema:"this account's own text (omit: the post's content)"`
	MediaIDs     []string       `json:"media_ids,omitempty" jsonschema:"this account's own media ids (omit: the post's media; an empty list: none)"`
	Options      map[string]any `json:"options,omitempty" jsonschema:"the network's options, laid over the account's default options. Each network has its own schema (the OpenAPI document's XOptions, BlueskyOptions, LinkedInOptions, InstagramOptions, ThreadsOptions, FacebookOptions, YouTubeOptions, PinterestOptions, TikTokOptions): call get_account_capabilities for the account's options_schema, its required_options and its live choices (TikTok privacy levels, Pinterest boards, YouTube categories)"`
	Thread       []threadPartIn `json:"thread,omitempty" jsonschema:"X, Bluesky and Threads only: the parts published after the post as a chain of the account's own replies, in order (at most 24), each held to the network's rules for a post"`
	FirstComment *commentIn     `json:"first_comment,omitempty" jsonschema:"LinkedIn, Instagram, Facebook, YouTube, X, Bluesky and Threads: the account's comment on its own post, published once the post exists (a failed comment does not undo the post)"`
}

// threadPartIn is one part of a thread after the post.
type threadPartIn struct {
	Content  string   `json:"content" jsonschema:"the part's text"`
	MediaIDs []string `json:"media_ids,omitempty" jsonschema:"the part's media ids"`
}

// commentIn is a first comment.
type commentIn struct {
	Content string `json:"content" jsonschema:"the comment's text"`
}

type draftIn struct {
	Content  string     `json:"content" jsonschema:"the text of the post; may be empty only when media are attached"`
	Accounts []string   `json:"accounts" jsonschema:"target accounts: account ids, or a platform name (x, bluesky, ...) when the user has exactly one account there"`
	MediaIDs []string   `json:"media_ids,omitempty" jsonschema:"media ids from upload_media"`
	Targets  []targetIn `json:"targets,omitempty" jsonschema:"per-account overrides, at most one entry per account of the post: an account's own text, media and network options; accounts without an entry get the post's content and media and their default options"`
}

type updateDraftIn struct {
	PostID   string     `json:"post_id" jsonschema:"the draft's id"`
	Content  *string    `json:"content,omitempty" jsonschema:"the new text (omit to keep it)"`
	Accounts []string   `json:"accounts,omitempty" jsonschema:"the new target accounts: ids or platform names (omit to keep them)"`
	MediaIDs []string   `json:"media_ids,omitempty" jsonschema:"the new media ids (omit to keep them; an empty list removes them)"`
	Targets  []targetIn `json:"targets,omitempty" jsonschema:"the accounts' own text, media and network options (omit to keep them; given, they replace every account's own: an account without an entry gets the post's content and media)"`
}

type publishIn struct {
	PostID         string     `json:"post_id,omitempty" jsonschema:"publish this existing draft; or give content and accounts to publish a new post"`
	Content        string     `json:"content,omitempty" jsonschema:"the text of a new post"`
	Accounts       []string   `json:"accounts,omitempty" jsonschema:"a new post's target accounts: ids, or a platform name when the user has exactly one account there"`
	MediaIDs       []string   `json:"media_ids,omitempty" jsonschema:"a new post's media ids from upload_media"`
	Targets        []targetIn `json:"targets,omitempty" jsonschema:"a new post's per-account overrides, at most one entry per account: an account's own text, media and network options; accounts without an entry get the post's content and media and their default options"`
	IdempotencyKey string     `json:"idempotency_key,omitempty" jsonschema:"a unique key: a retry with the same key answers the first call's result instead of publishing twice"`
}

type scheduleIn struct {
	PostID      string     `json:"post_id,omitempty" jsonschema:"schedule this existing draft; or give content and accounts to schedule a new post"`
	Content     string     `json:"content,omitempty" jsonschema:"the text of a new post"`
	Accounts    []string   `json:"accounts,omitempty" jsonschema:"a new post's target accounts: ids, or a platform name when the user has exactly one account there"`
	MediaIDs    []string   `json:"media_ids,omitempty" jsonschema:"a new post's media ids from upload_media"`
	Targets     []targetIn `json:"targets,omitempty" jsonschema:"a new post's per-account overrides, at most one entry per account: an account's own text, media and network options; accounts without an entry get the post's content and media and their default options"`
	ScheduledAt string     `json:"scheduled_at" jsonschema:"when to publish: ISO 8601 with Z or an offset (2026-12-01T09:00:00+01:00); or a naive date-time (2026-12-01T09:00) with timezone, or with the suffix +default for the user's time zone. Future, at most one year ahead."`
	Timezone    string     `json:"timezone,omitempty" jsonschema:"an IANA zone (Europe/Paris) or default (the user's zone) for a naive scheduled_at; ignored when it has an offset"`
}

type validateIn struct {
	Content     string     `json:"content" jsonschema:"the text of the post; may be empty only when media are attached"`
	Accounts    []string   `json:"accounts" jsonschema:"target accounts: account ids, or a platform name when the user has exactly one account there"`
	MediaIDs    []string   `json:"media_ids,omitempty" jsonschema:"media ids from upload_media"`
	Targets     []targetIn `json:"targets,omitempty" jsonschema:"per-account overrides, at most one entry per account of the post: an account's own text, media and network options; accounts without an entry get the post's content and media and their default options"`
	ScheduledAt string     `json:"scheduled_at,omitempty" jsonschema:"check the time too, as schedule_post would (its forms)"`
	Timezone    string     `json:"timezone,omitempty" jsonschema:"an IANA zone or default, for a naive scheduled_at"`
}

type statusIn struct {
	TrackingID  string `json:"tracking_id" jsonschema:"the tracking_id publish_post answered"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"wait up to this many seconds (at most 30) for the job to end before answering; 0 answers at once"`
}

// Outputs.

// Target is where a post stands on one account.
type Target struct {
	AccountID string `json:"account_id"`
	Platform  string `json:"platform"`
	// Status is pending (draft or scheduled), publishing, published or failed.
	Status        string  `json:"status"`
	Link          *string `json:"link,omitempty"`
	PublicationID *string `json:"publication_id,omitempty"`
	Error         *string `json:"error,omitempty"`
	// Content, MediaIDs and Options are what the account's network receives (its own, else the
	// post's; its options over the account's defaults): in get_post and the draft tools' answers.
	Content  *string         `json:"content,omitempty"`
	MediaIDs []string        `json:"media_ids,omitempty"`
	Options  json.RawMessage `json:"options,omitempty"`
	// Thread and FirstComment are the target's thread parts after the post and its first
	// comment, each with where it went (get_post).
	Thread       []api.ThreadPartDetail  `json:"thread,omitempty"`
	FirstComment *api.FirstCommentDetail `json:"first_comment,omitempty"`
}

// Post is a post as the tools answer it.
type Post struct {
	PostID        string     `json:"post_id"`
	Status        string     `json:"status"`
	Content       string     `json:"content"`
	ScheduledAt   *time.Time `json:"scheduled_at,omitempty"`
	MediaIDs      []string   `json:"media_ids,omitempty"`
	TrackingID    *string    `json:"tracking_id,omitempty"`
	FailureReason *string    `json:"failure_reason,omitempty"`
	Targets       []Target   `json:"targets"`
}

// PostSummary is a post in a list.
type PostSummary struct {
	PostID      string     `json:"post_id"`
	Status      string     `json:"status"`
	Text        string     `json:"text" jsonschema:"the start of the post's text (get_post has all of it)"`
	ScheduledAt *time.Time `json:"scheduled_at,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
}

// PostList is a page of posts.
type PostList struct {
	Posts      []PostSummary `json:"posts"`
	Total      int           `json:"total"`
	NextCursor *int          `json:"next_cursor,omitempty" jsonschema:"pass as cursor for the next page; absent on the last page"`
}

// Deleted answers a deletion.
type Deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// PublishAccepted answers publish_post.
type PublishAccepted struct {
	PostID string `json:"post_id"`
	// TrackingID is the job's (absent for a post held for approval: Status pending_approval).
	TrackingID string `json:"tracking_id,omitempty"`
	Status     string `json:"status"`
	Next       string `json:"next"`
}

// PublishStatus answers get_publish_status.
type PublishStatus struct {
	TrackingID string `json:"tracking_id"`
	PostID     string `json:"post_id"`
	// Status is publishing, published, partial or failed.
	Status        string   `json:"status"`
	Total         int      `json:"total"`
	Published     int      `json:"published"`
	Failed        int      `json:"failed"`
	Targets       []Target `json:"targets"`
	FailureReason *string  `json:"failure_reason,omitempty"`
}

// postOut is a post as /v1 answers it (GET /v1/posts/:id, http/api's PostDetail) in the tools'
// words.
func postOut(p *api.PostDetail) Post {
	o := Post{PostID: p.ID, Status: p.Status, Content: p.Content, ScheduledAt: p.ScheduledAt, MediaIDs: p.MediaIDs,
		TrackingID: p.TrackingID, FailureReason: p.FailureReason, Targets: make([]Target, 0, len(p.Platforms))}
	for _, pl := range p.Platforms {
		st := pl.Status
		if st == "draft" || st == "scheduled" || st == "pending" {
			st = "pending"
		}
		o.Targets = append(o.Targets, Target{AccountID: pl.ConnectedAccountID, Platform: pl.Platform, Status: st, Link: pl.PlatformPostURL,
			PublicationID: pl.PublicationID, Error: pl.Error, Content: &pl.Content, MediaIDs: pl.Media, Options: pl.Options,
			Thread: pl.Thread, FirstComment: pl.FirstComment})
	}
	return o
}

// summary is the start of a text: its first 200 characters.
func summary(s string) string {
	r := []rune(s)
	if len(r) <= 200 {
		return s
	}
	return string(r[:200]) + "…"
}

func (t *Tools) listPosts(ctx context.Context, in listPostsIn) (PostList, error) {
	p, err := platform("platform", in.Platform)
	if err != nil {
		return PostList{}, err
	}
	page := max(in.Cursor, 1)
	var v1 struct {
		Data       []api.PostListItem `json:"data"`
		Pagination struct {
			Page       int `json:"page"`
			Total      int `json:"total"`
			TotalPages int `json:"total_pages"`
		} `json:"pagination"`
	}
	if _, err := t.call(ctx, get("/v1/posts", query("status", in.Status, "platform", p, "search", in.Search, "page", itoa(page), "limit", itoa(in.Limit))), &v1); err != nil {
		return PostList{}, err
	}
	out := PostList{Posts: make([]PostSummary, 0, len(v1.Data)), Total: v1.Pagination.Total}
	for _, d := range v1.Data {
		out.Posts = append(out.Posts, PostSummary{PostID: d.ID, Status: d.Status, Text: summary(d.Content), ScheduledAt: d.ScheduledAt, CreatedAt: d.CreatedAt})
	}
	if page < v1.Pagination.TotalPages {
		out.NextCursor = ptr(page + 1)
	}
	return out, nil
}

func (t *Tools) post(ctx context.Context, r Request) (Post, error) {
	var p api.PostDetail
	if _, err := t.call(ctx, r, &p); err != nil {
		return Post{}, err
	}
	return postOut(&p), nil
}

func (t *Tools) getPost(ctx context.Context, in postIDIn) (Post, error) {
	return t.post(ctx, get("/v1/posts/"+esc(in.PostID), nil))
}

func (t *Tools) createDraft(ctx context.Context, in draftIn) (Post, error) {
	body, err := t.postBody(ctx, in.Content, in.Accounts, in.MediaIDs, in.Targets)
	if err != nil {
		return Post{}, err
	}
	// The creation answers only the id: the post is read back, so that create_draft answers what
	// get_post does.
	var created struct {
		ID string `json:"id"`
	}
	if _, err := t.call(ctx, Request{Method: http.MethodPost, Path: "/v1/posts", Body: body}, &created); err != nil {
		return Post{}, err
	}
	return t.post(ctx, get("/v1/posts/"+esc(created.ID), nil))
}

func (t *Tools) updateDraft(ctx context.Context, in updateDraftIn) (Post, error) {
	body := map[string]any{}
	if in.Content != nil {
		body["content"] = *in.Content
	}
	if in.Accounts != nil {
		ids, err := t.resolveAccounts(ctx, "accounts", in.Accounts)
		if err != nil {
			return Post{}, err
		}
		body["platforms"] = ids
	}
	if in.MediaIDs != nil {
		body["media"] = in.MediaIDs
	}
	if in.Targets != nil {
		ts, err := t.targetsBody(ctx, in.Targets)
		if err != nil {
			return Post{}, err
		}
		body["targets"] = ts
	}
	return t.post(ctx, Request{Method: http.MethodPatch, Path: "/v1/posts/" + esc(in.PostID), Body: body})
}

func (t *Tools) deleteDraft(ctx context.Context, in postIDIn) (Deleted, error) {
	if _, err := t.call(ctx, Request{Method: http.MethodDelete, Path: "/v1/posts/" + esc(in.PostID)}, nil); err != nil {
		return Deleted{}, err
	}
	return Deleted{ID: in.PostID, Deleted: true}, nil
}

func (t *Tools) publishPost(ctx context.Context, in publishIn) (PublishAccepted, error) {
	r := Request{Method: http.MethodPost}
	if in.IdempotencyKey != "" {
		r.Header = http.Header{"Idempotency-Key": {in.IdempotencyKey}}
	}
	if in.PostID != "" {
		if in.Content != "" || len(in.Accounts) > 0 || len(in.MediaIDs) > 0 || len(in.Targets) > 0 {
			return PublishAccepted{}, refuse("give either post_id or content and accounts, not both (a draft's targets are changed with update_draft)")
		}
		r.Path = "/v1/posts/" + esc(in.PostID) + "/publish"
	} else {
		body, err := t.postBody(ctx, in.Content, in.Accounts, in.MediaIDs, in.Targets)
		if err != nil {
			return PublishAccepted{}, err
		}
		r.Path, r.Body = "/v1/posts/publish", body
	}
	// The answer's stream_url is a /v1 route the MCP token does not open: the tools point at
	// get_publish_status instead.
	var v1 struct {
		PostID     string `json:"post_id"`
		TrackingID string `json:"tracking_id"`
		Status     string `json:"status"`
	}
	if _, err := t.call(ctx, r, &v1); err != nil {
		return PublishAccepted{}, err
	}
	if v1.PostID == "" {
		v1.PostID = in.PostID
	}
	if v1.Status == "pending_approval" {
		// The workspace requires approval and a connector never approves: the post waits for a
		// person (docs/workspaces.md, Approvals).
		return PublishAccepted{PostID: v1.PostID, Status: v1.Status,
			Next: "the workspace requires approval: a person approves the post in Herald's Approvals page or through an approval link; get_post shows when it is published"}, nil
	}
	return PublishAccepted{PostID: v1.PostID, TrackingID: v1.TrackingID, Status: "publishing",
		Next: "call get_publish_status with this tracking_id (wait_seconds up to 30) for each target's result and link"}, nil
}

func (t *Tools) schedulePost(ctx context.Context, in scheduleIn) (Post, error) {
	sched := map[string]any{"scheduledAt": in.ScheduledAt}
	if in.Timezone != "" {
		sched["timezone"] = in.Timezone
	}
	if in.PostID != "" {
		if in.Content != "" || len(in.Accounts) > 0 || len(in.MediaIDs) > 0 || len(in.Targets) > 0 {
			return Post{}, refuse("give either post_id or content and accounts, not both (a draft's targets are changed with update_draft)")
		}
		return t.post(ctx, Request{Method: http.MethodPost, Path: "/v1/posts/" + esc(in.PostID) + "/schedule", Body: sched})
	}
	body, err := t.postBody(ctx, in.Content, in.Accounts, in.MediaIDs, in.Targets)
	if err != nil {
		return Post{}, err
	}
	for k, v := range sched {
		body[k] = v
	}
	return t.post(ctx, Request{Method: http.MethodPost, Path: "/v1/posts/schedule", Body: body})
}

func (t *Tools) addToQueue(ctx context.Context, in postIDIn) (Post, error) {
	return t.post(ctx, Request{Method: http.MethodPost, Path: "/v1/posts/" + esc(in.PostID) + "/queue"})
}

// postBody is a new post's body: PostInput with the accounts resolved to ids.
func (t *Tools) postBody(ctx context.Context, content string, accounts, media []string, targets []targetIn) (map[string]any, error) {
	ids, err := t.resolveAccounts(ctx, "accounts", accounts)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"content": content, "platforms": ids}
	if media != nil {
		body["media"] = media
	}
	if targets != nil {
		ts, err := t.targetsBody(ctx, targets)
		if err != nil {
			return nil, err
		}
		body["targets"] = ts
	}
	return body, nil
}

// targetsBody is targets as /v1 takes them (TargetInput), each account resolved to its id.
func (t *Tools) targetsBody(ctx context.Context, targets []targetIn) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(targets))
	for i, tg := range targets {
		id, err := t.resolveAccount(ctx, fmt.Sprintf("targets.%d.account_id", i), tg.AccountID)
		if err != nil {
			return nil, err
		}
		if id == "" {
			return nil, refuse("targets.%d.account_id: required", i)
		}
		e := map[string]any{"account_id": id}
		if tg.Content != nil {
			e["content"] = *tg.Content
		}
		if tg.MediaIDs != nil {
			e["media"] = tg.MediaIDs
		}
		if tg.Options != nil {
			e["options"] = tg.Options
		}
		if tg.Thread != nil {
			parts := make([]map[string]any, len(tg.Thread))
			for j, p := range tg.Thread {
				parts[j] = map[string]any{"content": p.Content}
				if len(p.MediaIDs) > 0 {
					parts[j]["media"] = p.MediaIDs
				}
			}
			e["thread"] = parts
		}
		if tg.FirstComment != nil {
			e["first_comment"] = map[string]any{"content": tg.FirstComment.Content}
		}
		out = append(out, e)
	}
	return out, nil
}

// validatePost relays POST /v1/posts/validate: its answer is the tool's.
func (t *Tools) validatePost(ctx context.Context, in validateIn) (api.Validation, error) {
	body, err := t.postBody(ctx, in.Content, in.Accounts, in.MediaIDs, in.Targets)
	if err != nil {
		return api.Validation{}, err
	}
	if in.ScheduledAt != "" {
		body["scheduledAt"] = in.ScheduledAt
	}
	if in.Timezone != "" {
		body["timezone"] = in.Timezone
	}
	var out api.Validation
	if _, err := t.call(ctx, Request{Method: http.MethodPost, Path: "/v1/posts/validate", Body: body}, &out); err != nil {
		return api.Validation{}, err
	}
	return out, nil
}

// jobDone: the job (GET /v1/jobs/:trackingId, http/api's Job) is completed or failed.
func jobDone(j *api.Job) bool { return j.Status == "completed" || j.Status == "failed" }

// status is the job's status in the posts' words: a job Herald calls completed with a failed
// target is partial, so that no one reads a failure as success.
func jobStatus(j *api.Job) string {
	switch {
	case !jobDone(j):
		return "publishing"
	case j.Failed == 0:
		return "published"
	case j.Failed >= j.Total:
		return "failed"
	}
	return "partial"
}

func (t *Tools) getPublishStatus(ctx context.Context, in statusIn) (PublishStatus, error) {
	wait := min(time.Duration(in.WaitSeconds)*time.Second, maxStatusWait)
	wctx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	r := get("/v1/jobs/"+esc(in.TrackingID), nil)
	var job *api.Job
	for {
		var j api.Job
		_, err := t.call(wctx, r, &j)
		if err != nil {
			if job != nil && wctx.Err() != nil {
				break
			}
			return PublishStatus{}, err
		}
		job = &j
		if wait <= 0 || jobDone(&j) {
			break
		}
		select {
		case <-wctx.Done():
		case <-time.After(statusPoll):
			continue
		}
		break
	}
	out := PublishStatus{TrackingID: job.TrackingID, PostID: job.PostID, Status: jobStatus(job), Total: job.Total,
		Published: job.Completed, Failed: job.Failed, FailureReason: job.FailureReason, Targets: make([]Target, 0, len(job.PlatformStatuses))}
	for _, ps := range job.PlatformStatuses {
		tg := Target{AccountID: ps.ConnectedAccountID, Platform: ps.Platform, Status: "publishing"}
		switch ps.Phase {
		case "platform_success":
			tg.Status = "published"
		case "platform_failed":
			tg.Status = "failed"
			tg.Error = ptr(ps.Message)
		}
		out.Targets = append(out.Targets, tg)
	}
	if jobDone(job) {
		// The links are the post's: read once the job has ended.
		var p api.PostDetail
		if _, err := t.call(ctx, get("/v1/posts/"+esc(job.PostID), nil), &p); err == nil {
			for i := range out.Targets {
				for _, pl := range p.Platforms {
					if pl.ConnectedAccountID == out.Targets[i].AccountID {
						out.Targets[i].Link, out.Targets[i].PublicationID = pl.PlatformPostURL, pl.PublicationID
					}
				}
			}
		}
	}
	return out, nil
}

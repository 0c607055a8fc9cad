package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// The limits of a post (actors/post, validate.go, where they are checked).
const (
	MaxContentLength = post.MaxContentLength
	MaxTargets       = post.MaxTargets
	MaxMedia         = post.MaxMedia
)

// PostListItem is a post in a list.
type PostListItem struct {
	ID          string     `json:"id"`
	Content     string     `json:"content"`
	Status      string     `json:"status"`
	ScheduledAt *time.Time `json:"scheduled_at"`
	// ScheduledZone is the IANA zone the schedule was given in (null when none was).
	ScheduledZone *string   `json:"scheduled_zone"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	MediaIDs      []string  `json:"media_ids"`
}

// PostPlatform is where a post stands on one connected account, and where it went once
// published.
type PostPlatform struct {
	ConnectedAccountID string  `json:"connected_account_id"`
	Platform           string  `json:"platform"`
	Status             string  `json:"status"`
	Error              *string `json:"error"`
	// PublicationID is the publication's id, the one the inbox and analytics use (null until
	// published).
	PublicationID *string `json:"publication_id"`
	// PlatformPostID is the network's id of the post; PlatformPostURL its link on the network.
	PlatformPostID  *string    `json:"platform_post_id"`
	PlatformPostURL *string    `json:"platform_post_url"`
	PublishedAt     *time.Time `json:"published_at"`
	// Content and Media are what the target's network receives: the target's own, else the
	// post's. Options are its network options as they stand now: the target's own over the
	// account's defaults ({} when neither gives any).
	Content string          `json:"content"`
	Media   []string        `json:"media"`
	Options json.RawMessage `json:"options"`
	// Thread are the thread's parts after the post; FirstComment the first comment with its
	// outcome (both absent when the target has none).
	Thread       []ThreadPartDetail  `json:"thread,omitempty"`
	FirstComment *FirstCommentDetail `json:"first_comment,omitempty"`
}

// ThreadPartDetail is one part of a thread after the post.
type ThreadPartDetail struct {
	Content         string   `json:"content"`
	Media           []string `json:"media"`
	PlatformPostID  *string  `json:"platform_post_id"`
	PlatformPostURL *string  `json:"platform_post_url"`
}

// FirstCommentDetail is a target's first comment and its outcome.
type FirstCommentDetail struct {
	Content           string  `json:"content"`
	Status            string  `json:"status"`
	PlatformCommentID *string `json:"platform_comment_id"`
	URL               *string `json:"url"`
	Error             *string `json:"error"`
}

// stepsDetail renders a target's thread and first comment.
func stepsDetail(t *persistence.Target, pp *PostPlatform) {
	orNil := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	for _, part := range t.Thread {
		media := part.MediaIDs
		if media == nil {
			media = []string{}
		}
		pp.Thread = append(pp.Thread, ThreadPartDetail{Content: part.Content, Media: media, PlatformPostID: orNil(part.PublicationID), PlatformPostURL: orNil(part.URL)})
	}
	if fc := t.FirstComment; fc != nil {
		status := fc.Status
		if status == "" {
			status = persistence.CommentPending
		}
		pp.FirstComment = &FirstCommentDetail{Content: fc.Content, Status: status, PlatformCommentID: orNil(fc.PublicationID), URL: orNil(fc.URL), Error: orNil(fc.Error)}
	}
}

// PostDetail is GET /v1/posts/:id.
type PostDetail struct {
	PostListItem
	Platforms []PostPlatform `json:"platforms"`
	// TrackingID is the post's latest publish job (null before its first publish).
	TrackingID *string `json:"tracking_id"`
	// FailureReason sums up in one line why a failed or partial post failed (null otherwise).
	FailureReason *string `json:"failure_reason"`
	// Approval is the request a pending_approval post waits to carry out (absent otherwise);
	// RejectionReason why its last request was rejected, until it is submitted again.
	Approval        *ApprovalDetail `json:"approval,omitempty"`
	RejectionReason *string         `json:"rejection_reason,omitempty"`
}

func listItem(p *persistence.Post) PostListItem {
	media := p.MediaIDs
	if media == nil {
		media = []string{}
	}
	var zone *string
	if p.ScheduledZone != "" && p.ScheduledAt != nil {
		zone = &p.ScheduledZone
	}
	return PostListItem{ID: p.ID, Content: p.Content, Status: p.Status, ScheduledAt: p.ScheduledAt, ScheduledZone: zone,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, MediaIDs: media}
}

// detail renders a post. The link of a target published before Herald kept links on the post
// is read from the job that published it.
func (h *handlers) detail(p *persistence.Post) PostDetail {
	out := PostDetail{PostListItem: listItem(p), Platforms: make([]PostPlatform, 0, len(p.Targets)), TrackingID: p.TrackingID,
		Approval: approvalDetail(p, h.Now()), RejectionReason: p.RejectionReason}
	defaults := h.defaultOptions(p)
	var failed []failure
	for i, t := range p.Targets {
		pp := PostPlatform{ConnectedAccountID: t.AccountID, Platform: t.Platform, Status: t.Status, Error: t.Error,
			Content: t.EffectiveContent(p), Media: t.EffectiveMedia(p), Options: json.RawMessage("{}")}
		if pp.Media == nil {
			pp.Media = []string{}
		}
		if opts, err := platforms.MergeOptions(defaults[t.AccountID], t.Options); err == nil && len(opts) > 0 {
			pp.Options = opts
		}
		switch {
		case t.Status == persistence.TargetPublished && t.PublicationID != "":
			id, netID := persistence.PublicationUUID(p.ID, i), t.PublicationID
			pp.PublicationID, pp.PlatformPostID = &id, &netID
			link := t.URL
			if link == "" {
				link = h.legacyLink(p.ID, i)
			}
			if link != "" {
				pp.PlatformPostURL = &link
			}
			pp.PublishedAt = t.PublishedAt
			if pp.PublishedAt == nil {
				at := p.UpdatedAt
				pp.PublishedAt = &at
			}
		case t.Status == persistence.TargetFailed && t.Error != nil:
			failed = append(failed, failure{t.Platform, *t.Error})
			if t.PublicationID != "" {
				// A thread whose later part failed: its post is on the network.
				netID := t.PublicationID
				pp.PlatformPostID = &netID
				if t.URL != "" {
					link := t.URL
					pp.PlatformPostURL = &link
				}
			}
		}
		stepsDetail(&t, &pp)
		out.Platforms = append(out.Platforms, pp)
	}
	if p.Status == persistence.PostFailed || p.Status == persistence.PostPartial {
		out.FailureReason = failureReason(failed, len(p.Targets))
	}
	return out
}

// defaultOptions are the default options of a post's accounts that have any, by account id.
func (h *handlers) defaultOptions(p *persistence.Post) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	_ = h.Store.View(func(tx *persistence.Tx) error {
		for _, t := range p.Targets {
			if a, err := tx.Account(t.AccountID); err == nil && len(a.DefaultOptions) > 0 {
				out[t.AccountID] = a.DefaultOptions
			}
		}
		return nil
	})
	return out
}

// legacyLink finds the link of a post's target in the job that published it.
func (h *handlers) legacyLink(postID string, target int) string {
	link := ""
	_ = h.Store.View(func(tx *persistence.Tx) error {
		jobs, err := tx.JobsOfPost(postID)
		if err != nil {
			return err
		}
		for k := len(jobs) - 1; k >= 0 && link == ""; k-- {
			for _, jt := range jobs[k].Targets {
				if jt.Target == target && jt.Phase == persistence.PhaseSuccess {
					link = jt.URL
				}
			}
		}
		return nil
	})
	return link
}

// failure is one failed target: its platform and the reason.
type failure struct{ platform, message string }

// maxFailureReason caps failure_reason, in bytes.
const maxFailureReason = 500

// failureReason sums up the failed targets in one line: "twitter_x: reason" when every target
// failed alike, else "2 of 3 platforms failed: twitter_x: reason; bluesky: reason". Only the
// first line of each reason is kept; nil when nothing failed.
func failureReason(failed []failure, total int) *string {
	if len(failed) == 0 {
		return nil
	}
	parts := make([]string, len(failed))
	for i, f := range failed {
		msg, _, _ := strings.Cut(f.message, "\n")
		parts[i] = f.platform + ": " + strings.TrimSpace(msg)
	}
	s := strings.Join(parts, "; ")
	if len(failed) > 1 || total > 1 {
		s = strconv.Itoa(len(failed)) + " of " + strconv.Itoa(total) + " platforms failed: " + s
	}
	if len(s) > maxFailureReason {
		cut := maxFailureReason
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return &s
}

// postInput is the validated body of create and update.
type postInput struct {
	content  *string
	targets  []persistence.Target
	mediaIDs []string
}

// readPostInput validates content, platforms, media and targets. On create every field rule
// applies; on update only the fields present are read, and the post actor holds the post as
// changed to the rules of a create (post.Validate).
func (h *handlers) readPostInput(c *echo.Context, create bool, stored *persistence.Post) (*postInput, error) {
	raw, err := readBody(c)
	if err != nil {
		return nil, err
	}
	in, res, err := h.postInput(c, raw, create, false, stored)
	if err != nil {
		return nil, err
	}
	return in, res.refusal()
}

// postInput validates a create or update body already read; publish holds a create to its
// networks' rules too (a publish or a schedule rather than a draft). stored is the post an update
// changes (nil for a create, or when there is none: the actor answers 404). res is the check of
// the post (its refusal, if any, is for the caller to answer); err a refusal found before it.
func (h *handlers) postInput(c *echo.Context, raw []byte, create, publish bool, stored *persistence.Post) (*postInput, *checkResult, error) {
	return h.postInputCheck(c, raw, &submission{whole: create, publish: publish}, stored)
}

// postInputCheck is postInput with the check's flags given in s (whole for a create, publish,
// preview), the rest of s read from the body.
func (h *handlers) postInputCheck(c *echo.Context, raw []byte, s *submission, stored *persistence.Post) (*postInput, *checkResult, error) {
	create := s.whole
	o, err := parseObject(raw)
	if err != nil {
		return nil, nil, err
	}
	if !create {
		// The time of a post is changed by scheduling it again; a PATCH that carried it would
		// otherwise answer 200 and leave the time as it was.
		for _, f := range []string{"scheduledAt", "scheduled_at", "timezone"} {
			if o.has(f) {
				return nil, nil, apierr.Validation("%s: cannot be changed by PATCH; schedule the post again with POST /v1/posts/:id/schedule", f)
			}
		}
	}
	in := &postInput{}
	if in.content, err = o.str("content", create); err != nil {
		return nil, nil, err
	}
	// A field's own rule is checked before the next field is read, so that a bad content is
	// reported before a bad platforms entry (checkPost checks each again, at no cost).
	if in.content != nil {
		if err := post.CheckContent(*in.content); err != nil {
			return nil, nil, apierr.Validation("%s", err.Error())
		}
	}
	accountIDs, err := o.uuids("platforms", create)
	if err != nil {
		return nil, nil, err
	}
	if accountIDs != nil {
		if err := post.CheckTargets(len(accountIDs)); err != nil {
			return nil, nil, apierr.Validation("%s", err.Error())
		}
	}
	if in.mediaIDs, err = o.uuids("media", false); err != nil {
		return nil, nil, err
	}
	if err := post.CheckMedia(len(in.mediaIDs)); err != nil {
		return nil, nil, apierr.Validation("%s", err.Error())
	}
	specs, err := o.targets("targets")
	if err != nil {
		return nil, nil, err
	}
	if !create && in.content == nil && accountIDs == nil && in.mediaIDs == nil && specs == nil {
		return nil, nil, apierr.Validation("nothing to update: send at least one of content, platforms, media, targets")
	}
	s.content, s.accounts, s.media, s.specs = in.content, accountIDs, in.mediaIDs, specs
	if stored != nil {
		// An update's targets lay over the post's platforms (as changed); platforms changed
		// without targets keep each remaining account's own content, media and options.
		if s.accounts == nil && specs != nil {
			for _, t := range stored.Targets {
				s.accounts = append(s.accounts, t.AccountID)
			}
		}
		s.kept = map[string]persistence.Target{}
		for _, t := range stored.Targets {
			s.kept[t.AccountID] = t
		}
	}
	// The one check of a post (check.go); the networks' rules apply when the post is submitted
	// for publication, and a PATCH is checked whole by the post's actor (post.Validate).
	res, err := h.checkPost(c, server.Principal(c).Scope(), s, mediaCache{})
	if err != nil {
		return nil, nil, err
	}
	if res.post != nil && s.accounts != nil {
		in.targets = res.post.targets
	}
	return in, res, nil
}

// newPost builds a new draft from validated input.
func (h *handlers) newPost(c *echo.Context, in *postInput) *persistence.Post {
	now := h.Now().UTC()
	p := server.Principal(c)
	rec := &persistence.Post{
		ID: uuid.Must(uuid.NewV7()).String(), UserID: p.User.ID, WorkspaceID: p.ObjectWorkspace(), Content: *in.content, Status: persistence.PostDraft,
		CreatedAt: now, UpdatedAt: now, MediaIDs: in.mediaIDs, Targets: in.targets,
	}
	if rec.MediaIDs == nil {
		rec.MediaIDs = []string{}
	}
	return rec
}

func (h *handlers) createPost(c *echo.Context) error {
	in, err := h.readPostInput(c, true, nil)
	if err != nil {
		return err
	}
	rec := h.newPost(c, in)
	id := rec.ID
	if _, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.Create{Post: rec}); err != nil {
		return h.actorError(c, "post", err)
	}
	return c.JSONBlob(http.StatusCreated, append(append(append(make([]byte, 0, 64), `{"id":"`...), id...), `"}`...))
}

func (h *handlers) getPost(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	r, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.Get{Scope: server.Principal(c).Scope()})
	if err != nil {
		return h.actorError(c, "post", err)
	}
	return c.JSON(http.StatusOK, h.detail(r.Post))
}

func (h *handlers) updatePost(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	stored, err := h.storedPost(c, id)
	if err != nil {
		return err
	}
	switch {
	case stored == nil:
		return h.actorError(c, "post", post.ErrNotFound)
	case stored.Scope() != server.Principal(c).Scope():
		return h.actorError(c, "post", post.ErrForbidden)
	}
	in, err := h.readPostInput(c, false, stored)
	if err != nil {
		return err
	}
	if err := h.checkScheduledEdit(c, stored, in); err != nil {
		return err
	}
	r, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.Update{
		Scope: server.Principal(c).Scope(), Content: in.content, Targets: in.targets, MediaIDs: in.mediaIDs,
	})
	if err != nil {
		return h.actorError(c, "post", err)
	}
	return c.JSON(http.StatusOK, h.detail(r.Post))
}

// checkScheduledEdit holds the edit of a scheduled post to its networks' rules, on the post as it
// would be after the change: a scheduled post is submitted for publication, as a schedule is. A
// draft is not (docs/decisions.md, Posts).
func (h *handlers) checkScheduledEdit(c *echo.Context, p *persistence.Post, in *postInput) error {
	if p == nil || (p.Status != persistence.PostScheduled && p.Status != persistence.PostFailed && p.Status != persistence.PostPartial) {
		return nil
	}
	// The post as the actor will leave it (post.Edit): a failed or partial post's published
	// targets as they went out, so that only what is published again is held to its networks.
	changed, err := post.Edit(p, in.content, in.targets, in.mediaIDs)
	if err != nil {
		return h.actorError(c, "post", err)
	}
	return h.checkStored(c, server.Principal(c).Scope(), changed)
}

func (h *handlers) deletePost(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	if _, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.Delete{Scope: server.Principal(c).Scope()}); err != nil {
		return h.actorError(c, "post", err)
	}
	return c.NoContent(http.StatusNoContent)
}

func queryInt(c *echo.Context, name string, def, min, max int) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, apierr.Validation("%s: Expected number, received %q", name, truncate(v, 32))
	}
	if n < min || n > max {
		return 0, apierr.Validation("%s: must be between %d and %d", name, min, max)
	}
	return n, nil
}

func (h *handlers) listPosts(c *echo.Context) error {
	page, err := queryInt(c, "page", 1, 1, 1_000_000)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	status := c.QueryParam("status")
	if status != "" && !oneOf(status, persistence.PostStatuses) {
		return apierr.Validation("status: must be one of %s", strings.Join(persistence.PostStatuses, ", "))
	}
	platform := c.QueryParam("platform")
	if platform != "" && !platforms.Platform(platform).Valid() {
		names := make([]string, len(platforms.All))
		for i, p := range platforms.All {
			names[i] = string(p)
		}
		return apierr.Validation("platform: must be one of %s", strings.Join(names, ", "))
	}
	search := c.QueryParam("search")
	if len(search) > 500 {
		return apierr.Validation("search: at most 500 characters")
	}
	p := server.Principal(c)
	accountID, accountPlatform, err := h.postsAccount(c, p.Scope())
	if err != nil {
		return err
	}
	var posts []*persistence.Post
	var total int
	if err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		posts, total, err = tx.ListPosts(persistence.PostFilter{
			Scope: p.Scope(), Status: status, Platform: platform, Search: search,
			AccountID: accountID, AccountPlatform: accountPlatform,
			Offset: (page - 1) * limit, Limit: limit,
		})
		return err
	}); err != nil {
		return h.storeError(c, err)
	}
	items := make([]PostListItem, 0, len(posts))
	for _, post := range posts {
		items = append(items, listItem(post))
	}
	return c.JSON(http.StatusOK, map[string]any{
		"data":       items,
		"pagination": map[string]int{"page": page, "limit": limit, "total": total, "total_pages": (total + limit - 1) / limit},
	})
}

// postsAccount is the account filter of GET /v1/posts: account_id, or connected_account_id
// (the same filter under the name post detail gives the field; the service's clients send it).
// Both may be given only with the same id. "" when neither is.
func (h *handlers) postsAccount(c *echo.Context, userID string) (id, platform string, err error) {
	field := "account_id"
	a, b := c.QueryParam("account_id"), c.QueryParam("connected_account_id")
	if a == "" && b != "" {
		field = "connected_account_id"
	}
	if a != "" && b != "" && a != b {
		return "", "", apierr.Validation("connected_account_id: must equal account_id when both are given")
	}
	return h.liveAccount(c, userID, field, platforms.All, "posts")
}

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

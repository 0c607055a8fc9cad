package api

import (
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

// MaxContentLength is the longest post text Herald stores, in characters: the longest any of the
// nine networks accepts (Facebook's 63,206). Each network's own limit is checked when the post is
// published to it.
const MaxContentLength = 63206

// MaxTargets caps the connected accounts one post goes to.
const MaxTargets = 50

// MaxMedia caps the media of one post.
const MaxMedia = 20

// PostListItem is a post in a list.
type PostListItem struct {
	ID          string     `json:"id"`
	Content     string     `json:"content"`
	Status      string     `json:"status"`
	ScheduledAt *time.Time `json:"scheduled_at"`
	CreatedAt   time.Time  `json:"created_at"`
	MediaIDs    []string   `json:"media_ids"`
}

// PostPlatform is where a post stands on one connected account.
type PostPlatform struct {
	ConnectedAccountID string  `json:"connected_account_id"`
	Platform           string  `json:"platform"`
	Status             string  `json:"status"`
	Error              *string `json:"error"`
}

// PostDetail is GET /v1/posts/:id.
type PostDetail struct {
	PostListItem
	Platforms []PostPlatform `json:"platforms"`
	// TrackingID is the post's latest publish job (null before its first publish).
	TrackingID *string `json:"tracking_id"`
}

func listItem(p *persistence.Post) PostListItem {
	media := p.MediaIDs
	if media == nil {
		media = []string{}
	}
	return PostListItem{ID: p.ID, Content: p.Content, Status: p.Status, ScheduledAt: p.ScheduledAt, CreatedAt: p.CreatedAt, MediaIDs: media}
}

func detail(p *persistence.Post) PostDetail {
	out := PostDetail{PostListItem: listItem(p), Platforms: make([]PostPlatform, 0, len(p.Targets)), TrackingID: p.TrackingID}
	for _, t := range p.Targets {
		out.Platforms = append(out.Platforms, PostPlatform{ConnectedAccountID: t.AccountID, Platform: t.Platform, Status: t.Status, Error: t.Error})
	}
	return out
}

// postInput is the validated body of create and update.
type postInput struct {
	content  *string
	targets  []persistence.Target
	mediaIDs []string
}

// readPostInput validates content, platforms and media. On create every field rule applies;
// on update only the fields present are read.
func (h *handlers) readPostInput(c *echo.Context, create bool) (*postInput, error) {
	raw, err := readBody(c)
	if err != nil {
		return nil, err
	}
	return h.postInput(c, raw, create)
}

// postInput validates a create or update body already read.
func (h *handlers) postInput(c *echo.Context, raw []byte, create bool) (*postInput, error) {
	o, err := parseObject(raw)
	if err != nil {
		return nil, err
	}
	in := &postInput{}
	if in.content, err = o.str("content", create); err != nil {
		return nil, err
	}
	if in.content != nil {
		if n := utf8.RuneCountInString(*in.content); n > MaxContentLength {
			return nil, apierr.Validation("content: is %d characters; at most %d are allowed", n, MaxContentLength)
		}
	}
	accountIDs, err := o.uuids("platforms", create)
	if err != nil {
		return nil, err
	}
	if accountIDs != nil {
		if len(accountIDs) == 0 {
			return nil, apierr.Validation("platforms: must contain at least one connected account id")
		}
		if len(accountIDs) > MaxTargets {
			return nil, apierr.Validation("platforms: at most %d connected accounts per post", MaxTargets)
		}
	}
	if in.mediaIDs, err = o.uuids("media", false); err != nil {
		return nil, err
	}
	if len(in.mediaIDs) > MaxMedia {
		return nil, apierr.Validation("media: at most %d media per post", MaxMedia)
	}
	if !create && in.content == nil && accountIDs == nil && in.mediaIDs == nil {
		return nil, apierr.Validation("nothing to update: send at least one of content, platforms, media")
	}
	p := server.Principal(c)
	if accountIDs != nil {
		in.targets = make([]persistence.Target, 0, len(accountIDs))
		for _, id := range accountIDs {
			platform, ok, err := h.Store.AccountPlatform(p.User.ID, id)
			if err != nil {
				return nil, h.storeError(c, err)
			}
			if !ok {
				return nil, apierr.Validation("platforms: connected account %s does not exist or is not yours", id)
			}
			in.targets = append(in.targets, persistence.Target{AccountID: id, Platform: platform, Status: persistence.TargetPending})
		}
	}
	if len(in.mediaIDs) > 0 {
		if err := h.Store.View(func(tx *persistence.Tx) error {
			for _, id := range in.mediaIDs {
				// Media are confirmed through the media endpoints; an id that is not a confirmed
				// media of the caller is refused.
				if !mediaUsable(tx, p.User.ID, id) {
					return apierr.Validation("media: %s is not a confirmed media of yours", id)
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if create && in.content != nil && strings.TrimSpace(*in.content) == "" && len(in.mediaIDs) == 0 {
		return nil, apierr.Validation("content: must not be empty when the post has no media")
	}
	return in, nil
}

// mediaUsable reports whether id is a confirmed media of the user (unknown ids, other users'
// media and uploads never confirmed are not).
func mediaUsable(tx *persistence.Tx, userID, id string) bool {
	_, err := tx.ConfirmedMedia(userID, id)
	return err == nil
}

// newPost builds a new draft from validated input.
func (h *handlers) newPost(c *echo.Context, in *postInput) *persistence.Post {
	now := h.Now().UTC()
	rec := &persistence.Post{
		ID: uuid.Must(uuid.NewV7()).String(), UserID: server.Principal(c).User.ID, Content: *in.content, Status: persistence.PostDraft,
		CreatedAt: now, UpdatedAt: now, MediaIDs: in.mediaIDs, Targets: in.targets,
	}
	if rec.MediaIDs == nil {
		rec.MediaIDs = []string{}
	}
	return rec
}

func (h *handlers) createPost(c *echo.Context) error {
	in, err := h.readPostInput(c, true)
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
	r, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.Get{UserID: server.Principal(c).User.ID})
	if err != nil {
		return h.actorError(c, "post", err)
	}
	return c.JSON(http.StatusOK, detail(r.Post))
}

func (h *handlers) updatePost(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	in, err := h.readPostInput(c, false)
	if err != nil {
		return err
	}
	r, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.Update{
		UserID: server.Principal(c).User.ID, Content: in.content, Targets: in.targets, MediaIDs: in.mediaIDs,
	})
	if err != nil {
		return h.actorError(c, "post", err)
	}
	return c.JSON(http.StatusOK, detail(r.Post))
}

func (h *handlers) deletePost(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	if _, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.Delete{UserID: server.Principal(c).User.ID}); err != nil {
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
	var posts []*persistence.Post
	var total int
	if err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		posts, total, err = tx.ListPosts(persistence.PostFilter{
			UserID: p.User.ID, Status: status, Platform: platform, Search: search,
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
		"pagination": map[string]int{"page": page, "limit": limit, "total": total},
	})
}

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

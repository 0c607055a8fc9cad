package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// errKeyAnswered is what a request's run gives publishFlow when its commit found its
// Idempotency-Key answered meanwhile (persistence.ErrIdempotencyKeyUsed): nothing was written,
// and the stored answer is the request's answer.
var errKeyAnswered = errors.New("the Idempotency-Key was answered while the request was carried out")

// MaxIdempotencyKey is the longest Idempotency-Key accepted.
const MaxIdempotencyKey = 255

// inflight tracks Idempotency-Keys whose first request is being answered.
type inflight struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (f *inflight) begin(k []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys[string(k)] {
		return false
	}
	f.keys[string(k)] = true
	return true
}

func (f *inflight) end(k []byte) {
	f.mu.Lock()
	delete(f.keys, string(k))
	f.mu.Unlock()
}

// idempotencyKey reads the header: a bare token or a structured-field string ("…"). ok is false
// when the header is absent.
func idempotencyKey(c *echo.Context) (key string, ok bool, err error) {
	vals := c.Request().Header.Values("Idempotency-Key")
	if len(vals) == 0 {
		return "", false, nil
	}
	v := strings.TrimSpace(vals[0])
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(v[1 : len(v)-1])
	}
	switch {
	case v == "":
		return "", true, apierr.Validation("Idempotency-Key: must not be empty")
	case len(v) > MaxIdempotencyKey:
		return "", true, apierr.Validation("Idempotency-Key: at most %d characters", MaxIdempotencyKey)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return "", true, apierr.Validation("Idempotency-Key: must not contain control characters")
		}
	}
	return v, true, nil
}

// publishFlow runs a publish with the Idempotency-Key rules: the same key and body after the
// first answer replay it (Idempotent-Replayed: true); the same key while the first request is
// being answered is 409; the same key with another body is 422. Keys are scoped to the user and
// the operation, kept 24 hours, and stored in the same transaction as the job they created. The
// operation is the same through either door (routes.go): a key first used on /api/posts/publish
// replays on /v1/posts/publish, its links pointing through the door of the replay.
func (h *handlers) publishFlow(c *echo.Context, body []byte, run func(idem *post.Idempotency, fingerprint []byte) error) error {
	key, has, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	if !has {
		return run(nil, nil)
	}
	user := server.Principal(c).Scope()
	// Scope and fingerprint name the operation as /v1 does, whichever the door, so that records
	// stored before the dashboard's door existed still match.
	d := door(c)
	scope := sha256.Sum256([]byte(user + "\x00" + c.Request().Method + " " + V1Prefix + strings.TrimPrefix(c.Path(), d) + "\x00" + key))
	fp := sha256.Sum256(append([]byte(V1Prefix+strings.TrimPrefix(c.Request().URL.Path, d)+"\x00"), body...))
	replay := func() (bool, error) {
		var rec *persistence.IdempotencyRecord
		_ = h.Store.View(func(tx *persistence.Tx) error {
			rec, _ = tx.Idempotency(scope[:])
			return nil
		})
		if rec == nil || !rec.LiveAt(h.Now()) {
			return false, nil
		}
		if !bytes.Equal(rec.Fingerprint, fp[:]) {
			return true, apierr.New(http.StatusUnprocessableEntity, apierr.CodeIdempotencyConflict,
				"Idempotency-Key was already used with a different request; use a new key for a new request")
		}
		body, location := throughDoor(rec, d)
		hdr := c.Response().Header()
		hdr.Set("Idempotent-Replayed", "true")
		if location != "" {
			hdr.Set("Location", location)
		}
		return true, c.JSONBlob(rec.Status, body)
	}
	if done, err := replay(); done {
		return err
	}
	if !h.idem.begin(scope[:]) {
		return keyInProgress()
	}
	defer h.idem.end(scope[:])
	if done, err := replay(); done { // answered while this one waited for the key
		return err
	}
	err = run(&post.Idempotency{Key: scope[:]}, fp[:])
	if errors.Is(err, errKeyAnswered) {
		// A request with the key that this node did not see on its way (sent before, its
		// client answered with a time-out or a 503, or sent through another node) committed
		// first: this one changed nothing, and is answered as that one was.
		if done, err := replay(); done {
			return err
		}
		return keyInProgress()
	}
	return err
}

// keyInProgress is the 409 of a request whose Idempotency-Key another request holds and has not
// answered yet.
func keyInProgress() error {
	return apierr.New(http.StatusConflict, apierr.CodeIdempotencyConflict,
		"a request with this Idempotency-Key is still being processed; retry after it has been answered")
}

// backlogFull refuses a publish (503) while the server has as many publish jobs in hand as it
// takes (job.Backlog): accepting more would only lengthen the wait of every job for the CPU and
// its account's turn. A replay of an answered Idempotency-Key is still served (publishFlow checks it
// first), and nothing is written before the refusal.
func (h *handlers) backlogFull() error {
	if !h.JobBacklog.Full() {
		return nil
	}
	return server.Overloaded(server.OverloadJobBacklog, fmt.Sprintf(
		"the server has %d publish jobs in hand, as many as it takes; nothing was created; retry shortly", h.JobBacklog.Limit()))
}

// PublishAccepted is the 202 answer of POST /v1/posts/publish.
type PublishAccepted struct {
	PostID     string `json:"post_id,omitempty"`
	TrackingID string `json:"tracking_id"`
	Status     string `json:"status"`
	StreamURL  string `json:"stream_url"`
}

// quota is what a publish or schedule counts against: the free plan's monthly posts and the
// workspace's limits.posts_per_month (either 0 when there is none). Every accepted post is
// counted in its workspace's usage.
func (h *handlers) quota(c *echo.Context) *post.Quota {
	p := server.Principal(c)
	q := &post.Quota{Month: h.Now().UTC().Format("2006-01")}
	if p.User.Plan == "free" && h.FreePostQuota > 0 {
		q.Limit = h.FreePostQuota
	}
	if w := h.workspace(c); w != nil {
		q.Workspace = w.Limits.PostsPerMonth
	}
	return q
}

func readBody(c *echo.Context) ([]byte, error) { return readRaw(c.Request()) }

// lifecycleError maps the post actor's publishing and scheduling refusals.
func (h *handlers) lifecycleError(c *echo.Context, err error) error {
	var np *post.NotPublishableError
	var ns *post.NotSchedulableError
	var qe *post.QuotaExceededError
	switch {
	case errors.As(err, &np):
		return apierr.Validation("%s", np.Error())
	case errors.As(err, &ns):
		return apierr.Validation("%s", ns.Error())
	case errors.As(err, &qe):
		return apierr.New(http.StatusForbidden, apierr.CodeLimitExceeded, "%s", qe.Error()).
			WithDetails(map[string]any{"limit": qe.Limit, "used": qe.Used, "period": qe.Month})
	}
	return h.actorError(c, "post", err)
}

func (h *handlers) accepted(c *echo.Context, jobID string, r *PublishAccepted, idem *post.Idempotency, fp []byte) ([]byte, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if idem != nil {
		idem.Record = &persistence.IdempotencyRecord{Fingerprint: fp, Status: http.StatusAccepted, Body: body,
			Location: jobLocation(c, jobID), CreatedAt: h.Now().UTC()}
	}
	return body, nil
}

func (h *handlers) respondAccepted(c *echo.Context, jobID string, body []byte) error {
	c.Response().Header().Set("Location", jobLocation(c, jobID))
	return c.JSONBlob(http.StatusAccepted, body)
}

// jobLocation and streamURL are a job's links through the request's door.
func jobLocation(c *echo.Context, jobID string) string { return door(c) + "/jobs/" + jobID }

func streamURL(c *echo.Context, jobID string) string { return jobLocation(c, jobID) + "/stream" }

// throughDoor is a stored answer's body and Location as the door prefix would give them: the
// stored bytes when it was answered through that door, else its links rewritten (a publish's
// job links, a campaign's links).
func throughDoor(rec *persistence.IdempotencyRecord, prefix string) ([]byte, string) {
	if rec.Location == "" || strings.HasPrefix(rec.Location, prefix+"/") {
		return rec.Body, rec.Location
	}
	if strings.Contains(rec.Location, campaignsPath+"/") {
		var ca CampaignAccepted
		if err := json.Unmarshal(rec.Body, &ca); err != nil || ca.CampaignID == "" {
			return rec.Body, rec.Location
		}
		loc := prefix + campaignsPath + "/" + ca.CampaignID
		ca.StreamURL = loc + "/stream"
		body, err := json.Marshal(&ca)
		if err != nil {
			return rec.Body, rec.Location
		}
		return body, loc
	}
	var a PublishAccepted
	if err := json.Unmarshal(rec.Body, &a); err != nil || a.TrackingID == "" {
		return rec.Body, rec.Location
	}
	loc := prefix + "/jobs/" + a.TrackingID
	a.StreamURL = loc + "/stream"
	body, err := json.Marshal(&a)
	if err != nil {
		return rec.Body, rec.Location
	}
	return body, loc
}

// publishNew serves POST /v1/posts/publish: create the post and its job in one step.
func (h *handlers) publishNew(c *echo.Context) error {
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	return h.publishFlow(c, raw, func(idem *post.Idempotency, fp []byte) error {
		if err := h.backlogFull(); err != nil {
			return err
		}
		in, res, err := h.postInput(c, raw, true, true, nil)
		if err != nil {
			return err
		}
		if err := res.refusal(); err != nil {
			return err
		}
		rec := h.newPost(c, in)
		held, err := h.approvalHold(c)
		if err != nil {
			return err
		}
		if held != nil {
			hi := h.heldIdempotency(c, idem, fp)
			r, err := ask[*post.PublishReply](h, c, h.Posts.To(rec.ID), &post.Publish{Scope: rec.Scope(), Create: rec, Hold: held, Idempotency: hi})
			if err != nil {
				return h.lifecycleError(c, err)
			}
			return h.respondHeld(c, r.Post, hi)
		}
		jobID := uuid.Must(uuid.NewV7()).String()
		body, err := h.accepted(c, jobID, &PublishAccepted{PostID: rec.ID, TrackingID: jobID, Status: "queued", StreamURL: streamURL(c, jobID)}, idem, fp)
		if err != nil {
			return err
		}
		if _, err := ask[*post.PublishReply](h, c, h.Posts.To(rec.ID), &post.Publish{
			Scope: rec.Scope(), JobID: jobID, Create: rec, Idempotency: idem, Quota: h.quota(c),
		}); err != nil {
			return h.lifecycleError(c, err)
		}
		return h.respondAccepted(c, jobID, body)
	})
}

// publishExisting serves POST /v1/posts/:id/publish.
func (h *handlers) publishExisting(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	return h.publishFlow(c, nil, func(idem *post.Idempotency, fp []byte) error {
		if err := h.backlogFull(); err != nil {
			return err
		}
		if err := h.checkExisting(c, id); err != nil {
			return err
		}
		held, err := h.approvalHold(c)
		if err != nil {
			return err
		}
		if held != nil {
			jobID := uuid.Must(uuid.NewV7()).String()
			hi := h.heldIdempotency(c, idem, fp)
			r, err := ask[*post.PublishReply](h, c, h.Posts.To(id), &post.Publish{Scope: server.Principal(c).Scope(), JobID: jobID, Quota: h.quota(c), Hold: held, Idempotency: hi})
			if err != nil {
				return h.lifecycleError(c, err)
			}
			if r.Job != nil { // a retry of what failed: approved already, not held
				body, err := h.accepted(c, r.Job.TrackingID, &PublishAccepted{TrackingID: r.Job.TrackingID, Status: "queued", StreamURL: streamURL(c, r.Job.TrackingID)}, nil, nil)
				if err != nil {
					return err
				}
				return h.respondAccepted(c, r.Job.TrackingID, body)
			}
			return h.respondHeld(c, r.Post, hi)
		}
		jobID := uuid.Must(uuid.NewV7()).String()
		body, err := h.accepted(c, jobID, &PublishAccepted{TrackingID: jobID, Status: "queued", StreamURL: streamURL(c, jobID)}, idem, fp)
		if err != nil {
			return err
		}
		if _, err := ask[*post.PublishReply](h, c, h.Posts.To(id), &post.Publish{
			Scope: server.Principal(c).Scope(), JobID: jobID, Quota: h.quota(c), Idempotency: idem,
		}); err != nil {
			return h.lifecycleError(c, err)
		}
		return h.respondAccepted(c, jobID, body)
	})
}

// scheduleInput reads scheduledAt and timezone and resolves them in the user's zone. zone is the
// IANA zone the time was written in, kept with the post to show it as written: the timezone
// named (even beside an offset, where it does not move the instant), the user's zone for
// +default or "default" (UTC when none is set), and "" for an offset alone.
func (h *handlers) scheduleInput(c *echo.Context, o object) (at time.Time, zone string, err error) {
	raw, err := o.str("scheduledAt", true)
	if err != nil {
		return time.Time{}, "", err
	}
	tz, err := o.str("timezone", false)
	if err != nil {
		return time.Time{}, "", err
	}
	userZone := server.Principal(c).User.Timezone
	t, err := ParseScheduledAt(*raw, tz, userZone)
	if err != nil {
		return time.Time{}, "", apierr.Validation("%s", err.Error())
	}
	if err := checkScheduleWindow(t, h.Now()); err != nil {
		return time.Time{}, "", apierr.Validation("%s", err.Error())
	}
	return t, scheduleZone(*raw, tz, userZone), nil
}

// scheduleZone is the zone a valid scheduledAt was written in (scheduleInput).
func scheduleZone(raw string, tz *string, userZone string) string {
	name := ""
	if tz != nil {
		name = strings.TrimSpace(*tz)
	}
	if strings.HasSuffix(strings.TrimSpace(raw), "+default") || name == "default" {
		name = userZone
		if name == "" {
			name = "UTC"
		}
	}
	if name == "" || name == "Local" {
		return ""
	}
	if _, err := time.LoadLocation(name); err != nil {
		return "" // beside an offset, a timezone is ignored (the spec), a bad one too
	}
	return name
}

// scheduleNew serves POST /v1/posts/schedule.
func (h *handlers) scheduleNew(c *echo.Context) error {
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	o, err := parseObject(raw)
	if err != nil {
		return err
	}
	at, zone, err := h.scheduleInput(c, o)
	if err != nil {
		return err
	}
	in, res, err := h.postInput(c, raw, true, true, nil)
	if err != nil {
		return err
	}
	if err := res.refusal(); err != nil {
		return err
	}
	rec := h.newPost(c, in)
	held, err := h.approvalHold(c)
	if err != nil {
		return err
	}
	r, err := ask[*post.Reply](h, c, h.Posts.To(rec.ID), &post.Schedule{Scope: rec.Scope(), At: at, Zone: zone, Create: rec, Quota: h.quota(c), Hold: held})
	if err != nil {
		return h.lifecycleError(c, err)
	}
	return c.JSON(http.StatusCreated, scheduledPost{h.detail(r.Post), r.Post.ID})
}

// scheduledPost is the answer of both schedule operations: the post's detail, and its id again
// as post_id (the field the service's clients read from a schedule's answer, as they do from a
// publish's).
type scheduledPost struct {
	PostDetail
	PostID string `json:"post_id"`
}

// scheduleExisting serves POST /v1/posts/:id/schedule.
func (h *handlers) scheduleExisting(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	at, zone, err := h.scheduleInput(c, o)
	if err != nil {
		return err
	}
	if err := h.checkExisting(c, id); err != nil {
		return err
	}
	held, err := h.approvalHold(c)
	if err != nil {
		return err
	}
	r, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.Schedule{Scope: server.Principal(c).Scope(), At: at, Zone: zone, Quota: h.quota(c), Hold: held})
	if err != nil {
		return h.lifecycleError(c, err)
	}
	return c.JSON(http.StatusOK, scheduledPost{h.detail(r.Post), r.Post.ID})
}

// checkExisting holds a stored post submitted for publication (POST /v1/posts/:id/publish and
// /schedule) to its networks' rules, as a new post's publish or schedule is, so that a draft
// written incomplete is refused here rather than failing on its networks. A post the actor will
// refuse anyway (not the caller's, already published) is left to it.
func (h *handlers) checkExisting(c *echo.Context, id string) error {
	p, err := h.storedPost(c, id)
	if err != nil || p == nil {
		return err
	}
	if p.Status == persistence.PostPublishing || p.Status == persistence.PostPublished {
		return nil
	}
	return h.checkStored(c, server.Principal(c).Scope(), p)
}

package api

import (
	"encoding/json"
	"errors"
	"hash/fnv"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// The posting queue (docs/queue.md): each workspace has one weekly list of time slots, read in
// one zone, and a draft added to the queue is scheduled in the earliest slot that none of its
// accounts' other scheduled posts takes. The queue is the workspace's, not an account's: an
// agency plans a client's week once, and a slot is free or taken per account all the same.
//
//	GET  /v1/queue             → 200 Queue (no slots until they are set)
//	PUT  /v1/queue             {timezone, slots: [{weekday, time}]} → 200 Queue
//	POST /v1/posts/:id/queue   → 200 the post, scheduled (as POST /v1/posts/:id/schedule answers)

// Queue is a workspace's posting queue as the API shows it.
type Queue struct {
	Timezone string      `json:"timezone"`
	Slots    []QueueSlot `json:"slots"`
}

// QueueSlot is one weekly time of a queue.
type QueueSlot struct {
	Weekday string `json:"weekday"`
	Time    string `json:"time"`
}

// MaxQueueSlots is how many slots a queue holds at most (one every hour of the week and more).
const MaxQueueSlots = 200

// queuePath is the queue's path below a door's prefix.
const queuePath = "/queue"

// weekdays are the slots' weekday names, Monday first (the order of a queue's slots).
var weekdays = []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

// weekdayIndex is a name's place in weekdays, -1 for none.
func weekdayIndex(name string) int { return slices.Index(weekdays, name) }

// queueView is the API's form of a workspace's queue: its own, else no slots in the user's zone.
func queueView(q *persistence.Queue, userZone string) Queue {
	if q == nil {
		if userZone == "" {
			userZone = "UTC"
		}
		return Queue{Timezone: userZone, Slots: []QueueSlot{}}
	}
	out := Queue{Timezone: q.Timezone, Slots: make([]QueueSlot, 0, len(q.Slots))}
	for _, s := range q.Slots {
		out.Slots = append(out.Slots, QueueSlot(s))
	}
	return out
}

// ParseQueue checks a queue's body ({timezone, slots}) and returns it with its slots in weekday
// then time order. Every fault is a validation error naming the field.
func ParseQueue(o object) (*persistence.Queue, error) {
	for k := range o {
		if k != "timezone" && k != "slots" {
			return nil, apierr.Validation("%s: Unrecognized key; a queue has timezone and slots", truncate(k, 64))
		}
	}
	tz, err := o.str("timezone", true)
	if err != nil {
		return nil, err
	}
	if _, err := time.LoadLocation(*tz); err != nil || *tz == "" || *tz == "Local" {
		return nil, apierr.Validation("timezone: %q is not an IANA time zone", truncate(*tz, 64))
	}
	raw, ok := o["slots"]
	if !ok {
		return nil, apierr.Validation("slots: Required")
	}
	if jsonType(raw) != "array" {
		return nil, typeError("slots", "array", raw)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, typeError("slots", "array", raw)
	}
	if len(items) == 0 {
		return nil, apierr.Validation("slots: a queue needs at least one slot")
	}
	if len(items) > MaxQueueSlots {
		return nil, apierr.Validation("slots: at most %d slots", MaxQueueSlots)
	}
	q := &persistence.Queue{Timezone: *tz}
	seen := map[persistence.QueueSlot]bool{}
	for i, item := range items {
		s, err := parseSlot(i, item)
		if err != nil {
			return nil, err
		}
		if seen[s] {
			return nil, apierr.Validation("slots[%d]: %s %s is already a slot", i, s.Weekday, s.Time)
		}
		seen[s] = true
		q.Slots = append(q.Slots, s)
	}
	slices.SortFunc(q.Slots, func(a, b persistence.QueueSlot) int {
		if d := weekdayIndex(a.Weekday) - weekdayIndex(b.Weekday); d != 0 {
			return d
		}
		return strings.Compare(a.Time, b.Time)
	})
	return q, nil
}

func parseSlot(i int, raw json.RawMessage) (persistence.QueueSlot, error) {
	field := func(name string) string { return "slots[" + strconv.Itoa(i) + "]." + name }
	if jsonType(raw) != "object" {
		return persistence.QueueSlot{}, typeError("slots["+strconv.Itoa(i)+"]", "object", raw)
	}
	o := splitObject(raw)
	for k := range o {
		if k != "weekday" && k != "time" {
			return persistence.QueueSlot{}, apierr.Validation("%s: Unrecognized key; a slot has weekday and time", field(truncate(k, 64)))
		}
	}
	day, err := o.str("weekday", true)
	if err != nil {
		return persistence.QueueSlot{}, prefixed("slots["+strconv.Itoa(i)+"]", err)
	}
	at, err := o.str("time", true)
	if err != nil {
		return persistence.QueueSlot{}, prefixed("slots["+strconv.Itoa(i)+"]", err)
	}
	d := strings.ToLower(*day)
	if weekdayIndex(d) < 0 {
		return persistence.QueueSlot{}, apierr.Validation("%s: %q is not a weekday (monday … sunday)", field("weekday"), truncate(*day, 32))
	}
	if _, ok := slotMinutes(*at); !ok {
		return persistence.QueueSlot{}, apierr.Validation("%s: %q is not a time of day as HH:MM (00:00 … 23:59)", field("time"), truncate(*at, 32))
	}
	return persistence.QueueSlot{Weekday: d, Time: *at}, nil
}

// slotMinutes reads "HH:MM" (24-hour, two digits each) as minutes after midnight.
func slotMinutes(s string) (int, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	for _, i := range []int{0, 1, 3, 4} {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[3]-'0')*10 + int(s[4]-'0')
	if h > 23 || m > 59 {
		return 0, false
	}
	return h*60 + m, true
}

// NextFreeSlot is the earliest time of q after now, within a year, that taken does not hold
// (instants as Unix seconds); false when every slot of the coming year is taken. A slot's wall
// time that a daylight-saving change skips is moved forward by the gap, as a schedule's is.
func NextFreeSlot(q *persistence.Queue, now time.Time, taken map[int64]bool) (time.Time, bool) {
	loc, err := time.LoadLocation(q.Timezone)
	if err != nil || len(q.Slots) == 0 {
		return time.Time{}, false
	}
	local := now.In(loc)
	end := now.AddDate(1, 0, 0)
	for d := 0; d <= 367; d++ {
		day := time.Date(local.Year(), local.Month(), local.Day()+d, 0, 0, 0, 0, time.UTC)
		name := weekdays[(int(day.Weekday())+6)%7]
		for _, s := range q.Slots {
			if s.Weekday != name {
				continue
			}
			min, ok := slotMinutes(s.Time)
			if !ok {
				continue
			}
			at := resolveWall(day.Add(time.Duration(min)*time.Minute), loc)
			if !at.After(now) {
				continue
			}
			if at.After(end) {
				return time.Time{}, false
			}
			if !taken[at.Unix()] {
				return at, true
			}
		}
	}
	return time.Time{}, false
}

// getQueue is GET /v1/queue: the request's workspace's queue.
func (h *handlers) getQueue(c *echo.Context) error {
	w, err := h.queueWorkspace(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, queueView(w.Queue, server.Principal(c).User.Timezone))
}

// queueWorkspace reads the request's workspace fresh from the store.
func (h *handlers) queueWorkspace(c *echo.Context) (*persistence.Workspace, error) {
	p := server.Principal(c)
	return h.readWorkspace(c, p.User.ID, persistence.WorkspaceOf(p.WorkspaceID))
}

// putQueue is PUT /v1/queue: replaces the request's workspace's slots and zone. Posts already
// scheduled keep their times.
func (h *handlers) putQueue(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	q, err := ParseQueue(o)
	if err != nil {
		return err
	}
	p := server.Principal(c)
	ctx, cancel := h.askContext(c)
	defer cancel()
	var next *persistence.Workspace
	err = h.Store.Update(ctx, func(tx *persistence.Tx) error {
		cur, err := tx.Workspace(p.User.ID, persistence.WorkspaceOf(p.WorkspaceID))
		if err != nil {
			return err
		}
		n := *cur
		n.Queue = q
		n.Version++
		next = &n
		return tx.PutWorkspace(&n)
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return apierr.NotFound("workspace")
	}
	if err != nil {
		return h.storeError(c, err)
	}
	if h.Auth != nil {
		h.Auth.Invalidate()
	}
	return c.JSON(http.StatusOK, queueView(next.Queue, p.User.Timezone))
}

// queueLocks serialise the choice of a slot and the schedule that takes it within this process,
// per workspace (a workspace's scope picks one of them), so that two drafts added at once do not
// land in one slot while other workspaces' additions go on.
var queueLocks [64]sync.Mutex

func queueLock(scope string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(scope))
	return &queueLocks[h.Sum32()%uint32(len(queueLocks))]
}

// queuePost is POST /v1/posts/:id/queue: the draft is scheduled, through the post's own
// schedule (held for approval where a schedule would be), in its workspace queue's earliest slot
// after now that no other scheduled post (or one waiting for approval of a schedule) of any of
// its accounts takes.
func (h *handlers) queuePost(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	scope := server.Principal(c).Scope()
	p, err := h.storedPost(c, id)
	if err != nil {
		return err
	}
	if p == nil || p.Scope() != scope {
		return apierr.NotFound("post")
	}
	if p.Status != persistence.PostDraft {
		return apierr.Validation("only a draft can be added to the queue; this post is %s", strings.ReplaceAll(p.Status, "_", " "))
	}
	w, err := h.queueWorkspace(c)
	if err != nil {
		return err
	}
	if w.Queue == nil || len(w.Queue.Slots) == 0 {
		return apierr.Validation("the workspace's queue has no slots; set them with PUT /v1/queue")
	}
	if err := h.checkExisting(c, id); err != nil {
		return err
	}
	held, err := h.approvalHold(c)
	if err != nil {
		return err
	}
	mu := queueLock(scope)
	mu.Lock()
	defer mu.Unlock()
	taken, err := h.takenSlots(c, scope, p)
	if err != nil {
		return err
	}
	at, ok := NextFreeSlot(w.Queue, h.Now(), taken)
	if !ok {
		return apierr.Validation("every slot of the queue in the coming year is taken for this post's accounts; add slots with PUT /v1/queue")
	}
	r, err := ask[*post.Reply](h, c, h.Posts.To(id), &post.Schedule{Scope: scope, At: at, Quota: h.quota(c), Hold: held})
	if err != nil {
		return h.lifecycleError(c, err)
	}
	return c.JSON(http.StatusOK, scheduledPost{h.detail(r.Post), r.Post.ID})
}

// takenSlots are the instants (Unix seconds) at which another post of the workspace on one of
// p's accounts is scheduled, or waits for approval to be.
func (h *handlers) takenSlots(c *echo.Context, scope string, p *persistence.Post) (map[int64]bool, error) {
	accounts := map[string]bool{}
	for _, t := range p.Targets {
		accounts[t.AccountID] = true
	}
	taken := map[int64]bool{}
	const page = 500
	for _, status := range []string{persistence.PostScheduled, persistence.PostPendingApproval} {
		for offset := 0; ; offset += page {
			var list []*persistence.Post
			err := h.Store.View(func(tx *persistence.Tx) error {
				var err error
				list, _, err = tx.ListPosts(persistence.PostFilter{Scope: scope, Status: status, Offset: offset, Limit: page})
				return err
			})
			if err != nil {
				return nil, h.storeError(c, err)
			}
			for _, o := range list {
				at := o.ScheduledAt
				if o.Status == persistence.PostPendingApproval {
					at = nil
					if o.Approval != nil && o.Approval.Action == persistence.ApprovalSchedule {
						at = o.Approval.ScheduledAt
					}
				}
				if o.ID == p.ID || at == nil {
					continue
				}
				if slices.ContainsFunc(o.Targets, func(t persistence.Target) bool { return accounts[t.AccountID] }) {
					taken[at.Unix()] = true
				}
			}
			if len(list) < page {
				break
			}
		}
	}
	return taken, nil
}

// queueRoutes are the queue's operations on both doors.
func (h *handlers) queueRoutes() []route {
	return []route{
		{"GET", queuePath, h.getQueue, auth.ScopePostsRead},
		{"PUT", queuePath, h.putQueue, auth.ScopePostsWrite},
		{"POST", "/posts/:id/queue", h.queuePost, auth.ScopePostsWrite},
	}
}

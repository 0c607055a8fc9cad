package persistence

import (
	"bytes"
	"time"
)

// Workspaces keep an agency's clients apart: every connected account, post, job, campaign, media
// item, webhook and event belongs to one workspace of its user (its WorkspaceID). Each user has a
// main workspace, which holds everything written before workspaces existed and everything written
// without naming another; its records carry no WorkspaceID, and its API id is MainWorkspace.
//
// The indexes that were keyed by user id (accounts_user, posts_user, posts_count, campaigns_user,
// media_user, webhooks_user) are keyed by the scope of the workspace (Scope): the user's own id
// for the main workspace, the workspace's id for any other. A store written before workspaces is
// therefore already laid out for them, every object in its user's main workspace, with nothing to
// rewrite.
//
// The workspace buckets:
//
//	workspaces       scope (16) → Workspace (JSON); the main workspace's record (under the
//	                 user's id) exists only once its settings were changed
//	workspaces_user  user id | scope (16) → empty: a user's workspaces other than main
var (
	bWorkspaces     = []byte("workspaces")
	bWorkspacesUser = []byte("workspaces_user")
)

func init() { registerBuckets(bWorkspaces, bWorkspacesUser) }

// MainWorkspace is the API id of every user's main workspace.
const MainWorkspace = "main"

// MainWorkspaceName is the main workspace's name until its owner renames it.
const MainWorkspaceName = "Main"

// Workspace is one of a user's workspaces.
type Workspace struct {
	// ID is MainWorkspace or a UUIDv7.
	ID     string `json:"id"`
	UserID string `json:"user_id"`
	Name   string `json:"name"`
	// ApprovalRequired holds a publish or schedule by a member or key without posts:approve
	// for approval (status pending_approval).
	ApprovalRequired bool            `json:"approval_required"`
	Limits           WorkspaceLimits `json:"limits"`
	// Queue is the workspace's posting queue (nil until its slots are first set).
	Queue     *Queue    `json:"queue,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Version counts the workspace's committed changes.
	Version uint64 `json:"version"`
}

// WorkspaceLimits are a workspace's own limits, within its user's plan; nil is no limit.
type WorkspaceLimits struct {
	// PostsPerMonth caps the posts the workspace publishes in a calendar month (UTC), counted
	// when a publish or schedule is accepted, as the plan's quota is.
	PostsPerMonth *int `json:"posts_per_month"`
	// Accounts caps the workspace's connected accounts.
	Accounts *int `json:"accounts"`
}

// Queue is a workspace's posting queue: a weekly list of time slots, read in one zone, that a
// post added to the queue is scheduled in (the earliest one free for its accounts).
type Queue struct {
	// Timezone is the IANA zone the slots' times are read in.
	Timezone string `json:"timezone"`
	// Slots are in weekday then time order, none twice.
	Slots []QueueSlot `json:"slots"`
}

// QueueSlot is one weekly time: Weekday is "monday" … "sunday", Time is "HH:MM" (24-hour).
type QueueSlot struct {
	Weekday string `json:"weekday"`
	Time    string `json:"time"`
}

// Main reports whether w is its user's main workspace.
func (w *Workspace) Main() bool { return w.ID == MainWorkspace }

// Scope is the key of w's objects in the indexes (Scope).
func (w *Workspace) Scope() string {
	if w.Main() {
		return w.UserID
	}
	return w.ID
}

// ObjectID is the WorkspaceID w's objects carry: "" for the main workspace.
func (w *Workspace) ObjectID() string {
	if w.Main() {
		return ""
	}
	return w.ID
}

// Scope is the index key of the workspace an object belongs to: workspaceID, or for an object of
// its user's main workspace (workspaceID "" or MainWorkspace) the user's own id.
func Scope(userID, workspaceID string) string {
	if workspaceID == "" || workspaceID == MainWorkspace {
		return userID
	}
	return workspaceID
}

// WorkspaceOf is the API id of the workspace an object with the given WorkspaceID belongs to.
func WorkspaceOf(workspaceID string) string {
	if workspaceID == "" {
		return MainWorkspace
	}
	return workspaceID
}

// Scope is the index key of the account's workspace.
func (a *Account) Scope() string { return Scope(a.UserID, a.WorkspaceID) }

// Scope is the index key of the post's workspace.
func (p *Post) Scope() string { return Scope(p.UserID, p.WorkspaceID) }

// Scope is the index key of the job's workspace.
func (j *Job) Scope() string { return Scope(j.UserID, j.WorkspaceID) }

// Scope is the index key of the campaign's workspace.
func (c *Campaign) Scope() string { return Scope(c.UserID, c.WorkspaceID) }

// Scope is the index key of the media's workspace.
func (m *Media) Scope() string { return Scope(m.UserID, m.WorkspaceID) }

// Scope is the index key of the webhook's workspace.
func (w *Webhook) Scope() string { return Scope(w.UserID, w.WorkspaceID) }

// Scope is the index key of the workspace the event happened in.
func (e *Event) Scope() string { return Scope(e.UserID, e.WorkspaceID) }

// mainWorkspace is a user's main workspace as it is before its settings are changed.
func mainWorkspace(u *User) *Workspace {
	return &Workspace{ID: MainWorkspace, UserID: u.ID, Name: MainWorkspaceName, CreatedAt: u.CreatedAt}
}

// Workspace returns the user's workspace of API id id (MainWorkspace or a workspace's id), or
// ErrNotFound when the user has none of that id.
func (t *Tx) Workspace(userID, id string) (*Workspace, error) {
	if id == MainWorkspace || id == userID {
		var w Workspace
		err := t.get(bWorkspaces, mustID(userID), &w)
		if err == nil {
			return &w, nil
		}
		if err != ErrNotFound {
			return nil, err
		}
		u, err := t.User(userID)
		if err != nil {
			return nil, err
		}
		return mainWorkspace(u), nil
	}
	key, err := ID(id)
	if err != nil {
		return nil, ErrNotFound
	}
	var w Workspace
	if err := t.get(bWorkspaces, key, &w); err != nil {
		return nil, err
	}
	if w.UserID != userID {
		return nil, ErrNotFound
	}
	return &w, nil
}

// Workspaces lists the user's workspaces: main first, then the others oldest first.
func (t *Tx) Workspaces(userID string) ([]*Workspace, error) {
	main, err := t.Workspace(userID, MainWorkspace)
	if err != nil {
		return nil, err
	}
	out := []*Workspace{main}
	prefix := mustID(userID)
	c := t.kv.Bucket(bWorkspacesUser).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var w Workspace
		if err := t.get(bWorkspaces, k[16:], &w); err != nil {
			return nil, err
		}
		out = append(out, &w)
	}
	return out, nil
}

// CountWorkspaces is how many workspaces the user has besides main.
func (t *Tx) CountWorkspaces(userID string) int {
	return len(t.idsUnder(bWorkspacesUser, userID))
}

// PutWorkspace stores a workspace (the main one under its user's id).
func (t *Tx) PutWorkspace(w *Workspace) error {
	key := mustID(w.Scope())
	if !w.Main() {
		if err := t.kv.Bucket(bWorkspacesUser).Put(join(mustID(w.UserID), key), nil); err != nil {
			return err
		}
	}
	return t.put(bWorkspaces, key, w)
}

// DeleteWorkspace removes a workspace other than main. The caller has checked that it holds no
// accounts and no open posts (WorkspaceHolds); its remaining objects (drafts, finished posts,
// media, webhooks) are the caller's to remove first. Its connect links go with it.
func (t *Tx) DeleteWorkspace(w *Workspace) error {
	if w.Main() {
		return ErrNotFound
	}
	key := mustID(w.ID)
	if err := t.kv.Bucket(bWorkspacesUser).Delete(join(mustID(w.UserID), key)); err != nil {
		return err
	}
	if err := t.kv.Bucket(bPostsCount).Delete(key); err != nil {
		return err
	}
	if err := t.deleteConnectLinks(key); err != nil {
		return err
	}
	return t.kv.Bucket(bWorkspaces).Delete(key)
}

// CountAccounts is how many connected accounts a workspace holds (scope: Scope).
func (t *Tx) CountAccounts(scope string) int {
	return len(t.idsUnder(bAccountsUser, scope))
}

// idsUnder lists the ids an index of (owner | id) keys holds under owner, in key order.
func (t *Tx) idsUnder(index []byte, owner string) []string {
	prefix := mustID(owner)
	var out []string
	c := t.kv.Bucket(index).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == 32 {
			out = append(out, idString(k[16:]))
		}
	}
	return out
}

// PostIDsIn lists the ids of every post of a workspace (scope: Scope), oldest first, from the
// index alone.
func (t *Tx) PostIDsIn(scope string) []string {
	return t.idsUnder(bPostsUser, scope)
}

// OpenPosts counts a workspace's posts that are not drafts and not final: scheduled, publishing
// or waiting for approval (scope: Scope), from the counts alone.
func (t *Tx) OpenPosts(scope string) int {
	n := 0
	for _, s := range PostStatuses {
		switch s {
		case PostDraft, PostPublished, PostPartial, PostFailed:
		default:
			n += t.PostCount(scope, s, "")
		}
	}
	return n
}

// ClearWorkspace deletes up to max of a workspace's drafts, finished posts, campaigns and media
// records (their bytes recorded as orphans, for the media janitor) and its usage, and reports
// whether nothing of it is left; the caller deletes its webhooks through their actors first, and
// has checked it holds no accounts and no open posts. A workspace with more than max objects is
// cleared over several transactions.
func (t *Tx) ClearWorkspace(scope string, max int) (done bool, err error) {
	prefix := mustID(scope)
	n := 0
	keys := func(bucket []byte) [][]byte {
		var out [][]byte
		c := t.kv.Bucket(bucket).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < max; k, _ = c.Next() {
			out = append(out, append([]byte(nil), k[16:]...))
			n++
		}
		return out
	}
	for _, id := range keys(bPostsUser) {
		p, err := t.Post(idString(id))
		if err != nil {
			return false, err
		}
		if err := t.DeletePost(p); err != nil {
			return false, err
		}
	}
	for _, id := range keys(bCampaignsUser) {
		c, err := t.Campaign(idString(id))
		if err != nil {
			return false, err
		}
		if err := t.DeleteCampaign(c); err != nil {
			return false, err
		}
	}
	for _, id := range keys(bMediaUser) {
		m, err := t.Media(idString(id))
		if err != nil {
			return false, err
		}
		if err := t.DeleteMedia(m); err != nil {
			return false, err
		}
	}
	if n >= max {
		return false, nil
	}
	if err := deletePrefix(t.kv.Bucket(bUsage).Cursor(), prefix); err != nil {
		return false, err
	}
	return true, nil
}

package auth

import (
	"slices"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// ScopePostsApprove lets a key approve posts held for approval, and publish or schedule in a
// workspace that requires approval without being held (a key's scope, beside the OAuth scope
// names; no OAuth grant carries it, so that an AI host's posts in such a workspace always wait
// for a person).
const ScopePostsApprove = "posts:approve"

// KeyScopes are the scopes a key can be limited to: the OAuth scopes and posts:approve.
var KeyScopes = append(slices.Clone(Scopes), ScopePostsApprove)

// ParseKeyScopes checks a key's scopes and returns them as a set in the order of KeyScopes; ok is
// false when one is unknown.
func ParseKeyScopes(in []string) (scopes []string, ok bool) {
	for _, s := range in {
		if !slices.Contains(KeyScopes, s) {
			return nil, false
		}
	}
	for _, s := range KeyScopes {
		if slices.Contains(in, s) {
			scopes = append(scopes, s)
		}
	}
	return scopes, true
}

// Scope is the index key of the request's workspace (persistence.Scope).
func (p *Principal) Scope() string { return persistence.Scope(p.User.ID, p.WorkspaceID) }

// ObjectWorkspace is the WorkspaceID the objects the request creates carry: "" in main.
func (p *Principal) ObjectWorkspace() string {
	if p.WorkspaceID == persistence.MainWorkspace {
		return ""
	}
	return p.WorkspaceID
}

// limited reports whether the principal carries a list of scopes: an OAuth token, or a key
// limited to some.
func (p *Principal) limited() bool { return p.OAuth() || (p.Key != nil && len(p.Key.Scopes) > 0) }

// scopes is the principal's list of scopes when limited.
func (p *Principal) scopes() []string {
	if p.OAuth() {
		return p.Scopes
	}
	return p.Key.Scopes
}

// CanApprove reports whether the principal may approve posts, and publish or schedule without
// being held for approval: a key with full access or with posts:approve, the team's owner, or a
// member who is an admin or an owner. An OAuth token never can.
func (p *Principal) CanApprove() bool {
	if p.Member != nil {
		return p.HasRole(RoleAdmin)
	}
	if p.OAuth() {
		return false
	}
	if p.Key != nil && len(p.Key.Scopes) > 0 {
		return slices.Contains(p.Key.Scopes, ScopePostsApprove)
	}
	return true
}

type cachedWorkspace struct {
	w      *persistence.Workspace
	epoch  uint64
	loaded time.Time
}

// Workspace returns the user's workspace of API id id (persistence.MainWorkspace or a
// workspace's id); persistence.ErrNotFound when the user has none of that id. Workspaces are
// read on every request that names one and on every publish (their limits), so they are
// remembered as keys are: for the cache's time to live, until Invalidate, which every change of
// a workspace calls after its write commits. The record returned is shared: read it, never change
// it.
func (a *Authenticator) Workspace(userID, id string) (*persistence.Workspace, error) {
	k := userID + "|" + id
	now := a.now()
	epoch := a.epoch.Load()
	a.wsMu.RLock()
	c, hit := a.ws[k]
	a.wsMu.RUnlock()
	if hit && c.epoch == epoch && now.Sub(c.loaded) <= a.ttl {
		return c.w, nil
	}
	var w *persistence.Workspace
	err := a.store.View(func(tx *persistence.Tx) error {
		var err error
		w, err = tx.Workspace(userID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	a.wsMu.Lock()
	if len(a.ws) >= maxCached {
		a.ws = map[string]cachedWorkspace{}
	}
	a.ws[k] = cachedWorkspace{w: w, epoch: epoch, loaded: now}
	a.wsMu.Unlock()
	return w, nil
}

package persistence

import (
	"bytes"
	"time"
)

// ConnectState is one browser connect flow in progress: who started it, for which network, the
// PKCE verifier sent with the code exchange, and when it stops being valid. The state's id is
// what the signed state token carries; the record makes the token single-use (UsedAt is set by
// the first callback that presents it).
type ConnectState struct {
	ID     string `json:"id"`
	UserID string `json:"user_id"`
	// WorkspaceID is the workspace the account lands in ("" for the user's main workspace).
	WorkspaceID string `json:"workspace_id,omitempty"`
	// LinkID is the connect link the flow was started from ("" for a signed-in user's own
	// connect): such a flow is bound to the link's browser, not to a Herald session.
	LinkID string `json:"link_id,omitempty"`
	// Browser is, for a flow started from a connect link, the SHA-256 (hex) of the cookie that
	// link's page set in the browser: the callback and the picker act only for that browser.
	Browser  string `json:"browser,omitempty"`
	Platform string `json:"platform"`
	// Verifier is the PKCE code verifier ("" when the network takes no PKCE). It is useless
	// without the authorization code, which only the network and the browser see.
	Verifier  string     `json:"verifier,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	UsedAt    *time.Time `json:"used_at,omitempty"`
	// Choices are the accounts the consent granted (organisations, Pages) when it granted more
	// than one, for the person to pick from: sealed by the connect flow (they hold the tokens),
	// kept only until the pick or the state's expiry. ChosenAt is set by the pick that uses them,
	// in the same write that finds it unset (single use).
	Choices  []byte     `json:"choices,omitempty"`
	ChosenAt *time.Time `json:"chosen_at,omitempty"`
}

// The connect buckets:
//
//	connect_states  state id (16-byte UUIDv7, so oldest first) → ConnectState (JSON); deleted
//	                once expired, by the next connect that starts
var bConnectStates = []byte("connect_states")

func init() { registerBuckets(bConnectStates) }

// PutConnectState stores a connect state (new, or marked used).
func (t *Tx) PutConnectState(s *ConnectState) error {
	return t.put(bConnectStates, mustID(s.ID), s)
}

// ConnectState returns a connect state by id; ErrNotFound when there is none (never issued, or
// expired and purged).
func (t *Tx) ConnectState(id string) (*ConnectState, error) {
	var s ConnectState
	if err := t.get(bConnectStates, mustID(id), &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// PurgeConnectStates deletes states that expired before now, looking at no more than max of the
// oldest ones, and returns how many it deleted. States share one lifetime and their ids sort by
// creation, so the expired ones are at the front.
func (t *Tx) PurgeConnectStates(now time.Time, max int) (int, error) {
	b := t.kv.Bucket(bConnectStates)
	c := b.Cursor()
	var gone [][]byte
	seen := 0
	for k, v := c.First(); k != nil && seen < max; k, v = c.Next() {
		seen++
		var s ConnectState
		if err := Decode(v, &s); err == nil && !s.ExpiresAt.Before(now) {
			continue
		}
		// Expired, or unreadable (which no reader could use either).
		gone = append(gone, append([]byte(nil), k...))
	}
	// Deleting while a cursor walks can skip keys; delete after the walk.
	for _, k := range gone {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(gone), nil
}

// AccountOfNetworkUser returns the user's account on platform that belongs to the network user
// networkUserID, in any of the user's workspaces, or ErrNotFound: a network account is
// connected once per user, so that one actor holds its rate limits. Only the user's accounts on
// that platform are decoded.
func (t *Tx) AccountOfNetworkUser(userID, platform, networkUserID string) (*Account, error) {
	code, ok := platformCodes[platform]
	if !ok || networkUserID == "" {
		return nil, ErrNotFound
	}
	scopes := [][]byte{mustID(userID)}
	wc := t.kv.Bucket(bWorkspacesUser).Cursor()
	for k, _ := wc.Seek(scopes[0]); k != nil && bytes.HasPrefix(k, scopes[0]); k, _ = wc.Next() {
		scopes = append(scopes, append([]byte(nil), k[16:]...))
	}
	for _, prefix := range scopes {
		c := t.kv.Bucket(bAccountsUser).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(v) < 1 || v[0] != code {
				continue
			}
			var a Account
			if err := t.get(bAccounts, k[16:], &a); err != nil {
				return nil, err
			}
			if a.NetworkUserID == networkUserID {
				return &a, nil
			}
		}
	}
	return nil, ErrNotFound
}

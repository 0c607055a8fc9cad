package persistence

import (
	"bytes"
	"time"
)

// ConnectLink is a link an agency sends a client so that the client connects a social account to
// one of the agency's workspaces without a Herald login. The link's secret never reaches the
// store: the record is found by the secret's SHA-256 (connect_links_hash), so a copy of the store
// holds no working link.
type ConnectLink struct {
	ID     string `json:"id"`
	UserID string `json:"user_id"`
	// WorkspaceID is the workspace the accounts connected through the link land in ("" for the
	// user's main workspace).
	WorkspaceID string `json:"workspace_id,omitempty"`
	// Hash is the SHA-256 of the link's secret.
	Hash []byte `json:"hash"`
	// Prefix is the secret's first characters, which the list shows so a person can tell links
	// apart; it opens nothing.
	Prefix string `json:"prefix"`
	// Platforms are the networks the link offers (empty: every network the server connects in
	// the browser).
	Platforms []string   `json:"platforms,omitempty"`
	Note      string     `json:"note,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// Uses counts every use of the link: each consent started, account connected, and attempt
	// refused.
	Uses       int        `json:"uses"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	// Log holds the latest uses, oldest first, at most ConnectLinkLogSize.
	Log []ConnectLinkUse `json:"log,omitempty"`
	// Starts are the times consents were started in the last hour, oldest first: the link's rate
	// limit counts them.
	Starts []time.Time `json:"starts,omitempty"`
}

// ConnectLinkUse is one recorded use of a connect link.
type ConnectLinkUse struct {
	At       time.Time `json:"at"`
	Event    string    `json:"event"`
	Platform string    `json:"platform,omitempty"`
	// Detail says why a use was refused (a safe, short message; never a token or a code).
	Detail string `json:"detail,omitempty"`
}

// ConnectLinkLogSize bounds the uses a link keeps in its log.
const ConnectLinkLogSize = 20

// Record notes a use of the link at at, keeping the log bounded.
func (l *ConnectLink) Record(u ConnectLinkUse) {
	l.Uses++
	at := u.At
	l.LastUsedAt = &at
	l.Log = append(l.Log, u)
	if n := len(l.Log) - ConnectLinkLogSize; n > 0 {
		l.Log = append([]ConnectLinkUse(nil), l.Log[n:]...)
	}
}

// Scope is the index key of the link's workspace.
func (l *ConnectLink) Scope() string { return Scope(l.UserID, l.WorkspaceID) }

// The connect link buckets:
//
//	connect_links        link id (16) → ConnectLink (JSON)
//	connect_links_hash   SHA-256 of the link's secret (32) → link id (16)
//	connect_links_scope  scope (16) | link id (16) → empty: a workspace's links, oldest first
var (
	bConnectLinks      = []byte("connect_links")
	bConnectLinksHash  = []byte("connect_links_hash")
	bConnectLinksScope = []byte("connect_links_scope")
)

func init() { registerBuckets(bConnectLinks, bConnectLinksHash, bConnectLinksScope) }

// PutConnectLink stores a connect link (new, or with its uses or revocation changed). Its hash,
// workspace and id never change.
func (t *Tx) PutConnectLink(l *ConnectLink) error {
	if len(l.Hash) != SessionHashLen {
		return ErrBadSessionKey
	}
	id := mustID(l.ID)
	if err := t.kv.Bucket(bConnectLinksHash).Put(l.Hash, id); err != nil {
		return err
	}
	if err := t.kv.Bucket(bConnectLinksScope).Put(join(mustID(l.Scope()), id), nil); err != nil {
		return err
	}
	return t.put(bConnectLinks, id, l)
}

// ConnectLink returns a link by id; ErrNotFound when there is none.
func (t *Tx) ConnectLink(id string) (*ConnectLink, error) {
	key, err := ID(id)
	if err != nil {
		return nil, ErrNotFound
	}
	var l ConnectLink
	if err := t.get(bConnectLinks, key, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ConnectLinkByHash returns the link whose secret has this SHA-256; ErrNotFound when none has.
func (t *Tx) ConnectLinkByHash(hash []byte) (*ConnectLink, error) {
	if len(hash) != SessionHashLen {
		return nil, ErrNotFound
	}
	id := t.kv.Bucket(bConnectLinksHash).Get(hash)
	if id == nil {
		return nil, ErrNotFound
	}
	var l ConnectLink
	if err := t.get(bConnectLinks, id, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ConnectLinks lists a workspace's links (scope: Scope), oldest first.
func (t *Tx) ConnectLinks(scope string) ([]*ConnectLink, error) {
	prefix := mustID(scope)
	var keys [][]byte
	c := t.kv.Bucket(bConnectLinksScope).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k[16:]...))
	}
	out := make([]*ConnectLink, 0, len(keys))
	for _, k := range keys {
		var l ConnectLink
		if err := t.get(bConnectLinks, k, &l); err != nil {
			return nil, err
		}
		out = append(out, &l)
	}
	return out, nil
}

// deleteConnectLinks removes every link of a workspace (scope: its 16-byte key), with their
// index entries: a deleted workspace's links open nothing, and keep nothing behind.
func (t *Tx) deleteConnectLinks(scope []byte) error {
	var ids [][]byte
	c := t.kv.Bucket(bConnectLinksScope).Cursor()
	for k, _ := c.Seek(scope); k != nil && bytes.HasPrefix(k, scope); k, _ = c.Next() {
		ids = append(ids, append([]byte(nil), k[16:]...))
	}
	for _, id := range ids {
		// An unreadable record is deleted all the same; its hash entry, which only the record
		// names, is left for herald check to report.
		var l ConnectLink
		if t.get(bConnectLinks, id, &l) == nil && len(l.Hash) == SessionHashLen {
			if err := t.kv.Bucket(bConnectLinksHash).Delete(l.Hash); err != nil {
				return err
			}
		}
		if err := t.kv.Bucket(bConnectLinks).Delete(id); err != nil {
			return err
		}
		if err := t.kv.Bucket(bConnectLinksScope).Delete(join(scope, id)); err != nil {
			return err
		}
	}
	return nil
}

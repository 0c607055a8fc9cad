package persistence

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// ErrNotFound means the record does not exist.
var ErrNotFound = errors.New("persistence: not found")

// ErrChanged refuses a write made on a record as it was kept rather than read, when the store
// no longer holds it so (JobStoredAs, PostStoredAs): its writer reads the record and decides
// again.
var ErrChanged = errors.New("persistence: the record changed since it was kept")

// ErrExists means a unique key is taken (for example a user's e-mail).
var ErrExists = errors.New("persistence: already exists")

func (t *Tx) get(bucket, key []byte, v any) error {
	b := t.kv.Bucket(bucket).Get(key)
	if b == nil {
		return ErrNotFound
	}
	return Decode(b, v)
}

func (t *Tx) put(bucket, key []byte, v any) error {
	b, err := Encode(v)
	if err != nil {
		return err
	}
	return t.kv.Bucket(bucket).Put(key, b)
}

// ---- users ----

// CreateUser stores a new user; ErrExists when the e-mail is taken.
func (t *Tx) CreateUser(u *User) error {
	email := []byte(strings.ToLower(u.Email))
	idx := t.kv.Bucket(bUsersEmail)
	if idx.Get(email) != nil {
		return ErrExists
	}
	id := mustID(u.ID)
	if err := idx.Put(email, id); err != nil {
		return err
	}
	return t.put(bUsers, id, u)
}

// PutUser replaces a stored user's record (its e-mail cannot change here); ErrNotFound when
// there is no such user.
func (t *Tx) PutUser(u *User) error {
	id := mustID(u.ID)
	var old User
	if err := t.get(bUsers, id, &old); err != nil {
		return err
	}
	if !strings.EqualFold(old.Email, u.Email) {
		return errors.New("persistence: a user's e-mail cannot change")
	}
	return t.put(bUsers, id, u)
}

// User returns a user by id.
func (t *Tx) User(id string) (*User, error) {
	var u User
	if err := t.get(bUsers, mustID(id), &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// UserByEmail returns a user by e-mail (case-insensitive).
func (t *Tx) UserByEmail(email string) (*User, error) {
	id := t.kv.Bucket(bUsersEmail).Get([]byte(strings.ToLower(email)))
	if id == nil {
		return nil, ErrNotFound
	}
	var u User
	if err := t.get(bUsers, id, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// SandboxUser returns the sandbox demo user, if one exists.
func (t *Tx) SandboxUser() (*User, error) {
	c := t.kv.Bucket(bUsers).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var u User
		if err := Decode(v, &u); err != nil {
			return nil, err
		}
		if u.Sandbox {
			return &u, nil
		}
	}
	return nil, ErrNotFound
}

// ---- API keys ----

// PutAPIKey stores a key and keeps the hash index true: the previous hash (on regeneration) no
// longer resolves. The hash of a revoked key still resolves to its record (with RevokedAt set),
// so that authentication can say the key was revoked rather than unknown.
func (t *Tx) PutAPIKey(k *APIKey, previousHash []byte) error {
	id := mustID(k.ID)
	hashes := t.kv.Bucket(bAPIKeysHash)
	if previousHash != nil && !bytes.Equal(previousHash, k.Hash) {
		if err := hashes.Delete(previousHash); err != nil {
			return err
		}
	}
	if err := hashes.Put(k.Hash, id); err != nil {
		return err
	}
	if err := t.kv.Bucket(bAPIKeysUser).Put(join(mustID(k.UserID), id), nil); err != nil {
		return err
	}
	return t.put(bAPIKeys, id, k)
}

// APIKey returns a key by id.
func (t *Tx) APIKey(id string) (*APIKey, error) {
	var k APIKey
	if err := t.get(bAPIKeys, mustID(id), &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// APIKeyByHash returns the key with this SHA-256, revoked or not: callers check RevokedAt.
func (t *Tx) APIKeyByHash(hash []byte) (*APIKey, error) {
	id := t.kv.Bucket(bAPIKeysHash).Get(hash)
	if id == nil {
		return nil, ErrNotFound
	}
	var k APIKey
	if err := t.get(bAPIKeys, id, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// APIKeysOfUser lists a user's keys, oldest first, revoked ones included.
func (t *Tx) APIKeysOfUser(userID string) ([]*APIKey, error) {
	prefix := mustID(userID)
	var out []*APIKey
	c := t.kv.Bucket(bAPIKeysUser).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var key APIKey
		if err := t.get(bAPIKeys, k[16:], &key); err != nil {
			return nil, err
		}
		out = append(out, &key)
	}
	return out, nil
}

// ---- accounts ----

// PutAccount stores a connected account.
func (t *Tx) PutAccount(a *Account) error {
	id := mustID(a.ID)
	// The index's value is the platform's code, then 1 when the account has default options: the
	// check of a post reads the account's record only then (AccountDefaults).
	v := []byte{platformCodes[a.Platform]}
	if len(a.DefaultOptions) > 0 {
		v = append(v, 1)
	}
	if err := t.kv.Bucket(bAccountsUser).Put(join(mustID(a.Scope()), id), v); err != nil {
		return err
	}
	return t.put(bAccounts, id, a)
}

// Account returns an account by id.
func (t *Tx) Account(id string) (*Account, error) {
	var a Account
	if err := t.get(bAccounts, mustID(id), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// AccountPlatform returns the platform of the workspace's account, from the index alone; ok is false
// when the workspace has no such account.
func (t *Tx) AccountPlatform(scope, accountID string) (platform string, ok bool) {
	platform, _, ok = t.accountIndex(scope, accountID)
	return platform, ok
}

// accountIndex reads the workspace index of an account: its platform and whether it has default
// options.
func (t *Tx) accountIndex(scope, accountID string) (platform string, defaults, ok bool) {
	v := t.kv.Bucket(bAccountsUser).Get(appendID(appendID(make([]byte, 0, 32), scope), accountID))
	if len(v) < 1 {
		return "", false, false
	}
	platform, ok = platformNames[v[0]]
	return platform, len(v) > 1 && v[1] == 1, ok
}

// AccountDefaults returns the default options of the workspace's account (nil when it has none),
// reading the account's record only when its index says it has some; ok is false when the user
// has no such account.
func (t *Tx) AccountDefaults(scope, accountID string) (defaults json.RawMessage, ok bool, err error) {
	v := t.kv.Bucket(bAccountsUser).Get(appendID(appendID(make([]byte, 0, 32), scope), accountID))
	if len(v) < 1 {
		return nil, false, nil
	}
	if len(v) < 2 || v[1] != 1 {
		return nil, true, nil
	}
	a, err := t.Account(accountID)
	if err != nil {
		return nil, false, err
	}
	return a.DefaultOptions, true, nil
}

// AccountsIn lists the connected accounts of a workspace (scope: Scope), oldest first.
func (t *Tx) AccountsIn(scope string) ([]*Account, error) {
	prefix := mustID(scope)
	var out []*Account
	c := t.kv.Bucket(bAccountsUser).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var a Account
		if err := t.get(bAccounts, k[16:], &a); err != nil {
			return nil, err
		}
		out = append(out, &a)
	}
	return out, nil
}

// DeleteAccount removes an account.
func (t *Tx) DeleteAccount(a *Account) error {
	id := mustID(a.ID)
	if err := t.kv.Bucket(bAccountsUser).Delete(join(mustID(a.Scope()), id)); err != nil {
		return err
	}
	return t.kv.Bucket(bAccounts).Delete(id)
}

// ---- posts ----

func statusCode(s string) byte {
	for i, v := range PostStatuses {
		if v == s {
			return byte(i + 1)
		}
	}
	return 0
}

// platformCodes gives each platform identifier a small number: its bit in a post's summary and
// its byte in the accounts_user index.
var platformCodes = map[string]byte{
	"linkedin": 1, "instagram": 2, "youtube": 3, "pinterest": 4, "tiktok": 5,
	"threads": 6, "facebook": 7, "twitter_x": 8, "bluesky": 9,
}

var platformNames = func() map[byte]string {
	m := map[byte]string{}
	for k, v := range platformCodes {
		m[v] = k
	}
	return m
}()

// summary is a post's value in posts_user: its status and the set of its platforms, enough to
// filter a list without decoding the post.
func summary(p *Post) []byte {
	var mask uint16
	for _, t := range p.Targets {
		if c := platformCodes[t.Platform]; c != 0 {
			mask |= 1 << c
		}
	}
	return []byte{statusCode(p.Status), byte(mask >> 8), byte(mask)}
}

// PutPost stores a post (encoded with Encode, or raw when the caller encoded it already, outside
// the shared transaction) and its summary; a campaign's post moves in its campaign's index and
// counts with its status.
func (t *Tx) PutPost(p *Post, raw []byte) error {
	if raw == nil {
		var err error
		if raw, err = Encode(p); err != nil {
			return err
		}
	}
	id := mustID(p.ID)
	// The list index holds the post's status and platforms; a change that keeps them (most
	// of a post's changes) leaves the index page untouched.
	user := mustID(p.Scope())
	index, key, sum := t.kv.Bucket(bPostsUser), join(user, id), summary(p)
	// The entry's read is quiet (peek): found or not, the counts read are the owner's and the
	// campaign's.
	if old := t.peek(index, key); !bytes.Equal(old, sum) {
		if err := t.countPostChange(user, old, sum); err != nil {
			return err
		}
		if p.CampaignID != "" {
			var was byte
			if len(old) == 3 {
				was = old[0]
			}
			if err := t.moveCampaignPost(mustID(p.CampaignID), id, was, sum[0]); err != nil {
				return err
			}
		}
		if err := index.Put(key, sum); err != nil {
			return err
		}
	}
	if p.Status == PostPublished || p.Status == PostPartial {
		if err := indexPublications(t.kv.Bucket(bPublications), id, targetsOf(p)); err != nil {
			return err
		}
	}
	return t.kv.Bucket(bPosts).Put(id, raw)
}

// HasPost reports whether a post id is stored, without decoding it. The read is quiet (peek):
// its callers refuse to create a post that exists, reading nothing more.
func (t *Tx) HasPost(id string) bool {
	return t.peek(t.kv.Bucket(bPosts), mustID(id)) != nil
}

// Post returns a post by id.
func (t *Tx) Post(id string) (*Post, error) {
	var p Post
	if err := t.get(bPosts, mustID(id), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// PostStoredAs reports whether the store holds the post under id as exactly raw: see
// JobStoredAs.
func (t *Tx) PostStoredAs(id string, raw []byte) bool { return t.storedAs(bPosts, id, raw) }

// PostContent is what a network call needs of a post: its owner, text and media. Once a post has
// been published these never change.
type PostContent struct {
	UserID string `json:"user_id"`
	// WorkspaceID is the post's workspace ("" for main): its media are that workspace's.
	WorkspaceID string   `json:"workspace_id,omitempty"`
	Content     string   `json:"content"`
	MediaIDs    []string `json:"media_ids"`
	// Targets are the targets' own content, media and options, in the post's order.
	Targets []TargetContent `json:"targets"`
}

// TargetContent is what a network call needs of one target: its own text, media and options.
type TargetContent struct {
	Content      *string         `json:"content,omitempty"`
	MediaIDs     *[]string       `json:"media_ids,omitempty"`
	Options      json.RawMessage `json:"options,omitempty"`
	Thread       []ThreadPart    `json:"thread,omitempty"`
	FirstComment *FirstComment   `json:"first_comment,omitempty"`
}

// ContentOf is a post's PostContent.
func ContentOf(p *Post) *PostContent {
	c := &PostContent{UserID: p.UserID, WorkspaceID: p.WorkspaceID, Content: p.Content, MediaIDs: p.MediaIDs}
	for _, t := range p.Targets {
		if t.Content != nil || t.MediaIDs != nil || len(t.Options) > 0 || t.Thread != nil || t.FirstComment != nil {
			c.Targets = make([]TargetContent, len(p.Targets))
			for i, t := range p.Targets {
				c.Targets[i] = TargetContent{Content: t.Content, MediaIDs: t.MediaIDs, Options: t.Options, Thread: t.Thread, FirstComment: t.FirstComment}
			}
			break
		}
	}
	return c
}

// Of is the text, media and options target i's network receives: the target's own where it
// has them, else the post's.
func (c *PostContent) Of(i int) (text string, media []string, options json.RawMessage) {
	if i < 0 || i >= len(c.Targets) {
		return c.Content, c.MediaIDs, nil
	}
	t := &c.Targets[i]
	text, media = effective(t.Content, t.MediaIDs, c.Content, c.MediaIDs)
	return text, media, t.Options
}

// Steps are target i's thread parts and first comment (nil, nil when it has neither).
func (c *PostContent) Steps(i int) ([]ThreadPart, *FirstComment) {
	if i < 0 || i >= len(c.Targets) {
		return nil, nil
	}
	return c.Targets[i].Thread, c.Targets[i].FirstComment
}

// PostContent returns a post's content, decoding nothing else of the record (a third cheaper
// than Post: no targets, no times).
func (t *Tx) PostContent(id string) (*PostContent, error) {
	var c PostContent
	if err := t.get(bPosts, mustID(id), &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// DeletePost removes a post and its index entries (its campaign's included).
func (t *Tx) DeletePost(p *Post) error {
	id, user := mustID(p.ID), mustID(p.Scope())
	index, key := t.kv.Bucket(bPostsUser), join(user, id)
	if old := index.Get(key); old != nil {
		if err := t.countPostChange(user, old, nil); err != nil {
			return err
		}
	}
	if err := index.Delete(key); err != nil {
		return err
	}
	if p.CampaignID != "" {
		campaign := mustID(p.CampaignID)
		if was := t.kv.Bucket(bCampaignPosts).Get(join(campaign, id)); len(was) == 1 {
			if err := t.moveCampaignPost(campaign, id, was[0], 0); err != nil {
				return err
			}
		}
	}
	pubs := t.kv.Bucket(bPublications)
	for i := range p.Targets {
		if err := pubs.Delete(publicationKey(id, i)); err != nil {
			return err
		}
	}
	return t.kv.Bucket(bPosts).Delete(id)
}

// PostFilter selects a workspace's posts for a list page.
type PostFilter struct {
	Scope    string // the workspace (Scope)
	Status   string // "" for any
	Platform string // "" for any
	Search   string // case-insensitive substring of the content; "" for any
	// AccountID keeps the posts with a target on this connected account ("" for any). The
	// caller checks that the account is the user's; its platform narrows the walk on the
	// index's summaries before a post is read.
	AccountID       string
	AccountPlatform string
	Offset          int
	Limit           int
}

// ListPosts returns one page of a user's posts, newest first, and how many posts match in all.
// It walks the user's index backwards (ids are time-ordered), filtering status and platform on
// the index's summaries; only a search reads posts beyond the page, and of those only the
// content (storedContent).
func (t *Tx) ListPosts(f PostFilter) ([]*Post, int, error) {
	user := mustID(f.Scope)
	var wantStatus byte
	if f.Status != "" {
		wantStatus = statusCode(f.Status)
	}
	var wantMask uint16
	if f.Platform != "" {
		wantMask = 1 << platformCodes[f.Platform]
	}
	if f.AccountID != "" && f.AccountPlatform != "" {
		wantMask |= 1 << platformCodes[f.AccountPlatform]
		if f.Platform != "" && f.Platform != f.AccountPlatform {
			return nil, 0, nil // no post's target can be on both
		}
	}
	needle := strings.ToLower(f.Search)
	var search *contentMatcher
	var pc kvCursor // one cursor for the search's reads: Bucket.Get makes one per read
	if needle != "" {
		search, pc = newContentMatcher(f.Search), t.kv.Bucket(bPosts).Cursor()
	}
	posts := t.kv.Bucket(bPosts)
	var out []*Post
	total := 0
	// Without a search or an account the counts give the total, and the walk stops with the page.
	counted := needle == "" && f.AccountID == "" && schemaOf(t.kv) >= 2
	if counted {
		total = t.PostCount(f.Scope, f.Status, f.Platform)
	}
	matched := 0
	c := t.kv.Bucket(bPostsUser).Cursor()
	end := append(append([]byte(nil), user...), bytes.Repeat([]byte{0xff}, 16)...)
	var k, v []byte
	if k, _ = c.Seek(end); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, user); k, v = c.Prev() {
		if len(v) == 3 {
			if wantStatus != 0 && v[0] != wantStatus {
				continue
			}
			if wantMask != 0 && (uint16(v[1])<<8|uint16(v[2]))&wantMask == 0 {
				continue
			}
		}
		id := k[16:]
		var raw []byte
		var decoded *Post
		if f.AccountID != "" {
			if raw = posts.Get(id); raw == nil {
				continue
			}
			var post Post
			if err := Decode(raw, &post); err != nil {
				return nil, 0, err
			}
			if !slices.ContainsFunc(post.Targets, func(tg Target) bool { return tg.AccountID == f.AccountID }) {
				continue
			}
			decoded = &post
		}
		if search != nil {
			if raw == nil {
				if pk, pv := pc.Seek(id); bytes.Equal(pk, id) {
					raw = pv
				}
			}
			ok, err := search.match(raw)
			if err != nil {
				return nil, 0, err
			}
			if !ok {
				continue
			}
		}
		matched++
		if !counted {
			total = matched
		}
		if matched <= f.Offset {
			continue
		}
		if len(out) >= f.Limit {
			if counted {
				break
			}
			continue
		}
		if decoded != nil {
			out = append(out, decoded)
			continue
		}
		if raw == nil {
			raw = posts.Get(id)
		}
		var post Post
		if err := Decode(raw, &post); err != nil {
			return nil, 0, err
		}
		out = append(out, &post)
	}
	return out, total, nil
}

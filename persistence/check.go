package persistence

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Report is what a check of a database file found. It is sound when Problems is empty.
type Report struct {
	Path      string
	Size      int64  // bytes
	PageSize  int    // bytes
	Pages     uint64 // pages up to the high-water mark (the rest of the file is unused)
	FreePages int    // pages on the freelist, reused by later writes
	TxID      uint64 // the last transaction committed
	Schema    uint64 // meta's layout version (0: none)
	Buckets   []BucketKeys
	Checks    []string // what was checked, in order
	Problems  []string
	More      int // problems found beyond those listed
}

// BucketKeys is one bucket and the keys it holds.
type BucketKeys struct {
	Name string
	Keys int
}

// Sound reports whether the check found nothing wrong.
func (r *Report) Sound() bool { return len(r.Problems) == 0 && r.More == 0 }

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) >= maxProblems {
		r.More++
		return
	}
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// CheckFile checks the database file at path without writing to it: its structure page by page
// (damage.go), then, when bbolt can read it safely, bbolt's consistency check (every page
// reachable once or free, keys in order) and Herald's cross-checks of its indexes against the
// records they name. It holds the file's shared lock meanwhile, so it runs only while no server
// has the file open: ErrLocked when one does (after waiting at most lockTimeout). The error is
// for a check that could not run; what the check found is in the report.
func CheckFile(path string, lockTimeout time.Duration) (*Report, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("persistence: %s is a directory", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	defer f.Close()
	if err := lockFile(f, false, lockTimeout); err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	r := &Report{Path: path, Size: st.Size()}
	lay, problems, more := inspect(f, st.Size(), true)
	if lay != nil {
		r.PageSize, r.Pages, r.FreePages, r.TxID = int(lay.pageSize), lay.pages, lay.freePages, lay.txid
		r.Checks = append(r.Checks, fmt.Sprintf("structure: the meta pages, the freelist and the %d pages of every bucket's tree", lay.walked-2))
	} else {
		r.Checks = append(r.Checks, "structure: the meta pages")
	}
	r.Problems, r.More = problems, more
	if !r.Sound() {
		r.Checks = append(r.Checks, "bbolt's consistency check and Herald's cross-checks were not run: bbolt cannot read a file with these problems safely")
		return r, nil
	}
	// The shared lock taken above is still held: bbolt's shared lock goes with it.
	db, err := openBolt(path, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: lockTimeout})
	var de *DamagedError
	if errors.As(err, &de) {
		r.Problems, r.More = de.Problems, de.More
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("persistence: open: %w", err)
	}
	defer db.Close()
	c := checkDB(db, path)
	r.Schema, r.Buckets = c.Schema, c.Buckets
	r.Checks = append(r.Checks, c.Checks...)
	r.Problems, r.More = c.Problems, c.More
	return r, nil
}

// checkDB runs bbolt's consistency check and Herald's cross-checks on an open database whose
// structure was inspected (so that bbolt reads only pages the file holds), with no writer at
// work.
func checkDB(db *bolt.DB, path string) *Report {
	r := &Report{Path: path}
	err := guard(path, func() error {
		return db.View(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				r.problem("bbolt's check: %v", err)
			}
			r.Checks = append(r.Checks, "bbolt's consistency check: every page reachable once or free, keys in order")
			r.Schema = schemaOf(newBoltTx(tx))
			if err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
				r.Buckets = append(r.Buckets, BucketKeys{Name: bucketName(name), Keys: b.Stats().KeyN})
				return nil
			}); err != nil {
				return err
			}
			if r.Sound() {
				crossCheck(tx, r)
			} else {
				r.Checks = append(r.Checks, "Herald's cross-checks were not run: bbolt's check failed")
			}
			return nil
		})
	})
	var de *DamagedError
	if errors.As(err, &de) {
		r.Problems = append(r.Problems, de.Problems...)
	} else if err != nil {
		r.problem("reading the file failed: %v", err)
	}
	return r
}

// indexCheck is one of Herald's cross-checks: every entry of an index names a record that
// exists.
type indexCheck struct {
	index, records []byte
	form           string
	// id returns the record key an index entry names (nil when the entry is not of its form).
	id func(k, v []byte) []byte
}

func suffixOf(n int) func(k, _ []byte) []byte {
	return func(k, _ []byte) []byte {
		if len(k) != n {
			return nil
		}
		return k[n-16:]
	}
}

func valueID(_, v []byte) []byte {
	if len(v) != 16 {
		return nil
	}
	return v
}

func wholeKey(n int) func(k, _ []byte) []byte {
	return func(k, _ []byte) []byte {
		if len(k) != n {
			return nil
		}
		return k
	}
}

// indexChecks are the indexes whose every entry must name an existing record (doc.go's bucket
// tree). Indexes that may outlive their records by design (schedule entries of deleted posts,
// jobs_post, sessions_user after an unreadable session was swept) are not among them.
var indexChecks = []indexCheck{
	{bPostsUser, bPosts, "workspace | post id", suffixOf(32)},
	{bPublications, bPosts, "→ post id | target", func(_, v []byte) []byte {
		if len(v) != 18 {
			return nil
		}
		return v[:16]
	}},
	{bAPIKeysHash, bAPIKeys, "→ key id", valueID},
	{bAPIKeysUser, bAPIKeys, "user id | key id", suffixOf(32)},
	{bUsersEmail, bUsers, "→ user id", valueID},
	{bAccountsUser, bAccounts, "workspace | account id", suffixOf(32)},
	{bJobsActive, bJobs, "tracking id", wholeKey(16)},
	{bJobsWaiting, bJobs, "account id | tracking id | target", func(k, _ []byte) []byte {
		if len(k) != 34 {
			return nil
		}
		return k[16:32]
	}},
	{bWebhooksUser, bWebhooks, "workspace | webhook id", suffixOf(32)},
	{bDeliveriesPending, bDeliveries, "webhook id | delivery id", wholeKey(32)},
	{bMediaUser, bMedia, "workspace | media id", suffixOf(32)},
	{bMediaKey, bMedia, "→ media id", valueID},
	{bMediaPending, bMedia, "time | media id", suffixOf(24)},
	{bCampaignsUser, bCampaigns, "workspace | campaign id", suffixOf(32)},
	{bWorkspacesUser, bWorkspaces, "user id | workspace id", suffixOf(32)},
	{bMembersOwner, bMembers, "owner id | member id", suffixOf(32)},
	{bInvitationsHash, bInvitations, "→ invitation id", valueID},
	{bInvitationsOwner, bInvitations, "owner id | invitation id", suffixOf(32)},
	{bCampaignPosts, bPosts, "campaign id | post id", suffixOf(32)},
	{bConnectLinksHash, bConnectLinks, "→ link id", valueID},
	{bConnectLinksScope, bConnectLinks, "workspace | link id", suffixOf(32)},
}

// crossChecks lists at most this many problems of one cross-check, then counts the others.
const crossCheckListed = 5

// crossCheck runs Herald's own checks: cheap ones, over keys and short values only (no record
// is decoded), so that they stay a small part of a check's time.
func crossCheck(tx *bolt.Tx, r *Report) {
	for _, ic := range indexChecks {
		index, records := tx.Bucket(ic.index), tx.Bucket(ic.records)
		if index == nil || records == nil {
			continue // a store of an older layout, or a bucket missing (listed below)
		}
		bad := 0
		_ = index.ForEach(func(k, v []byte) error {
			id := ic.id(k, v)
			var msg string
			switch {
			case id == nil:
				msg = fmt.Sprintf("%s: entry %x is not of the form %s", ic.index, k, ic.form)
			case records.Get(id) == nil:
				msg = fmt.Sprintf("%s: entry %x names %s %s, which is not in %s", ic.index, k, singular(ic.records), idString(id), ic.records)
			default:
				return nil
			}
			if bad++; bad <= crossCheckListed {
				r.problem("%s", msg)
			}
			return nil
		})
		if bad > crossCheckListed {
			r.problem("%s: %d more entries like these", ic.index, bad-crossCheckListed)
		}
	}
	r.Checks = append(r.Checks, fmt.Sprintf("Herald's cross-checks: %d indexes name records that exist", len(indexChecks)))
	checkPostIndex(tx, r)
	checkActiveJobCount(tx, r)
	checkScopes(tx, r)
	schema := schemaOf(newBoltTx(tx))
	for _, name := range bucketNames {
		if tx.Bucket(name) == nil && schema >= bucketSince[string(name)] {
			r.problem("bucket %s is missing", name)
		}
	}
}

func singular(bucket []byte) string {
	s := string(bucket)
	switch s {
	case "posts", "users", "accounts", "jobs", "webhooks", "deliveries", "campaigns":
		return s[:len(s)-1]
	case "apikeys":
		return "API key"
	case "connect_links":
		return "connect link"
	}
	return s
}

// bucketSince names the buckets a layout version added: a store last written by an earlier
// layout has none of them until this code opens it for writing, which creates them.
// The member and connect-link buckets start empty and came with no layout version of their
// own: a store this code has not yet opened for writing may lack them, whatever its layout.
var bucketSince = map[string]uint64{string(bWorkspaces): 6, string(bWorkspacesUser): 6, string(bUsage): 6,
	string(bMembers): math.MaxUint64, string(bMembersOwner): math.MaxUint64, string(bInvitations): math.MaxUint64,
	string(bInvitationsHash): math.MaxUint64, string(bInvitationsOwner): math.MaxUint64,
	string(bConnectLinks): math.MaxUint64, string(bConnectLinksHash): math.MaxUint64, string(bConnectLinksScope): math.MaxUint64}

// scopedIndexes are the indexes keyed by a workspace's scope (workspaces.go).
var scopedIndexes = [][]byte{bAccountsUser, bPostsUser, bPostsCount, bCampaignsUser, bMediaUser, bWebhooksUser, bConnectLinksScope}

// checkScopes checks that every entry of the indexes keyed by a workspace names a workspace that
// exists: a user (its main workspace) or a workspace in workspaces whose user exists.
func checkScopes(tx *bolt.Tx, r *Report) {
	users, workspaces := tx.Bucket(bUsers), tx.Bucket(bWorkspaces)
	if users == nil {
		return
	}
	known := map[[16]byte]bool{}
	exists := func(scope []byte) bool {
		var k [16]byte
		copy(k[:], scope)
		if ok, seen := known[k]; seen {
			return ok
		}
		ok := users.Get(scope) != nil
		if !ok && workspaces != nil {
			var w struct {
				UserID string `json:"user_id"`
			}
			if v := workspaces.Get(scope); v != nil && json.Unmarshal(v, &w) == nil {
				if id, err := ID(w.UserID); err == nil {
					ok = users.Get(id) != nil
				}
			}
		}
		known[k] = ok
		return ok
	}
	for _, name := range scopedIndexes {
		index := tx.Bucket(name)
		if index == nil {
			continue
		}
		bad := 0
		_ = index.ForEach(func(k, _ []byte) error {
			if len(k) < 16 || exists(k[:16]) {
				return nil
			}
			if bad++; bad <= crossCheckListed {
				r.problem("%s: entry %x names workspace %s, which is neither a user nor a user's workspace", name, k, idString(k[:16]))
			}
			return nil
		})
		if bad > crossCheckListed {
			r.problem("%s: %d more entries like these", name, bad-crossCheckListed)
		}
	}
	r.Checks = append(r.Checks, fmt.Sprintf("Herald's cross-checks: the entries of %d indexes name workspaces that exist", len(scopedIndexes)))
}

// checkActiveJobCount checks that the count of active jobs kept in meta (layout 5) is the number
// of jobs_active's entries.
func checkActiveJobCount(tx *bolt.Tx, r *Report) {
	meta, active := tx.Bucket(bMeta), tx.Bucket(bJobsActive)
	if meta == nil || active == nil {
		return
	}
	v := meta.Get(activeJobsKey)
	if len(v) != 8 {
		return // a store of an earlier layout: counted when opened for writing
	}
	n := active.Stats().KeyN
	if counted := binary.BigEndian.Uint64(v); counted != uint64(n) {
		r.problem("meta: %d active jobs counted, jobs_active has %d", counted, n)
	}
	r.Checks = append(r.Checks, "Herald's cross-checks: the count of active jobs matches jobs_active")
}

// checkPostIndex checks that every post has its posts_user entry, and that posts_count holds
// what posts_user counts.
func checkPostIndex(tx *bolt.Tx, r *Report) {
	index, posts, counts := tx.Bucket(bPostsUser), tx.Bucket(bPosts), tx.Bucket(bPostsCount)
	if index == nil || posts == nil || counts == nil {
		return
	}
	indexed := map[[16]byte]bool{}
	recount := map[[16]byte]postCounts{}
	_ = index.ForEach(func(k, v []byte) error {
		if len(k) != 32 {
			return nil // reported by indexChecks
		}
		var user, post [16]byte
		copy(user[:], k[:16])
		copy(post[:], k[16:])
		indexed[post] = true
		c := recount[user]
		if c == nil {
			c = make(postCounts, countsSize)
			recount[user] = c
		}
		c.add(v, +1)
		return nil
	})
	bad := 0
	_ = posts.ForEach(func(k, _ []byte) error {
		var id [16]byte
		copy(id[:], k)
		if len(k) == 16 && indexed[id] {
			return nil
		}
		if bad++; bad <= crossCheckListed {
			r.problem("posts: post %s has no posts_user entry (lists do not show it)", idString(k))
		}
		return nil
	})
	if bad > crossCheckListed {
		r.problem("posts: %d more posts without a posts_user entry", bad-crossCheckListed)
	}
	bad = 0
	users := make([][16]byte, 0, len(recount))
	for u := range recount {
		users = append(users, u)
	}
	sort.Slice(users, func(i, j int) bool { return bytes.Compare(users[i][:], users[j][:]) < 0 })
	zero := make(postCounts, countsSize)
	for _, u := range users {
		if stored := counts.Get(u[:]); !bytes.Equal(stored, recount[u]) {
			if bad++; bad <= crossCheckListed {
				r.problem("posts_count: user %s's counts differ from posts_user (%d posts counted, posts_user has %d)",
					idString(u[:]), postCounts(stored).get(0, 0), recount[u].get(0, 0))
			}
		}
	}
	_ = counts.ForEach(func(k, v []byte) error {
		var u [16]byte
		copy(u[:], k)
		if len(k) == 16 && recount[u] != nil || bytes.Equal(v, zero) {
			return nil
		}
		if bad++; bad <= crossCheckListed {
			r.problem("posts_count: user %s has %d posts counted and none in posts_user", idString(k), postCounts(v).get(0, 0))
		}
		return nil
	})
	if bad > crossCheckListed {
		r.problem("posts_count: %d more users whose counts differ", bad-crossCheckListed)
	}
	r.Checks = append(r.Checks, "Herald's cross-checks: every post is in posts_user, and posts_count matches posts_user")
}

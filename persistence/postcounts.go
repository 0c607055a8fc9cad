package persistence

import (
	"encoding/binary"
	"fmt"
)

// A user's post counts answer a list's pagination.total without walking the user's whole index:
// posts_count holds, per user, how many posts there are of each status on each platform, in the
// same transactions as the posts themselves. Cell [s][p] counts the posts of status code s (0:
// any status) that have a target on platform code p (0: any platform). Only a search walks.
var bPostsCount = []byte("posts_count")

func init() { registerBuckets(bPostsCount) }

const (
	countStatuses  = 8  // 0 (any) and the status codes 1..len(PostStatuses)
	countPlatforms = 16 // 0 (any) and the platform codes 1..9, with room to grow
	countsSize     = countStatuses * countPlatforms * 4
)

// postCounts is a user's counts record: uint32 cells, big-endian.
type postCounts []byte

func (c postCounts) get(status, platform byte) int {
	if len(c) != countsSize || int(status) >= countStatuses || int(platform) >= countPlatforms {
		return 0
	}
	i := (int(status)*countPlatforms + int(platform)) * 4
	return int(binary.BigEndian.Uint32(c[i:]))
}

// add counts one post of the given summary (status code, platform bit set) delta times.
func (c postCounts) add(sum []byte, delta int) {
	if len(sum) != 3 {
		return
	}
	mask := uint16(sum[1])<<8 | uint16(sum[2])
	for _, s := range []byte{0, sum[0]} {
		if int(s) >= countStatuses {
			continue
		}
		for p := 0; p < countPlatforms; p++ {
			if p != 0 && mask&(1<<p) == 0 {
				continue
			}
			i := (int(s)*countPlatforms + p) * 4
			binary.BigEndian.PutUint32(c[i:], uint32(int(binary.BigEndian.Uint32(c[i:]))+delta))
		}
	}
}

// countPostChange moves a post of the user from summary old to summary new (nil: none) in the
// user's counts.
func (t *Tx) countPostChange(user, old, new []byte) error {
	b := t.kv.Bucket(bPostsCount)
	c := make(postCounts, countsSize)
	copy(c, t.peek(b, user)) // counts: a quiet read (peek)
	if old != nil {
		c.add(old, -1)
	}
	if new != nil {
		c.add(new, +1)
	}
	return b.Put(user, c)
}

// PostCount returns how many posts the workspace (scope: Scope) has of the status ("" for any) on the platform (""
// for any), from the counts alone.
func (t *Tx) PostCount(scope, status, platform string) int {
	var s, p byte
	if status != "" {
		if s = statusCode(status); s == 0 {
			return 0
		}
	}
	if platform != "" {
		var ok bool
		if p, ok = platformCodes[platform]; !ok {
			return 0
		}
	}
	return postCounts(t.kv.Bucket(bPostsCount).Get(mustID(scope))).get(s, p)
}

// rebuildPostCounts recounts every user's posts from posts_user: once, when a store written
// before the counts existed is opened.
func rebuildPostCounts(tx kvTx) error {
	counts := map[string]postCounts{}
	c := tx.Bucket(bPostsUser).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 32 {
			continue
		}
		user := string(k[:16])
		pc := counts[user]
		if pc == nil {
			pc = make(postCounts, countsSize)
			counts[user] = pc
		}
		pc.add(v, +1)
	}
	b := tx.Bucket(bPostsCount)
	for user, pc := range counts {
		if err := b.Put([]byte(user), pc); err != nil {
			return fmt.Errorf("persistence: store post counts: %w", err)
		}
	}
	return nil
}

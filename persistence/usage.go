package persistence

import (
	"encoding/binary"
	"sort"
)

// A workspace's usage, for billing its client and for its limits: per calendar month (UTC), the
// posts and targets published and failed per network, the posts accepted for publishing (what
// limits.posts_per_month caps), and the API requests made in it.
//
//	usage  workspace (16) | "YYYY-MM" (7) → UsageMetrics × 16 platform cells, uint32 big-endian
//
// Outcomes are counted in the transaction that records a job's outcome on its post, acceptances
// in the one that accepts the publish or schedule, so neither is lost or counted twice at a
// crash. API requests are counted in memory and added every few seconds (http/server): a
// crash loses at most those seconds' requests.
var bUsage = []byte("usage")

func init() { registerBuckets(bUsage) }

// Usage metrics: the rows of a usage record.
const (
	UsagePostsPublished = iota
	UsagePostsFailed
	UsageTargetsPublished
	UsageTargetsFailed
	UsagePostsAccepted
	UsageAPIRequests
	usageMetrics
)

const (
	usagePlatforms = 16 // 0 (every network) and the platform codes 1..9, with room to grow
	usageSize      = usageMetrics * usagePlatforms * 4
)

// Usage is one workspace's usage in one month.
type Usage []byte

// Get returns metric m on platform ("" for every network, or the whole workspace for metrics
// that are not per network: accepted posts, API requests).
func (u Usage) Get(m int, platform string) int {
	p := byte(0)
	if platform != "" {
		p = platformCodes[platform]
	}
	if len(u) != usageSize || m < 0 || m >= usageMetrics {
		return 0
	}
	i := (m*usagePlatforms + int(p)) * 4
	return int(binary.BigEndian.Uint32(u[i:]))
}

// add counts n of metric m on platform and in the every-network cell.
func (u Usage) add(m int, platform string, n int) {
	cells := []byte{0}
	if c := platformCodes[platform]; c != 0 {
		cells = append(cells, c)
	}
	for _, p := range cells {
		i := (m*usagePlatforms + int(p)) * 4
		binary.BigEndian.PutUint32(u[i:], uint32(int(binary.BigEndian.Uint32(u[i:]))+n))
	}
}

// Platforms lists the networks the record counts anything on, in code order.
func (u Usage) Platforms() []string {
	var out []string
	for p := byte(1); p < usagePlatforms; p++ {
		name, ok := platformNames[p]
		if !ok {
			continue
		}
		for m := 0; m < usageMetrics; m++ {
			if u.Get(m, name) != 0 {
				out = append(out, name)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return platformCodes[out[i]] < platformCodes[out[j]] })
	return out
}

func usageKey(scope, month string) []byte {
	return append(appendID(make([]byte, 0, 16+len(month)), scope), month...)
}

// Usage returns a workspace's usage in month ("2006-01"; scope: Scope): zeros when nothing was
// counted.
func (t *Tx) Usage(scope, month string) Usage {
	u := make(Usage, usageSize)
	if v := t.peek(t.kv.Bucket(bUsage), usageKey(scope, month)); len(v) == usageSize { // counts: a quiet read (peek)
		copy(u, v)
	}
	return u
}

// AddUsage counts n of metric m on platform ("" for none) in the workspace's month.
func (t *Tx) AddUsage(scope, month string, m int, platform string, n int) error {
	u := t.Usage(scope, month)
	u.add(m, platform, n)
	return t.kv.Bucket(bUsage).Put(usageKey(scope, month), u)
}

// CountOutcome counts what a job's outcome did to its post in the workspace's month: each
// target the job settled, published or failed, per network; and the post, per network it
// published (or, with no target published on it, failed) on, and once in all as published
// when any target published, else failed. done lists the post's targets the job settled.
func (t *Tx) CountOutcome(p *Post, month string, done []int) error {
	if len(done) == 0 {
		return nil
	}
	u := t.Usage(p.Scope(), month)
	published := map[string]bool{}
	failed := map[string]bool{}
	for _, i := range done {
		if i < 0 || i >= len(p.Targets) {
			continue
		}
		tg := &p.Targets[i]
		switch tg.Status {
		case TargetPublished:
			u.add(UsageTargetsPublished, tg.Platform, 1)
			published[tg.Platform] = true
		case TargetFailed:
			u.add(UsageTargetsFailed, tg.Platform, 1)
			failed[tg.Platform] = true
		}
	}
	for pf := range published {
		u.addOnly(UsagePostsPublished, pf)
	}
	for pf := range failed {
		if !published[pf] {
			u.addOnly(UsagePostsFailed, pf)
		}
	}
	switch {
	case len(published) > 0:
		u.addOnly(UsagePostsPublished, "")
	case len(failed) > 0:
		u.addOnly(UsagePostsFailed, "")
	}
	return t.kv.Bucket(bUsage).Put(usageKey(p.Scope(), month), u)
}

// addOnly counts one of metric m in one cell: the platform's, or with "" the every-network one.
func (u Usage) addOnly(m int, platform string) {
	p := byte(0)
	if platform != "" {
		p = platformCodes[platform]
	}
	i := (m*usagePlatforms + int(p)) * 4
	binary.BigEndian.PutUint32(u[i:], binary.BigEndian.Uint32(u[i:])+1)
}

// Plus returns a copy of u with n more of metric m on platform ("" for none).
func (u Usage) Plus(m int, platform string, n int) Usage {
	c := make(Usage, usageSize)
	copy(c, u)
	c.add(m, platform, n)
	return c
}

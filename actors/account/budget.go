package account

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/platforms"
)

// Rule is one published limit of a network that a publish spends: Limit units per Window, Cost
// units per publish. PerPlatform rules are shared by every account of the network (an app's or a
// project's quota, such as YouTube's daily units); the others are per account.
type Rule struct {
	Name        string
	Limit       int
	Window      time.Duration
	Cost        int
	PerPlatform bool
}

// DefaultRules are the networks' published limits on creating posts (../reference: networks.md),
// the ones a publish spends. Herald never spends more than they allow; live signals from the
// network (remaining/reset headers, 429s, quota codes) tighten them further.
var DefaultRules = map[platforms.Platform][]Rule{
	platforms.X:         {{Name: "tweets", Limit: 100, Window: 15 * time.Minute, Cost: 1}, xTweetsApp},
	platforms.Bluesky:   {{Name: "writes", Limit: 5000, Window: time.Hour, Cost: 3}, {Name: "writes_day", Limit: 35000, Window: 24 * time.Hour, Cost: 3}},
	platforms.LinkedIn:  {{Name: "posts", Limit: 150, Window: 24 * time.Hour, Cost: 1}},
	platforms.Facebook:  {{Name: "calls", Limit: 200, Window: time.Hour, Cost: 2}},
	platforms.Instagram: {{Name: "publish", Limit: 100, Window: 24 * time.Hour, Cost: 1}},
	platforms.Threads:   {{Name: "publish", Limit: 250, Window: 24 * time.Hour, Cost: 1}},
	platforms.YouTube:   {{Name: "units", Limit: 10000, Window: 24 * time.Hour, Cost: 1600, PerPlatform: true}},
	platforms.Pinterest: {{Name: "org_write", Limit: 100, Window: time.Minute, Cost: 1}, pinRequests},
	platforms.TikTok:    {{Name: "init", Limit: 6, Window: time.Minute, Cost: 1}, {Name: "daily_posts", Limit: 15, Window: 24 * time.Hour, Cost: 1}},
}

// DefaultStepRules are what a step after a post (a thread's part, a first comment: steps.go)
// spends where the network does not count it as a post: a Threads reply counts in its 1,000
// replies a day, not its 250 posts; a comment on Instagram is one call of its Business Use Case
// budget (4,800 a day and more with the account's reach); on Facebook one Graph call (the window
// of its publishes, which cost two); on YouTube 50 units of the project's daily quota. Elsewhere
// the step spends the publish rules: an X reply is a POST /2/tweets, a Bluesky one a
// createRecord, and LinkedIn publishes no limit of its comments (so they are counted as posts,
// the conservative choice).
var DefaultStepRules = map[platforms.Platform][]Rule{
	platforms.Threads:   {{Name: "replies", Limit: 1000, Window: 24 * time.Hour, Cost: 1}},
	platforms.Instagram: {{Name: "buc_calls", Limit: 4800, Window: 24 * time.Hour, Cost: 1}},
	platforms.Facebook:  {{Name: "calls", Limit: 200, Window: time.Hour, Cost: 1}},
	platforms.YouTube:   {{Name: "units", Limit: 10000, Window: 24 * time.Hour, Cost: 50, PerPlatform: true}},
}

// pinRequests is Pinterest's limit on every call of a user, whatever its category: 100 a second
// (Standard access). A Pin's hundred writes of a minute could otherwise go out within one second,
// and any other call of the account in that second (its boards read to check a post's board)
// would be refused: publishes and the reads of the account's boards and analytics spend it.
var pinRequests = Rule{Name: "requests", Limit: 100, Window: time.Second, Cost: 1}

// xTweetsApp is X's limit on POST /2/tweets per app (10,000 a day), shared by every X account
// Herald publishes through: a hundred accounts at 100 posts per 15 minutes would reach it in
// two and a half hours. Publishes and replies spend it.
var xTweetsApp = Rule{Name: "tweets_app", Limit: 10000, Window: 24 * time.Hour, Cost: 1, PerPlatform: true}

// DefaultReadRules are the networks' published limits on the live calls of analytics and the
// inbox (reads.go), per operation. A rule whose name and scope match a publish rule of
// DefaultRules shares its window: an X reply is a POST /2/tweets like a publish, a Bluesky reply
// a createRecord, and YouTube's units are one daily quota per project (a list costs 1 unit, a
// comments.insert 50, a videos.insert 1600).
var DefaultReadRules = map[platforms.Platform]map[ReadOp][]Rule{
	platforms.X: {
		OpMetrics:      {{Name: "read:tweet_lookup", Limit: 900, Window: 15 * time.Minute, Cost: 1}},
		OpComments:     {{Name: "read:search_recent", Limit: 300, Window: 15 * time.Minute, Cost: 1}},
		OpReply:        {{Name: "tweets", Limit: 100, Window: 15 * time.Minute, Cost: 1}, xTweetsApp},
		OpConversation: {{Name: "read:dm_events", Limit: 15, Window: 15 * time.Minute, Cost: 1}},
		OpSendMessage:  {{Name: "dm_send", Limit: 15, Window: 15 * time.Minute, Cost: 1}, {Name: "dm_send_day", Limit: 1440, Window: 24 * time.Hour, Cost: 1}, {Name: "dm_send_app", Limit: 1440, Window: 24 * time.Hour, Cost: 1, PerPlatform: true}},
		// GET /2/dm_events shares the DM lookup window with a conversation's dm_events.
		OpConversations: {{Name: "read:dm_events", Limit: 15, Window: 15 * time.Minute, Cost: 1}},
		// POST and DELETE /2/users/:id/likes: 50 per 15 minutes and 1,000 a day per user.
		OpLike: {{Name: "likes", Limit: 50, Window: 15 * time.Minute, Cost: 1}, {Name: "likes_day", Limit: 1000, Window: 24 * time.Hour, Cost: 1}},
		// PUT /2/tweets/:id/hidden: 50 per 15 minutes per user.
		OpHide: {{Name: "hide_replies", Limit: 50, Window: 15 * time.Minute, Cost: 1}},
	},
	platforms.Bluesky: {
		OpMetrics:       {{Name: "read:requests", Limit: 3000, Window: 5 * time.Minute, Cost: 1}},
		OpComments:      {{Name: "read:requests", Limit: 3000, Window: 5 * time.Minute, Cost: 1}},
		OpReply:         {{Name: "read:requests", Limit: 3000, Window: 5 * time.Minute, Cost: 1}, {Name: "writes", Limit: 5000, Window: time.Hour, Cost: 3}, {Name: "writes_day", Limit: 35000, Window: 24 * time.Hour, Cost: 3}},
		OpConversation:  {{Name: "read:requests", Limit: 3000, Window: 5 * time.Minute, Cost: 1}},
		OpSendMessage:   {{Name: "read:requests", Limit: 3000, Window: 5 * time.Minute, Cost: 1}},
		OpConversations: {{Name: "read:requests", Limit: 3000, Window: 5 * time.Minute, Cost: 1}},
		// A like is a createRecord (3 write points), an unlike a deleteRecord (1), a hide a
		// putRecord of the threadgate (3 when it creates it, 2 when it updates it): the most.
		OpLike: {{Name: "read:requests", Limit: 3000, Window: 5 * time.Minute, Cost: 1}, {Name: "writes", Limit: 5000, Window: time.Hour, Cost: 3}, {Name: "writes_day", Limit: 35000, Window: 24 * time.Hour, Cost: 3}},
		OpHide: {{Name: "read:requests", Limit: 3000, Window: 5 * time.Minute, Cost: 1}, {Name: "writes", Limit: 5000, Window: time.Hour, Cost: 3}, {Name: "writes_day", Limit: 35000, Window: 24 * time.Hour, Cost: 3}},
	},
	platforms.YouTube: {
		OpMetrics:  {{Name: "units", Limit: 10000, Window: 24 * time.Hour, Cost: 1, PerPlatform: true}},
		OpComments: {{Name: "units", Limit: 10000, Window: 24 * time.Hour, Cost: 1, PerPlatform: true}},
		OpReply:    {{Name: "units", Limit: 10000, Window: 24 * time.Hour, Cost: 50, PerPlatform: true}},
		// comments.setModerationStatus costs 50 units.
		OpHide: {{Name: "units", Limit: 10000, Window: 24 * time.Hour, Cost: 50, PerPlatform: true}},
		// videoCategories.list and playlists.list cost 1 unit each.
		OpChoices: {{Name: "units", Limit: 10000, Window: 24 * time.Hour, Cost: 2, PerPlatform: true}},
	},
	platforms.TikTok: {
		OpMetrics: {{Name: "read:display", Limit: 600, Window: time.Minute, Cost: 1}},
		// POST /v2/post/publish/creator_info/query/: 20 requests per minute per user token.
		OpChoices: {{Name: "read:creator_info", Limit: 20, Window: time.Minute, Cost: 1}},
	},
	platforms.Pinterest: {
		OpMetrics: {{Name: "read:org_analytics", Limit: 300, Window: time.Minute, Cost: 1}, pinRequests},
		// GET /v5/boards is an org_read call: 1,000 per minute per user.
		OpChoices: {{Name: "read:org_read", Limit: 1000, Window: time.Minute, Cost: 1}, pinRequests},
	},
}

// ScaleRules scales every rule's limit (not its window), the way the simulator's LimitScale does,
// so that budgets and simulated networks agree in tests and benchmarks.
func ScaleRules(rules map[platforms.Platform][]Rule, scale float64) map[platforms.Platform][]Rule {
	out := map[platforms.Platform][]Rule{}
	for p, rs := range rules {
		for _, r := range rs {
			r.Limit = int(math.Max(1, math.Floor(float64(r.Limit)*scale)))
			if r.Cost > r.Limit {
				r.Cost = r.Limit
			}
			out[p] = append(out[p], r)
		}
	}
	return out
}

// OverrideRules changes rules from a specification "platform:rule=LIMIT/WINDOW,..." (for example
// "twitter_x:tweets=50/5s"), for networks whose granted limits differ from the published ones.
func OverrideRules(rules map[platforms.Platform][]Rule, spec string) (map[platforms.Platform][]Rule, error) {
	out := map[platforms.Platform][]Rule{}
	for p, rs := range rules {
		out[p] = append([]Rule(nil), rs...)
	}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok1 := strings.Cut(part, "=")
		plat, rule, ok2 := strings.Cut(name, ":")
		limit, window, ok3 := strings.Cut(value, "/")
		n, err1 := strconv.Atoi(limit)
		w, err2 := time.ParseDuration(window)
		if !ok1 || !ok2 || !ok3 || err1 != nil || err2 != nil || n <= 0 || w <= 0 {
			return nil, fmt.Errorf("budget rule %q: want platform:rule=LIMIT/WINDOW, e.g. twitter_x:tweets=50/5s", part)
		}
		found := false
		for i := range out[platforms.Platform(plat)] {
			r := &out[platforms.Platform(plat)][i]
			if r.Name == rule {
				r.Limit, r.Window, found = n, w, true
				r.Cost = min(r.Cost, n)
			}
		}
		if !found {
			return nil, fmt.Errorf("budget rule %q: %s has no rule %q", part, plat, rule)
		}
	}
	return out, nil
}

// Budgets keeps every account's rate windows. Windows are fixed, opening with the first publish
// after the previous one closed, as most networks count; Herald adds a small margin to each reset
// so that its window never closes before the network's. A window is reserved from when its first
// publish is reserved, but the network's opens when that publish reaches it, which may be later
// (its attempt is recorded first, and calls queue behind one another): when the window's first
// call is sent (Sent), the window is moved to close a window after it, with the margin.
type Budgets struct {
	mu      sync.Mutex
	rules   map[platforms.Platform][]Rule
	windows map[windowKey]*window
	blocked map[string]time.Time // account or platform → blocked until (a network said so)
	margin  func(time.Duration) time.Duration
	// shared, when set (several nodes), also counts the PerPlatform rules over every node
	// (Share).
	shared *cluster.Quotas
}

// sharedTimeout bounds a reservation's round trip to the shared quotas.
const sharedTimeout = 2 * time.Second

// Share counts the rules shared by every account of a network (PerPlatform: X's daily app limit,
// YouTube's units) over every node as well, in q: each reservation of such a rule takes its units
// from the node's chunk of the shared quota (cluster.Quotas), so that the nodes together never
// spend more than the rule allows. The per-account rules stay in this process: an account's
// actor runs on one node at a time. Call it before any reservation.
func (b *Budgets) Share(q *cluster.Quotas) { b.shared = q }

func sharedName(p platforms.Platform, r Rule) string { return "budget/" + string(p) + "/" + r.Name }

// takeShared takes n calls' units of the shared rules among rules (effective ones) after the
// local reservation succeeded; when one has not enough left it gives back what it took and
// returns when to try again. The local windows of those rules are still kept: they carry what
// the network said (Observe, a 429), and never bind otherwise.
func (b *Budgets) takeShared(p platforms.Platform, rules []Rule, n int, now time.Time) (ok bool, retryAt time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	var taken []Rule
	for _, r := range rules {
		if !r.PerPlatform {
			continue
		}
		g, err := b.shared.Take(ctx, sharedName(p, r), r.Limit, r.Window+b.margin(r.Window), n*r.Cost)
		switch {
		case err != nil:
			retryAt = now.Add(time.Second) // the database cannot be reached: try again shortly
		case !g.OK:
			retryAt = g.End
		default:
			taken = append(taken, r)
			continue
		}
		for _, t := range taken {
			b.shared.Return(sharedName(p, t), n*t.Cost)
		}
		return false, retryAt
	}
	return true, time.Time{}
}

// anyShared reports whether rules has a rule shared by the network's accounts.
func anyShared(rules []Rule) bool {
	for _, r := range rules {
		if r.PerPlatform {
			return true
		}
	}
	return false
}

// returnShared gives back n calls' units of the shared rules among rules.
func (b *Budgets) returnShared(p platforms.Platform, rules []Rule, n int) {
	if b.shared == nil {
		return
	}
	for _, r := range rules {
		if r.PerPlatform {
			b.shared.Return(sharedName(p, r), n*r.Cost)
		}
	}
}

type windowKey struct {
	rule  string
	scope string // account id, or platform for PerPlatform rules
}

type window struct {
	start time.Time
	end   time.Time
	used  int
	// sent says a call of the window was sent: its end follows the network's.
	sent bool
}

// NewBudgets builds the budgets from the rules per platform.
func NewBudgets(rules map[platforms.Platform][]Rule) *Budgets {
	return &Budgets{
		rules: rules, windows: map[windowKey]*window{}, blocked: map[string]time.Time{},
		margin: func(w time.Duration) time.Duration {
			m := w / 100
			if m < 50*time.Millisecond {
				m = 50 * time.Millisecond
			}
			if m > 5*time.Second {
				m = 5 * time.Second
			}
			return m
		},
	}
}

// Rules returns the rules of a platform.
func (b *Budgets) Rules(p platforms.Platform) []Rule { return b.rules[p] }

func scopeOf(r Rule, p platforms.Platform, account string) string {
	if r.PerPlatform {
		return "platform:" + string(p)
	}
	return account
}

// Reserve spends one publish of account on platform p at now. When any rule has no room, it
// spends nothing and returns when to try again.
func (b *Budgets) Reserve(p platforms.Platform, account string, now time.Time) (ok bool, retryAt time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, key := range []string{account, "platform:" + string(p)} {
		if until, blocked := b.blocked[key]; blocked {
			if now.Before(until) {
				return false, until
			}
			delete(b.blocked, key)
		}
	}
	rules := b.rules[p]
	ws := make([]*window, len(rules))
	for i, r := range rules {
		k := windowKey{r.Name, scopeOf(r, p, account)}
		w := b.windows[k]
		if w == nil || !now.Before(w.end) {
			w = &window{start: now, end: now.Add(r.Window + b.margin(r.Window))}
			b.windows[k] = w
		}
		if w.used+r.Cost > r.Limit {
			if w.end.After(retryAt) {
				retryAt = w.end
			}
		}
		ws[i] = w
	}
	if !retryAt.IsZero() {
		return false, retryAt
	}
	for i, r := range rules {
		ws[i].used += r.Cost
	}
	if b.shared != nil && anyShared(rules) {
		b.mu.Unlock()
		ok, retryAt := b.takeShared(p, rules, 1, now)
		b.mu.Lock()
		if !ok {
			b.refund(p, account, rules, 1)
		}
		return ok, retryAt
	}
	return true, time.Time{}
}

// refund gives back n calls of rules (effective ones) to the account's local windows; b.mu held.
func (b *Budgets) refund(p platforms.Platform, account string, rules []Rule, n int) {
	for _, r := range rules {
		if w := b.windows[windowKey{r.Name, scopeOf(r, p, account)}]; w != nil {
			w.used = max(0, w.used-n*r.Cost)
		}
	}
}

// Sent tells the budgets that a call of the account reached the network at at: the first one of
// each of its windows moves the window's end to a window after it (plus the margin) when that is
// later, so that Herald's window never closes before the network's, whatever the delay between
// reservation and call.
func (b *Budgets) Sent(p platforms.Platform, account string, at time.Time) {
	if b.shared != nil && anyShared(b.rules[p]) {
		b.sentShared(p, b.rules[p])
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.rules[p] {
		w := b.windows[windowKey{r.Name, scopeOf(r, p, account)}]
		if w == nil || w.sent || at.Before(w.start) {
			continue
		}
		w.sent = true
		if end := at.Add(r.Window + b.margin(r.Window)); end.After(w.end) {
			w.end = end
		}
	}
}

// Refund gives back a reservation that never reached the network (the call failed before it was
// sent, or the content was refused first).
func (b *Budgets) Refund(p platforms.Platform, account string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.returnShared(p, b.rules[p], 1)
	for _, r := range b.rules[p] {
		if w := b.windows[windowKey{r.Name, scopeOf(r, p, account)}]; w != nil && w.used >= r.Cost {
			w.used -= r.Cost
		}
	}
}

// Observe applies what the network said about the account's first rule (remaining and reset
// headers): Herald never believes it has more room than the network says.
func (b *Budgets) Observe(p platforms.Platform, account string, info platforms.RateInfo, now time.Time) {
	if !info.Known {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	rules := b.rules[p]
	if len(rules) == 0 {
		return
	}
	r := rules[0]
	k := windowKey{r.Name, scopeOf(r, p, account)}
	w := b.windows[k]
	if w == nil {
		w = &window{start: now, end: now.Add(r.Window + b.margin(r.Window))}
		b.windows[k] = w
	}
	if info.Limit > 0 && info.Limit < r.Limit {
		// The network grants less than its published limit: scale the remaining room down.
		used := r.Limit - info.Remaining*r.Limit/info.Limit
		if used > w.used {
			w.used = used
		}
	} else if used := r.Limit - info.Remaining*r.Cost; info.Remaining >= 0 && used > w.used {
		w.used = used
	}
	if !info.Reset.IsZero() {
		if end := info.Reset.Add(b.margin(r.Window)); end.After(w.end) {
			w.end = end
		}
	}
}

// Block stops every publish of the account (or, for a platform-wide quota, of the platform) until
// the network's reset: used when the network refused with a rate-limit signal.
func (b *Budgets) Block(p platforms.Platform, account string, until time.Time, platformWide bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := account
	if platformWide {
		key = "platform:" + string(p)
	}
	if cur, ok := b.blocked[key]; !ok || until.After(cur) {
		b.blocked[key] = until
	}
}

// Remaining reports the publishes left now for the account on p (the tightest rule).
func (b *Budgets) Remaining(p platforms.Platform, account string, now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	left := math.MaxInt
	for _, r := range b.rules[p] {
		w := b.windows[windowKey{r.Name, scopeOf(r, p, account)}]
		room := r.Limit
		if w != nil && now.Before(w.end) {
			room = r.Limit - w.used
		}
		room = b.sharedRoom(p, r, room, now)
		if n := room / max(r.Cost, 1); n < left {
			left = n
		}
	}
	if left == math.MaxInt {
		return -1
	}
	return left
}

// sentShared tells the shared quotas of rules that a call reached the network (their window's
// end follows the first call of the window over every node: one round trip per window).
func (b *Budgets) sentShared(p platforms.Platform, rules []Rule) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	for _, r := range rules {
		if r.PerPlatform {
			// A failure leaves the window's end where its first chunk put it.
			_ = b.shared.Sent(ctx, sharedName(p, r), r.Window+b.margin(r.Window))
		}
	}
}

// sharedRoom is the room of a shared rule over every node, as this node knows it, when it is
// less than room (the local window's).
func (b *Budgets) sharedRoom(p platforms.Platform, r Rule, room int, now time.Time) int {
	if b.shared == nil || !r.PerPlatform {
		return room
	}
	if used, end := b.shared.Peek(sharedName(p, r)); now.Before(end) {
		room = min(room, r.Limit-used)
	}
	return room
}

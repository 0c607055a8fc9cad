package sim

import (
	"math"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Limit is a count allowed per window.
type Limit struct {
	Count  int
	Window time.Duration
}

type limitKey struct {
	platform platforms.Platform
	bucket   string
}

type counterKey struct {
	platform platforms.Platform
	bucket   string
	user     string
}

type window struct {
	start time.Time
	used  int
}

// SetLimit overrides one rate limit (bucket names are the network file's, for example "tweets").
func (s *Sim) SetLimit(p platforms.Platform, bucket string, l Limit) {
	s.mu.Lock()
	s.limits[limitKey{p, bucket}] = l
	for k := range s.counters {
		if k.platform == p && k.bucket == bucket {
			delete(s.counters, k)
		}
	}
	s.mu.Unlock()
}

// Take spends cost units of a user's fixed window for bucket. def is the network's documented
// limit, scaled by Options.LimitScale unless SetLimit overrode it. It returns the limit, what
// remains, when the window resets, and whether the call may proceed.
func (n *Network) Take(bucket, user string, cost int, def Limit) (limit, remaining int, reset time.Time, ok bool) {
	s := n.Sim
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	l, overridden := s.limits[limitKey{n.Platform, bucket}]
	if !overridden {
		l = def
		l.Count = int(math.Max(1, math.Floor(float64(def.Count)*s.opts.LimitScale)))
	}
	k := counterKey{n.Platform, bucket, user}
	w := s.counters[k]
	if w == nil || !now.Before(w.start.Add(l.Window)) {
		w = &window{start: now}
		s.counters[k] = w
	}
	reset = w.start.Add(l.Window)
	if w.used+cost > l.Count {
		return l.Count, l.Count - w.used, reset, false
	}
	w.used += cost
	return l.Count, l.Count - w.used, reset, true
}

package app

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/actors"
)

// DefaultMaxLiveActors is the cap of live actors of each kind when --max-live-actors does not
// set one. A live actor holds about 2 KB of runtime bookkeeping plus its state (a post or a job
// record, a few KB at most), so the cap bounds each kind to some tens of MB whatever the backlog
// (docs/operations.md, Memory).
const DefaultMaxLiveActors = 10000

// ActorCaps are the caps of live actors (--max-live-actors): Default for every kind, PerKind by
// actor kind name (post, job, account, webhook, campaign). A cap of 0 is DefaultMaxLiveActors; a negative
// one means no cap.
type ActorCaps struct {
	Default int
	PerKind map[string]int
}

// For is the cap of a kind, as actors.Kind's MaxLive (0: none).
func (c ActorCaps) For(kind string) int {
	n, ok := c.PerKind[kind]
	if !ok {
		n = c.Default
	}
	switch {
	case n == 0:
		return DefaultMaxLiveActors
	case n < 0:
		return 0
	}
	return n
}

// ParseActorCaps reads --max-live-actors: a figure for every kind, kind=figure pairs, or both,
// separated by commas ("20000", "job=5000,post=20000", "8000,webhook=-1").
func ParseActorCaps(s string) (ActorCaps, error) {
	var c ActorCaps
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kind, figure, named := strings.Cut(part, "=")
		n, err := strconv.Atoi(strings.TrimSpace(figure))
		if !named {
			n, err = strconv.Atoi(part)
		}
		if err != nil {
			return ActorCaps{}, fmt.Errorf("--max-live-actors: %q is not a number or kind=number", part)
		}
		if !named {
			c.Default = n
			continue
		}
		kind = strings.TrimSpace(kind)
		switch kind {
		case "post", "job", "account", "webhook", "campaign":
		default:
			return ActorCaps{}, fmt.Errorf("--max-live-actors: unknown actor kind %q (post, job, account, webhook, campaign)", kind)
		}
		if c.PerKind == nil {
			c.PerKind = map[string]int{}
		}
		c.PerKind[kind] = n
	}
	return c, nil
}

// DefaultMaxMappedFileMB is the file-backed resident memory beyond which the pages of the bbolt
// file mapped by reads are given back to the kernel's page cache (docs/operations.md, Memory).
const DefaultMaxMappedFileMB = 128

func mappedLimit(mb int) int64 {
	switch {
	case mb == 0:
		return DefaultMaxMappedFileMB << 20
	case mb < 0:
		return 0
	}
	return int64(mb) << 20
}

// capped gives a kind its cap of live actors.
func (a *App) capped(k actors.Kind) actors.Kind {
	k.MaxLive = a.Cfg.MaxLiveActors.For(k.Name)
	return k
}

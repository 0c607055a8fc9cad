package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Feature is a kind of live data, and the networks that serve it live.
type Feature struct {
	// Name says what is read, in plain words ("analytics", "comments inbox").
	Name      string
	Platforms []platforms.Platform
}

// The live features whose accounts GET /v1/analytics/accounts and GET /v1/inbox/accounts list.
var (
	AnalyticsFeature = Feature{Name: "analytics", Platforms: AnalyticsPlatforms}
	CommentsFeature  = Feature{Name: "comments inbox", Platforms: CommentsPlatforms}
	MessagesFeature  = Feature{Name: "direct messages", Platforms: MessagePlatforms}
)

// LiveAccount is one connected account and whether a feature reads it live. Reason says why
// not, in plain words, when Live is false.
type LiveAccount struct {
	AccountID string  `json:"account_id"`
	Platform  string  `json:"platform"`
	Username  *string `json:"username"`
	Live      bool    `json:"live"`
	Reason    string  `json:"reason,omitempty"`
}

// Accounts lists every connected account of the user, in the order of GET /v1/accounts, and
// whether f reads it live: the account is on one of f's networks, active, and does not need to
// be connected again. The last is the account actor's own rule (account.Get's Reconnect, the
// reason a read answers *account.ReconnectError with, as in accounts_needing_reconnect): it is
// asked, but no network is called, and nothing is cached.
func (s *Service) Accounts(ctx context.Context, scope string, f Feature) ([]LiveAccount, error) {
	var list []*persistence.Account
	if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		list, err = tx.AccountsIn(scope)
		return err
	}); err != nil {
		return nil, err
	}
	out := make([]LiveAccount, len(list))
	var ask []int
	for i, a := range list {
		out[i] = LiveAccount{AccountID: a.ID, Platform: a.Platform, Username: a.Username}
		switch {
		case !slices.Contains(f.Platforms, platforms.Platform(a.Platform)):
			out[i].Reason = fmt.Sprintf("%s has no live %s in Herald; the live networks are %s", a.Platform, f.Name, platformList(f.Platforms))
		case !a.IsActive:
			out[i].Reason = "the account is not active; connect it again"
		default:
			ask = append(ask, i)
		}
	}
	// The accounts' actors answer from what they hold; a few at a time, within the live
	// deadline.
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Deadline)
	defer cancel()
	errs := make([]error, len(list))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(s.cfg.PerAccount, len(ask)) {
		wg.Go(func() {
			for k := int(next.Add(1)) - 1; k < len(ask); k = int(next.Add(1)) - 1 {
				i := ask[k]
				r, err := actors.Ask[*account.Reply](ctx, s.cfg.Accounts.To(list[i].ID), &account.Get{})
				switch {
				case errors.Is(err, account.ErrNotFound):
					out[i].Reason = "the account was disconnected"
				case err != nil:
					errs[i] = err
				case r.Reconnect != "":
					out[i].Reason = "connect the account again: " + r.Reconnect
				default:
					out[i].Live = true
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if errors.Is(err, actors.ErrTimeout) || errors.Is(err, actors.ErrBusy) || errors.Is(err, cluster.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			return nil, apierr.Unavailable("the connected accounts did not answer in time; retry shortly")
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

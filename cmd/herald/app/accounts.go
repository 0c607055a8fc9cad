package app

import (
	"context"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
)

// startedPosts is how many of the posts whose jobs started last are kept for their accounts (a
// few hundred bytes each): enough for the posts of a burst that their accounts take at once.
const startedPosts = 4096

// buildAccounts opens the token box and starts the account directory with the adapters. In
// sandbox mode the adapters are rebuilt against the simulator once it listens (startSandbox).
func (a *App) buildAccounts() error {
	key, err := secret.LoadKey(a.Cfg.DataDir, a.Cfg.SecretKey)
	if err != nil {
		return err
	}
	if a.Box, err = secret.NewBox(key); err != nil {
		return err
	}
	a.Adapters = registry.New(a.Cfg.Networks)
	rules := a.Cfg.Budgets
	if rules == nil {
		rules = account.DefaultRules
	}
	a.Budgets = account.NewBudgets(rules)
	metrics := account.NewMetrics(a.Registry)
	a.startedPosts = actors.NewRecent[string, *persistence.PostContent](startedPosts)
	a.Accounts = actors.NewDirectory(a.Actors, a.capped(account.Kind(account.Deps{
		Store: a.Store, Box: a.Box, Adapters: a.Adapters, Budgets: a.Budgets, Metrics: metrics,
		Log: a.Log, Concurrency: a.Cfg.AccountConcurrency, Report: func(r *account.Report) { a.Jobs.Send(r.JobID, r) },
		InHand: a.JobBacklog.Add, Backlog: a.JobBacklog, Posts: a.startedPosts,
		// Media storage is built after the accounts.
		Media: func(ctx context.Context, userID string, ids []string) ([]platforms.Media, error) {
			if a.MediaResolver == nil {
				return nil, account.ErrNoMediaStorage
			}
			return a.MediaResolver(ctx, userID, ids)
		},
	})))
	return nil
}

// pointAdaptersAt replaces every adapter's configuration (the sandbox points them at its
// simulator). The map is shared with the account actors, which have not run yet.
func (a *App) pointAdaptersAt(cfg map[platforms.Platform]platforms.Config) {
	for p, ad := range registry.New(cfg) {
		a.Adapters[p] = ad
	}
}

package app

import (
	"context"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
)

// accountDeps opens the token box and builds the link card reader (linkcards.go), the adapters, the budgets and the account actors'
// metrics: what the account directory is built on (buildPublishing). In sandbox mode the adapters
// are rebuilt against the simulator once it listens (sandboxNetworks), before any account actor runs.
func (a *App) accountDeps() (account.Deps, error) {
	key, err := secret.LoadKey(a.Cfg.DataDir, a.Cfg.SecretKey)
	if err != nil {
		return account.Deps{}, err
	}
	if a.Box, err = secret.NewBox(key); err != nil {
		return account.Deps{}, err
	}
	if err := a.buildCards(); err != nil {
		return account.Deps{}, err
	}
	a.Adapters = registry.New(withCards(a.Cfg.Networks, a.Cards))
	rules := a.Cfg.Budgets
	if rules == nil {
		rules = account.DefaultRules
	}
	a.Budgets = account.NewBudgets(rules)
	if a.sharedQuotas != nil {
		a.Budgets.Share(a.sharedQuotas)
	}
	return account.Deps{
		Box: a.Box, Adapters: a.Adapters, Budgets: a.Budgets, Metrics: account.NewMetrics(a.Registry),
		Log: a.Log, Concurrency: a.Cfg.AccountConcurrency, CallTimeout: a.Cfg.CallTimeout,
		// Media storage is built after the accounts.
		Media: func(ctx context.Context, userID string, ids []string) ([]platforms.Media, error) {
			if a.MediaResolver == nil {
				return nil, account.ErrNoMediaStorage
			}
			return a.MediaResolver(ctx, userID, ids)
		},
	}, nil
}

// pointAdaptersAt replaces every adapter's configuration (the sandbox points them at its
// simulator). The map is shared with the account actors, which have not run yet.
func (a *App) pointAdaptersAt(cfg map[platforms.Platform]platforms.Config) {
	for p, ad := range registry.New(withCards(cfg, a.Cards)) {
		a.Adapters[p] = ad
	}
}

package app

import (
	"time"

	"github.com/heraldhq/herald/http/live"
	"github.com/heraldhq/herald/persistence/secret"
)

// LiveConfig configures analytics and the inbox (docs/live-data.md). Zero values take the
// defaults of package live.
type LiveConfig struct {
	// Calls is the live budget of network calls per API request (default 200).
	Calls int
	// Deadline is the live budget of time per API request (default 2s).
	Deadline time.Duration
	// SampleLimit is how many of the latest publications one answer reads (default 200).
	SampleLimit int
	// PerAccount bounds one request's reads in flight per account (default 8).
	PerAccount int
	// MaxAge is how long a cached answer is kept (default 10m; the 90-second floor is fixed).
	MaxAge time.Duration
}

// buildLive builds the live-data service on the account directory. Its inbox cursors are signed
// with a key derived from the secret that seals account tokens.
func (a *App) buildLive() error {
	key, err := secret.LoadKey(a.Cfg.DataDir, a.Cfg.SecretKey)
	if err != nil {
		return err
	}
	c := a.Cfg.Live
	a.Live, err = live.New(live.Config{
		Store: a.Store, Accounts: a.Publishing.To.Accounts, Adapters: a.Adapters, Media: live.MediaResolver(a.MediaResolver), Secret: key,
		Calls: c.Calls, Deadline: c.Deadline, SampleLimit: c.SampleLimit, PerAccount: c.PerAccount, MaxAge: c.MaxAge,
		Log: a.Log, Registry: a.Registry,
	})
	return err
}

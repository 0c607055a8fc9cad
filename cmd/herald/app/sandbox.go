package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// SandboxEmail is the demo user of sandbox mode.
const SandboxEmail = "demo@herald.local"

// startSandbox starts the in-process simulator and, on first start, creates the demo user on plan
// pro, its API key (written to DIR/sandbox-api-key, mode 0600, and logged once), and one
// connected account on each of the nine networks holding simulator tokens.
func (a *App) startSandbox(ctx context.Context) error {
	s, err := sim.Start(a.Cfg.SimAddr, sim.Options{})
	if err != nil {
		return fmt.Errorf("sandbox simulator: %w", err)
	}
	a.Sim = s
	a.Log.Info("sandbox network simulator listening on http://" + s.Addr())
	cfg := map[platforms.Platform]platforms.Config{}
	for _, p := range platforms.All {
		cfg[p] = s.AdapterConfig(p)
	}
	a.pointAdaptersAt(cfg)

	var existing *persistence.User
	_ = a.Store.View(func(tx *persistence.Tx) error {
		existing, _ = tx.SandboxUser()
		return nil
	})
	if existing != nil {
		return nil
	}
	now := time.Now()
	u, err := auth.CreateUser(ctx, a.Store, auth.NewUser{Email: SandboxEmail, Name: "Demo", Plan: "pro", Timezone: "UTC", Sandbox: true}, now)
	if err != nil {
		return fmt.Errorf("sandbox user: %w", err)
	}
	k, err := auth.CreateKey(ctx, a.Store, SandboxEmail, "sandbox", 0, now)
	if err != nil {
		return fmt.Errorf("sandbox key: %w", err)
	}
	if err := os.WriteFile(SandboxKeyFile(a.Cfg.DataDir), []byte(k.Key+"\n"), 0o600); err != nil {
		return fmt.Errorf("write sandbox key: %w", err)
	}
	a.SandboxKey = k.Key
	a.Log.Info("sandbox: created demo@herald.local with an API key (also in "+SandboxKeyFile(a.Cfg.DataDir)+")", "api_key", k.Key)
	for _, p := range platforms.All {
		handle := "demo-" + string(p)
		creds, err := s.NewAccount(p, handle)
		if err != nil {
			return fmt.Errorf("sandbox account %s: %w", p, err)
		}
		acc := &persistence.Account{
			UserID: u.ID, Platform: string(p), Username: &handle, IsActive: true, CreatedAt: now.UTC(), NetworkUserID: creds.UserID,
		}
		if _, err := actors.Ask[*account.Reply](ctx, a.Accounts.To(uuid.Must(uuid.NewV7()).String()), &account.Create{Account: acc, Creds: creds}); err != nil {
			return fmt.Errorf("sandbox account %s: %w", p, err)
		}
	}
	return nil
}

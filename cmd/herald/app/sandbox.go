package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// sandboxSimURL is the base URL of the simulator the sandbox publishes to ("" when not in sandbox
// mode): the dashboard links published posts to its page of each publication. Start sets a.Sim
// before the listener serves, so the pages read it without a lock.
func (a *App) sandboxSimURL() string {
	switch {
	case !a.Cfg.Sandbox:
		return ""
	case a.Cfg.SimURL != "":
		return strings.TrimRight(a.Cfg.SimURL, "/")
	case a.Sim != nil:
		return a.Sim.BaseURL()
	}
	return ""
}

// SandboxEmail is the demo user of sandbox mode.
const SandboxEmail = "demo@herald.local"

// sandboxNetworks starts the in-process simulator (unless --sim-url names one running elsewhere)
// and points every adapter at it. Start runs it before anything can activate an account actor:
// before a node joins its cluster, since from then on a message from another node activates the
// actors of the shards it takes, and an actor that read the adapters before they were pointed
// would call the real networks.
func (a *App) sandboxNetworks() error {
	base := strings.TrimRight(a.Cfg.SimURL, "/")
	if base == "" {
		s, err := sim.Start(a.Cfg.SimAddr, sim.Options{Latency: a.Cfg.SimLatency, LimitScale: a.Cfg.SimLimitScale, AskMember: a.Cfg.SimAskMember})
		if err != nil {
			return fmt.Errorf("sandbox simulator: %w", err)
		}
		a.Sim = s
		base = s.BaseURL()
		a.Log.Info("sandbox network simulator listening on " + base)
	} else {
		a.Log.Info("sandbox uses the network simulator at " + base)
	}
	cfg := map[platforms.Platform]platforms.Config{}
	for _, p := range platforms.All {
		cfg[p] = sim.ConfigFor(base, p)
	}
	a.pointAdaptersAt(cfg)
	return nil
}

// startSandbox, on first start, creates the demo user on plan pro with a dashboard password
// (written to DIR/sandbox-password, mode 0600), its API key (written to DIR/sandbox-api-key, mode
// 0600; both logged once), and one connected account on each of the nine networks holding
// simulator tokens (sandboxNetworks ran before).
func (a *App) startSandbox(ctx context.Context) error {
	base := a.sandboxSimURL()
	var existing *persistence.User
	hasPassword := false
	_ = a.Store.View(func(tx *persistence.Tx) error {
		existing, _ = tx.SandboxUser()
		if existing != nil {
			_, err := tx.Password(existing.ID)
			hasPassword = err == nil
		}
		return nil
	})
	if existing != nil {
		if hasPassword {
			return nil
		}
		// A demo user made before the dashboard had passwords gets one now.
		pw := randomPassword()
		if _, _, err := auth.SetPassword(ctx, a.Store, existing.Email, pw, a.Sessions.PasswordParams()); err != nil {
			return fmt.Errorf("sandbox password: %w", err)
		}
		if err := a.writeSandboxPassword(pw); err != nil {
			return err
		}
		a.Log.Info("sandbox: gave "+existing.Email+" a dashboard password (also in "+SandboxPasswordFile(a.Cfg.DataDir)+")", "password", pw)
		return nil
	}
	now := time.Now()
	pw := randomPassword()
	u, err := auth.CreateUser(ctx, a.Store, auth.NewUser{Email: SandboxEmail, Name: "Demo", Plan: "pro", Timezone: "UTC", Sandbox: true,
		Password: pw, PasswordParams: a.Sessions.PasswordParams()}, now)
	if err != nil {
		return fmt.Errorf("sandbox user: %w", err)
	}
	if err := a.writeSandboxPassword(pw); err != nil {
		return err
	}
	// Hashing the password took argon2's 64 MiB; an idle server need not keep them.
	debug.FreeOSMemory()
	k, err := auth.CreateKey(ctx, a.Store, SandboxEmail, "sandbox", 0, now)
	if err != nil {
		return fmt.Errorf("sandbox key: %w", err)
	}
	if err := os.WriteFile(SandboxKeyFile(a.Cfg.DataDir), []byte(k.Key+"\n"), 0o600); err != nil {
		return fmt.Errorf("write sandbox key: %w", err)
	}
	a.SandboxKey = k.Key
	// The only log line that carries secrets: the demo key and password, once, at first start.
	a.Log.Info("sandbox: created demo@herald.local with an API key (also in "+SandboxKeyFile(a.Cfg.DataDir)+
		") and a dashboard password (also in "+SandboxPasswordFile(a.Cfg.DataDir)+")", "api_key", k.Key, "password", pw)
	for _, p := range platforms.All {
		handle := "demo-" + string(p)
		creds, err := simAccount(ctx, base, p, handle)
		if err != nil {
			return fmt.Errorf("sandbox account %s: %w", p, err)
		}
		acc := &persistence.Account{
			UserID: u.ID, Platform: string(p), Username: &handle, IsActive: true, CreatedAt: now.UTC(), NetworkUserID: creds.UserID,
			DefaultOptions: sandboxDefaults[p],
		}
		id := uuid.Must(uuid.NewV7()).String()
		if _, err := actors.Ask[*account.Reply](ctx, a.Accounts.To(id), &account.Create{Account: acc, Creds: creds}); err != nil {
			return fmt.Errorf("sandbox account %s: %w", p, err)
		}
		if p == platforms.Pinterest {
			if err := a.sandboxBoard(ctx, id); err != nil {
				// Best effort: a simulator too slow to list the boards leaves the demo Pinterest
				// account without a default board, which each Pin then chooses.
				a.Log.Warn("sandbox: the demo Pinterest account has no default board", "error", err)
			}
		}
	}
	return nil
}

// sandboxBoard gives the demo Pinterest account its first board as its default board, as a person
// would choose one, so that a first publish to all nine networks needs no option.
// A simulator that injects faults fails some listings, so a failed one is tried again, for up to
// ten seconds in all.
func (a *App) sandboxBoard(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var r *account.ReadReply
	for {
		var err error
		r, err = actors.Ask[*account.ReadReply](ctx, a.Accounts.To(id), &account.Read{Op: account.OpChoices, Deadline: time.Now().Add(4 * time.Second)})
		if errors.Is(err, account.ErrReadUnsupported) {
			return nil
		}
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
	if len(r.Choices.Boards) == 0 {
		return nil
	}
	_, err := actors.Ask[*account.Reply](ctx, a.Accounts.To(id), &account.SetDefaults{
		Options: platforms.EncodeOptions(&platforms.PinterestOptions{BoardID: r.Choices.Boards[0].ID})})
	return err
}

// sandboxDefaults are the demo accounts' default options: the demo TikTok account posts privately
// (SELF_ONLY, which TikTok offers every creator) unless a post chooses otherwise, so that a first
// publish to all nine networks needs no option. Herald never picks a TikTok privacy level for a
// real account: it is the user's choice (docs/networks.md).
var sandboxDefaults = map[platforms.Platform]json.RawMessage{
	platforms.TikTok: json.RawMessage(`{"privacy_level":"SELF_ONLY"}`),
}

func (a *App) writeSandboxPassword(pw string) error {
	if err := os.WriteFile(SandboxPasswordFile(a.Cfg.DataDir), []byte(pw+"\n"), 0o600); err != nil {
		return fmt.Errorf("write sandbox password: %w", err)
	}
	a.SandboxPassword = pw
	return nil
}

// randomPassword is a sandbox password: 20 base62 characters (about 119 bits).
func randomPassword() string {
	raw, _, _ := auth.GenerateKey()
	return strings.TrimPrefix(raw, auth.LivePrefix)[:20]
}

// simAccount asks a simulator for a network user with fresh tokens.
func simAccount(ctx context.Context, base string, p platforms.Platform, handle string) (platforms.Credentials, error) {
	var c platforms.Credentials
	body, _ := json.Marshal(map[string]string{"platform": string(p), "handle": handle})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/_sim/accounts", bytes.NewReader(body))
	if err != nil {
		return c, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("simulator answered %s", resp.Status)
	}
	return c, json.NewDecoder(resp.Body).Decode(&c)
}

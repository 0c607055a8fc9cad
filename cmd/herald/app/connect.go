package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// buildConnect builds the connect service on the account directory and the adapters. Its state
// tokens are signed with a key derived from the same secret that seals account tokens.
func (a *App) buildConnect() error {
	key, err := secret.LoadKey(a.Cfg.DataDir, a.Cfg.SecretKey)
	if err != nil {
		return err
	}
	stateKey, err := accountlink.StateKey(key)
	if err != nil {
		return err
	}
	a.Connect, err = accountlink.New(accountlink.Config{
		Store: a.Store, Accounts: a.Publishing.To.Accounts, Adapters: a.Adapters, Key: stateKey, Log: a.Log,
		BaseURL:    func() string { return a.Cfg.BaseURL },
		Configured: a.oauthConfigured,
	})
	return err
}

// oauthConfigured reports whether Herald has an OAuth client for a browser platform: always in
// sandbox mode (the simulator's), else when its client id is configured.
func (a *App) oauthConfigured(p platforms.Platform) bool {
	return a.Cfg.Sandbox || a.Cfg.Networks[p].ClientID != ""
}

// AccountOut is a connected account as `herald accounts` prints it: the API's shape, the
// network's id of the account, and (after add) whether it was created or its tokens replaced.
type AccountOut struct {
	api.Account
	NetworkUserID string `json:"network_user_id"`
	Created       *bool  `json:"created,omitempty"`
}

func accountOut(a *persistence.Account, created *bool) AccountOut {
	return AccountOut{Account: api.AccountView(a, time.Now()), NetworkUserID: a.NetworkUserID, Created: created}
}

// AddAccount runs `herald accounts add` on a connect service (the server's, through the admin
// socket, or one built offline by OpenAccountTools).
func AddAccount(ctx context.Context, svc *accountlink.Service, in accountlink.Add) (AccountOut, error) {
	res, err := svc.Add(ctx, in)
	if err != nil {
		return AccountOut{}, err
	}
	return accountOut(res.Account, &res.Created), nil
}

// ListAccounts runs `herald accounts list`.
func ListAccounts(svc *accountlink.Service, email string) ([]AccountOut, error) {
	list, err := svc.List(email)
	if err != nil {
		return nil, err
	}
	out := make([]AccountOut, 0, len(list))
	for _, a := range list {
		out = append(out, accountOut(a, nil))
	}
	return out, nil
}

// accountAdminRoutes are the admin socket's account routes: POST /accounts (herald accounts add)
// and GET /accounts?email=E (herald accounts list). They use the server's own adapters, so that
// in sandbox mode they talk to its simulator.
func (a *App) accountAdminRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"POST /accounts": func(w http.ResponseWriter, r *http.Request) {
			var in accountlink.Add
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&in); err != nil {
				writeAdmin(w, nil, fmt.Errorf("%w: %v", accountlink.ErrInvalid, err))
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), 25*time.Second)
			defer cancel()
			out, err := AddAccount(ctx, a.Connect, in)
			writeAdmin(w, out, err)
		},
		"GET /accounts": func(w http.ResponseWriter, r *http.Request) {
			out, err := ListAccounts(a.Connect, r.URL.Query().Get("email"))
			writeAdmin(w, out, err)
		},
	}
}

// writeAdmin answers an admin request: 400 for refused input or credentials, 502 when the
// network could not be reached, 500 otherwise; the body's "error" is what the command prints.
func writeAdmin(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err == nil {
		_ = json.NewEncoder(w).Encode(v)
		return
	}
	status := http.StatusInternalServerError
	var xe *accountlink.ExchangeError
	switch {
	case errors.Is(err, accountlink.ErrInvalid), errors.Is(err, accountlink.ErrUnknownUser), errors.Is(err, accountlink.ErrNotConfigured):
		status = http.StatusBadRequest
	case errors.As(err, &xe) && xe.Refused():
		status = http.StatusBadRequest
	case errors.As(err, &xe), errors.Is(err, accountlink.ErrNoIdentity):
		status = http.StatusBadGateway
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

// AccountTools is account management without a server, for `herald accounts` when no server
// answers on the data directory's admin socket: the account actors, adapters and connect service
// built the way New builds them, on a store the caller opened.
type AccountTools struct {
	Connect *accountlink.Service
	app     *App
}

// OpenAccountTools builds the account tools on store with cfg's data directory, secret and
// networks.
func OpenAccountTools(cfg Config, store *persistence.Store) (*AccountTools, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	a := &App{Cfg: cfg, Log: cfg.Log, Registry: prometheus.NewRegistry(), Store: store}
	a.Actors = actors.NewSystem(a.Registry, cfg.Log)
	ad, err := a.accountDeps()
	if err != nil {
		a.Actors.Shutdown()
		return nil, err
	}
	a.buildPublishing(ad)
	if err := a.buildConnect(); err != nil {
		a.Actors.Shutdown()
		return nil, err
	}
	return &AccountTools{Connect: a.Connect, app: a}, nil
}

// Close stops the account actors (the caller closes the store).
func (t *AccountTools) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := t.app.Accounts.Stop(ctx)
	t.app.Actors.Shutdown()
	return err
}

// SimNetworks points every adapter at a network simulator listening at baseURL (herald sim, or a
// sandbox server's --sim-addr), with the simulator's OAuth client.
func SimNetworks(baseURL string) map[platforms.Platform]platforms.Config {
	out := map[platforms.Platform]platforms.Config{}
	for _, p := range platforms.All {
		out[p] = sim.ConfigFor(baseURL, p)
	}
	return out
}

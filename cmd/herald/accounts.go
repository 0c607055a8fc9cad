package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/persistence"
)

const accountsUsage = `usage:
  herald accounts add --data DIR --email E --platform bluesky --handle H --app-password P
  herald accounts add --data DIR --email E --platform twitter_x --client-id ID [--client-secret S]
                      --access-token T [--refresh-token R] [--expires-in SECONDS|DURATION]
  herald accounts list --data DIR --email E
Without a running server, --sim-url URL (HERALD_SIM_URL) points the networks at a simulator.`

// cmdAccounts connects X and Bluesky accounts with credentials the user brings, and lists a
// user's accounts. Like the key commands, it goes through the running server's admin socket when
// one answers (so the server's own adapters and actors do the work), else it works on the data
// directory directly.
func cmdAccounts(args []string, out io.Writer) error {
	if len(args) == 0 || (args[0] != "add" && args[0] != "list") {
		return errors.New(accountsUsage)
	}
	fs := flag.NewFlagSet("accounts "+args[0], flag.ContinueOnError)
	dir := fs.String("data", envOr("HERALD_DATA_DIR", ""), "data directory")
	simURL := fs.String("sim-url", envOr("HERALD_SIM_URL", ""), "network simulator URL, when no server runs")
	var in accountlink.Add
	fs.StringVar(&in.Email, "email", "", "the Herald user's e-mail")
	fs.StringVar(&in.Platform, "platform", "", "bluesky or twitter_x")
	fs.StringVar(&in.Handle, "handle", "", "Bluesky handle (or DID or e-mail)")
	fs.StringVar(&in.AppPassword, "app-password", envOr("HERALD_BLUESKY_APP_PASSWORD", ""), "Bluesky app password")
	fs.StringVar(&in.ClientID, "client-id", "", "X: your OAuth 2.0 client id")
	fs.StringVar(&in.ClientSecret, "client-secret", envOr("HERALD_X_CLIENT_SECRET", ""), "X: your OAuth 2.0 client secret (confidential clients)")
	fs.StringVar(&in.AccessToken, "access-token", envOr("HERALD_X_ACCESS_TOKEN", ""), "X: user access token")
	fs.StringVar(&in.RefreshToken, "refresh-token", envOr("HERALD_X_REFRESH_TOKEN", ""), "X: refresh token (scope offline.access)")
	expiresIn := fs.String("expires-in", "", "X: the access token's remaining lifetime, seconds (7200) or a duration (2h)")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return fmt.Errorf("%v\n%s", err, accountsUsage)
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", pos[0], accountsUsage)
	}
	if in.Email == "" {
		return errors.New("--email is required")
	}
	if *expiresIn != "" {
		if in.ExpiresIn, err = parseSeconds(*expiresIn); err != nil {
			return err
		}
	}
	cfg := app.Config{DataDir: *dir, SecretKey: envOr("HERALD_SECRET_KEY", ""), Networks: networksFromEnv()}
	if *simURL != "" {
		cfg.Networks = app.SimNetworks(*simURL)
	}
	// direct builds the account tools offline on the store manage opened.
	direct := func(s *persistence.Store, run func(svc *accountlink.Service) (any, error)) (any, error) {
		t, err := app.OpenAccountTools(cfg, s)
		if err != nil {
			return nil, err
		}
		v, err := run(t.Connect)
		if cerr := t.Close(); err == nil && cerr != nil {
			err = cerr
		}
		return v, err
	}
	if args[0] == "list" {
		return manage(*dir,
			func(c *admin.Client) (any, error) {
				var v []app.AccountOut
				return &v, c.Do("GET", "/accounts?email="+url.QueryEscape(in.Email), nil, &v)
			},
			func(s *persistence.Store) (any, error) {
				return direct(s, func(svc *accountlink.Service) (any, error) { return app.ListAccounts(svc, in.Email) })
			}, out)
	}
	if in.Platform == "" {
		return errors.New("--platform is required (bluesky or twitter_x)")
	}
	return manage(*dir,
		func(c *admin.Client) (any, error) {
			var v app.AccountOut
			return &v, c.Do("POST", "/accounts", in, &v)
		},
		func(s *persistence.Store) (any, error) {
			return direct(s, func(svc *accountlink.Service) (any, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				return app.AddAccount(ctx, svc, in)
			})
		}, out)
}

// parseSeconds reads a lifetime as whole seconds (as OAuth's expires_in) or a Go duration.
func parseSeconds(s string) (int64, error) {
	if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("--expires-in: %q is neither seconds nor a duration such as 2h", s)
	}
	return int64(d / time.Second), nil
}

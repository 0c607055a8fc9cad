package accountlink

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
	"github.com/heraldhq/herald/platforms/sim"
)

func testKey(t *testing.T, seed byte) []byte {
	t.Helper()
	k, err := StateKey(make([]byte, 32))
	require.NoError(t, err)
	k[0] ^= seed
	return k
}

func TestStateTokens(t *testing.T) {
	t.Parallel()
	s := signer{key: testKey(t, 0)}
	id := uuid.Must(uuid.NewV7())
	exp := time.Unix(1_800_000_000, 0)
	tok := s.sign(id, exp)
	require.Len(t, tok, 75)
	gotID, gotExp, err := s.verify(tok)
	require.NoError(t, err)
	require.Equal(t, id, gotID)
	require.True(t, exp.Equal(gotExp))

	// Any change to any byte is refused, and so is a change of the unused trailing bits.
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	require.NoError(t, err)
	for i := range raw {
		c := append([]byte(nil), raw...)
		c[i] ^= 0x01
		_, _, err := s.verify(base64.RawURLEncoding.EncodeToString(c))
		require.ErrorIs(t, err, ErrBadState, "byte %d", i)
	}
	last := tok[:74] + string(tok[74]+1)
	_, _, err = s.verify(last)
	require.ErrorIs(t, err, ErrBadState)

	for _, bad := range []string{"", "x", tok[:74], tok + "A", strings.Repeat("=", 75), strings.ReplaceAll(tok, tok[:1], "+")} {
		if bad == tok {
			continue
		}
		_, _, err := s.verify(bad)
		require.ErrorIs(t, err, ErrBadState, "%q", bad)
	}
	// Another server's key.
	_, _, err = signer{key: testKey(t, 1)}.verify(tok)
	require.ErrorIs(t, err, ErrBadState)

	v, c := newVerifier()
	require.Len(t, v, 43)
	require.Equal(t, c, challengeOf(v))
}

type fixture struct {
	svc   *Service
	store *persistence.Store
	sim   *sim.Server
	user  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s, err := sim.Start("127.0.0.1:0", sim.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	store, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	sys := actors.NewSystem(prometheus.NewRegistry(), log)
	cfg := map[platforms.Platform]platforms.Config{}
	for _, p := range platforms.All {
		cfg[p] = s.AdapterConfig(p)
	}
	adapters := registry.New(cfg)
	box, err := secret.NewBox(make([]byte, 32))
	require.NoError(t, err)
	dir := actors.NewDirectory(sys, account.Kind(account.Deps{Store: store, Box: box, Adapters: adapters,
		Budgets: account.NewBudgets(account.DefaultRules), Log: log}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = dir.Stop(ctx)
		sys.Shutdown()
		_ = store.Close()
	})
	svc, err := New(Config{Store: store, Accounts: dir, Adapters: adapters, Key: testKey(t, 0), Log: log,
		BaseURL: func() string { return "https://herald.example" }})
	require.NoError(t, err)
	user := &persistence.User{ID: uuid.Must(uuid.NewV7()).String(), Email: "u@example.com", Plan: "pro", Timezone: "UTC", CreatedAt: time.Now()}
	require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.CreateUser(user) }))
	return &fixture{svc: svc, store: store, sim: s, user: user.ID}
}

// consent plays the network's consent page (auto-approving in the simulator) and returns the
// callback it redirects to.
func consent(t *testing.T, target string) Callback {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(target)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	u, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "https://herald.example"+CallbackPath, u.Scheme+"://"+u.Host+u.Path)
	q := u.Query()
	return Callback{State: q.Get("state"), Code: q.Get("code"), Error: q.Get("error")}
}

func stateOf(t *testing.T, authURL string) string {
	t.Helper()
	u, err := url.Parse(authURL)
	require.NoError(t, err)
	require.Equal(t, "https://herald.example"+AuthorizePath, u.Scheme+"://"+u.Host+u.Path)
	return u.Query().Get("state")
}

func (f *fixture) accounts(t *testing.T) []*persistence.Account {
	t.Helper()
	var out []*persistence.Account
	require.NoError(t, f.store.View(func(tx *persistence.Tx) (err error) {
		out, err = tx.AccountsIn(f.user)
		return err
	}))
	return out
}

// The service's clock is the caller's: a state is valid strictly before its expiry, and the
// expiry inside the token and in the record agree.
func TestStateLifetime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	start := time.Now()
	u, err := f.svc.Begin(ctx, f.user, "", platforms.YouTube, start)
	require.NoError(t, err)
	state := stateOf(t, u)

	_, target, err := f.svc.Authorize(state, f.user, start.Add(StateTTL-time.Second))
	require.NoError(t, err)
	require.Contains(t, target, "code_challenge=")
	_, _, err = f.svc.Authorize(state, f.user, start.Add(StateTTL+time.Second))
	require.ErrorIs(t, err, ErrExpired)
	cb := consent(t, target)
	_, _, err = f.svc.Complete(ctx, cb, f.user, start.Add(StateTTL+time.Second))
	require.ErrorIs(t, err, ErrExpired)
	require.Empty(t, f.accounts(t))

	// Another Herald user's browser can neither open the link nor complete it, and the state is
	// left for its owner.
	other := uuid.Must(uuid.NewV7()).String()
	_, _, err = f.svc.Authorize(state, other, start.Add(time.Minute))
	require.ErrorIs(t, err, ErrOtherUser)
	_, _, err = f.svc.Complete(ctx, cb, other, start.Add(time.Minute))
	require.ErrorIs(t, err, ErrOtherUser)
	require.Empty(t, f.accounts(t))

	// Within its lifetime the same callback connects (PKCE verified by the simulated Google).
	p, res, err := f.svc.Complete(ctx, cb, f.user, start.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, platforms.YouTube, p)
	require.True(t, res.Created)
	_, _, err = f.svc.Complete(ctx, cb, f.user, start.Add(time.Minute))
	require.ErrorIs(t, err, ErrUsed)
	require.Len(t, f.accounts(t), 1)

	// Starting a connection purges expired states.
	_, err = f.svc.Begin(ctx, f.user, "", platforms.LinkedIn, start.Add(StateTTL+time.Second))
	require.NoError(t, err)
	id, _, err := f.svc.signer.verify(state)
	require.NoError(t, err)
	require.NoError(t, f.store.View(func(tx *persistence.Tx) error {
		_, err := tx.ConnectState(id.String())
		require.ErrorIs(t, err, persistence.ErrNotFound)
		return nil
	}))
}

// Two callbacks of the same network user at once make one account, not two.
func TestConcurrentConnectionsOfOneNetworkUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	var cbs []Callback
	for range 8 {
		u, err := f.svc.Begin(ctx, f.user, "", platforms.Threads, time.Now())
		require.NoError(t, err)
		_, target, err := f.svc.Authorize(stateOf(t, u), f.user, time.Now())
		require.NoError(t, err)
		cbs = append(cbs, consent(t, target))
	}
	var wg sync.WaitGroup
	results := make(chan *Result, len(cbs))
	for _, cb := range cbs {
		wg.Go(func() {
			_, res, err := f.svc.Complete(ctx, cb, f.user, time.Now())
			require.NoError(t, err)
			results <- res
		})
	}
	wg.Wait()
	close(results)
	created := 0
	for r := range results {
		if r.Created {
			created++
		}
	}
	require.Equal(t, 1, created)
	require.Len(t, f.accounts(t), 1)
}

func TestBeginRefusesWhatIsNotABrowserNetwork(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, p := range []platforms.Platform{platforms.Bluesky, "myspace"} {
		_, err := f.svc.Begin(context.Background(), f.user, "", p, time.Now())
		require.ErrorIs(t, err, ErrNotBrowser)
	}
	svc, err := New(Config{Store: f.store, Adapters: f.svc.cfg.Adapters, Key: testKey(t, 0),
		Configured: func(p platforms.Platform) bool { return p != platforms.LinkedIn }})
	require.NoError(t, err)
	_, err = svc.Begin(context.Background(), f.user, "", platforms.LinkedIn, time.Now())
	require.ErrorIs(t, err, ErrNotConfigured)
	_, err = New(Config{Key: []byte("short")})
	require.Error(t, err)
	require.Empty(t, f.accounts(t))
}

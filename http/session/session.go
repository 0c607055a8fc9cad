// Package session signs people in to the dashboard: passwords checked against their argon2id
// hashes (http/auth), sessions kept in bbolt under the SHA-256 of their random token, their CSRF
// token, idle and absolute expiry, a periodic sweep of expired sessions, and the throttle of
// failed sign-ins (throttle.go). Sessions open the dashboard's /api routes and browser pages
// only; API keys open /v1 only (DESIGN.md, the two doors). docs/dashboard.md has the numbers.
package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/internal/holds"
	"github.com/heraldhq/herald/persistence"
)

// CookieName is the session cookie.
const CookieName = "herald_session"

// Defaults of Config.
const (
	DefaultIdleTimeout = 24 * time.Hour
	DefaultMaxAge      = 30 * 24 * time.Hour
	// TouchEvery is how stale a session's last-seen time may grow before a request writes it
	// again: at most one write a minute per session, whatever its traffic.
	TouchEvery = time.Minute
	// DefaultSweepEvery is how often expired sessions are deleted.
	DefaultSweepEvery = 10 * time.Minute
	// DefaultHashWait is how long a sign-in waits for the password hasher before it is refused
	// as busy: well within a request's deadline, so that a queue of hashes answers 503 and not a
	// deadline's 500.
	DefaultHashWait = 3 * time.Second
	sweepBatch      = 1000
	tokenBytes      = 32
)

// Errors of the manager. Every sign-in refusal for a wrong e-mail or password is ErrInvalid,
// whichever it was.
var (
	ErrInvalid   = errors.New("invalid e-mail or password")
	ErrNoSession = errors.New("not signed in")
	ErrExpired   = errors.New("the session has expired; sign in again")
	// ErrBusy is an attempt that waited HashWait for the password hasher in vain: nothing was
	// checked, and it counts as no attempt.
	ErrBusy = errors.New("too many sign-ins are being checked at once; retry in a second")
)

// Config configures the manager.
type Config struct {
	Store *persistence.Store
	Now   func() time.Time
	// IdleTimeout ends a session not used for this long (default 24h); MaxAge ends any session
	// this long after sign-in (default 30 days).
	IdleTimeout, MaxAge time.Duration
	// SweepEvery is the period of the sweep of expired sessions (default 10 min).
	SweepEvery time.Duration
	// PasswordParams hash new passwords (default auth.DefaultPasswordParams).
	PasswordParams auth.PasswordParams
	// Throttle bounds failed sign-ins (defaults in throttle.go).
	Throttle ThrottleConfig
	// HashConcurrency bounds the password hashes computed at once (default 2: each holds the
	// parameters' memory, 64 MiB by default).
	HashConcurrency int
	// HashWait bounds the wait for one of them (default DefaultHashWait); past it the attempt is
	// ErrBusy.
	HashWait time.Duration
	Registry prometheus.Registerer
	Log      *slog.Logger
}

// Manager signs people in and out and resolves session cookies.
type Manager struct {
	cfg      Config
	throttle *Throttle
	hashing  chan struct{}
	// dummy is a PHC string under the current parameters that no password matches
	// (auth.DummyHash): a sign-in with an unknown e-mail verifies against it, so that it takes as
	// long as one with a known e-mail.
	dummy string
	m     *metrics
	// verifyPassword is auth.VerifyPassword; tests count the hashes through it.
	verifyPassword func(phc, pw string) (bool, error)
	// held are the streams opened on sessions (hold.go).
	held holds.Registry[string, *heldStream]
}

// Session is a resolved session: its user, its record and the hash it is stored under. When the
// user is a member of a team (persistence.Member), Member is their record and Owner the user
// they act for (read in the same transaction as the session).
type Session struct {
	User   *persistence.User
	Record *persistence.Session
	Hash   []byte
	Member *persistence.Member
	Owner  *persistence.User
}

// Issued is a new session: the token for the cookie (shown once, never stored) and the session.
type Issued struct {
	Token string
	*Session
}

// New builds a manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = DefaultSweepEvery
	}
	if cfg.PasswordParams == (auth.PasswordParams{}) {
		cfg.PasswordParams = auth.DefaultPasswordParams
	}
	if cfg.HashConcurrency <= 0 {
		cfg.HashConcurrency = 2
	}
	if cfg.HashWait <= 0 {
		cfg.HashWait = DefaultHashWait
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	dummy, err := auth.DummyHash(cfg.PasswordParams)
	if err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, throttle: NewThrottle(cfg.Throttle, cfg.Now), hashing: make(chan struct{}, cfg.HashConcurrency), dummy: dummy,
		verifyPassword: auth.VerifyPassword}
	m.m = newMetrics(cfg.Registry, cfg.Store)
	if cfg.Store != nil {
		// Sessions ended on another node end the streams they hold here (hold.go).
		cfg.Store.OnSignal(persistence.SignalSessions, m.recheckStreams)
	}
	return m, nil
}

// IdleTimeout and MaxAge are the session lifetimes in force.
func (m *Manager) IdleTimeout() time.Duration { return m.cfg.IdleTimeout }

// MaxAge is the absolute lifetime of a session.
func (m *Manager) MaxAge() time.Duration { return m.cfg.MaxAge }

// PasswordParams are the parameters new password hashes are made with.
func (m *Manager) PasswordParams() auth.PasswordParams { return m.cfg.PasswordParams }

func randomToken() string {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		panic("session: crypto/rand failed: " + err.Error()) // the OS entropy source is gone
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// HashToken is the stored form of a session token.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// hash runs f holding one of the HashConcurrency slots of the password hasher, waiting at most
// HashWait for it (ErrBusy), or until ctx ends. Once started, a hash runs to its end.
func (m *Manager) hash(ctx context.Context, f func() error) error {
	t := time.NewTimer(m.cfg.HashWait)
	defer t.Stop()
	select {
	case m.hashing <- struct{}{}:
	case <-t.C:
		return ErrBusy
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ErrBusy
		}
		return ctx.Err()
	}
	defer func() { <-m.hashing }()
	return f()
}

// verify checks a password against a hash, at most HashConcurrency at once.
func (m *Manager) verify(ctx context.Context, phc, pw string) (ok bool, err error) {
	err = m.hash(ctx, func() error {
		ok, err = m.verifyPassword(phc, pw)
		return err
	})
	return ok, err
}

// ThrottledError is a sign-in refused without looking at the password: too many failures in a
// row for the e-mail or the client address.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many failed sign-ins; try again in %d seconds", e.Seconds())
}

// Seconds is RetryAfter rounded up to whole seconds.
func (e *ThrottledError) Seconds() int { return int((e.RetryAfter + time.Second - 1) / time.Second) }

// SignIn checks an e-mail and password and opens a session. client is the caller's address, for
// the throttle. Errors: ErrInvalid (wrong e-mail or password, the same whichever), a
// *ThrottledError, ErrBusy, or a storage error.
//
// The attempt is counted by the throttle before its password is hashed (Throttle.Reserve), so
// concurrent attempts get no more hashes than the throttle allows failures; a refused one never
// waits for the hasher.
func (m *Manager) SignIn(ctx context.Context, email, password, client string) (*Issued, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	res, wait := m.throttle.Reserve(email, client)
	if res == nil {
		m.m.signins.WithLabelValues("throttled").Inc()
		return nil, &ThrottledError{RetryAfter: wait}
	}
	defer res.Release() // an attempt that ends before its password is compared counts as none
	var u *persistence.User
	phc := ""
	err := m.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		if u, err = tx.UserByEmail(email); err != nil {
			return err
		}
		phc, err = tx.Password(u.ID)
		return err
	})
	if err != nil && !errors.Is(err, persistence.ErrNotFound) {
		return nil, err
	}
	known := phc != ""
	if !known {
		phc = m.dummy // the same work whether or not the e-mail exists
	}
	ok, err := m.verify(ctx, phc, password)
	if errors.Is(err, ErrBusy) {
		m.m.signins.WithLabelValues("busy").Inc()
	}
	if err != nil {
		return nil, err
	}
	if !ok || !known {
		res.Fail()
		m.m.signins.WithLabelValues("failure").Inc()
		return nil, ErrInvalid
	}
	res.Succeed()
	token := randomToken()
	now := m.cfg.Now().UTC()
	rec := &persistence.Session{UserID: u.ID, CreatedAt: now, LastSeenAt: now, CSRFToken: randomToken()}
	h := HashToken(token)
	if err := m.cfg.Store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutSession(h, rec) }); err != nil {
		return nil, err
	}
	m.m.signins.WithLabelValues("success").Inc()
	m.m.created.Inc()
	return &Issued{Token: token, Session: &Session{User: u, Record: rec, Hash: h}}, nil
}

// Lookup resolves a session token: ErrNoSession when it is unknown (never issued, signed out,
// swept), ErrExpired when it is past its idle or absolute limit (the session is then ended). A
// live session's last-seen time is written when it is older than TouchEvery.
func (m *Manager) Lookup(ctx context.Context, token string) (*Session, error) {
	if token == "" || len(token) > 128 {
		return nil, ErrNoSession
	}
	h := HashToken(token)
	var s Session
	err := m.cfg.Store.View(func(tx *persistence.Tx) error {
		rec, err := tx.Session(h)
		if err != nil {
			return err
		}
		u, err := tx.User(rec.UserID)
		if err != nil {
			return err
		}
		s = Session{User: u, Record: rec, Hash: h}
		s.Member, s.Owner, err = teamOf(tx, u.ID)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, err
	}
	now := m.cfg.Now()
	if m.expired(s.Record, now) {
		_ = m.end(ctx, h, "expired") // the sweep retries a failed delete
		return nil, ErrExpired
	}
	if now.Sub(s.Record.LastSeenAt) >= TouchEvery {
		next := *s.Record
		next.LastSeenAt = now.UTC()
		err := m.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
			// Only if it still exists: a sign-out or a password change may have ended it.
			if _, err := tx.Session(h); err != nil {
				return err
			}
			return tx.PutSession(h, &next)
		})
		if errors.Is(err, persistence.ErrNotFound) {
			return nil, ErrNoSession
		}
		if errors.Is(err, persistence.ErrWriteFailed) {
			// The store cannot write now: the session stands, and a later request touches it.
			return &s, nil
		}
		if err != nil {
			return nil, err
		}
		s.Record = &next
	}
	return &s, nil
}

func (m *Manager) expired(s *persistence.Session, now time.Time) bool {
	return now.Sub(s.LastSeenAt) >= m.cfg.IdleTimeout || now.Sub(s.CreatedAt) >= m.cfg.MaxAge
}

// end deletes one session and counts it under reason.
func (m *Manager) end(ctx context.Context, h []byte, reason string) error {
	var ok bool
	err := m.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		var err error
		ok, err = tx.DeleteSession(h)
		return err
	})
	if ok {
		m.m.ended.WithLabelValues(reason).Inc()
		m.sessionsEnded()
	}
	return err
}

// SignOut ends a session.
func (m *Manager) SignOut(ctx context.Context, s *Session) error {
	return m.end(ctx, s.Hash, "signout")
}

// CheckCSRF reports whether token is the session's CSRF token (constant-time).
func (s *Session) CheckCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.Record.CSRFToken)) == 1
}

// ChangePassword checks the user's current password and sets a new one; every other session of
// the user ends, the one that asked stays. ErrInvalid when current is wrong (it counts as a failed
// sign-in for the throttle), auth.ErrInvalid (wrapped) when the new one is refused.
func (m *Manager) ChangePassword(ctx context.Context, s *Session, current, next, client string) error {
	email := strings.ToLower(s.User.Email)
	res, wait := m.throttle.Reserve(email, client)
	if res == nil {
		return &ThrottledError{RetryAfter: wait}
	}
	defer res.Release()
	var phc string
	if err := m.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		phc, err = tx.Password(s.User.ID)
		return err
	}); err != nil && !errors.Is(err, persistence.ErrNotFound) {
		return err
	}
	if phc == "" {
		phc = m.dummy
	}
	ok, err := m.verify(ctx, phc, current)
	if err != nil {
		return err
	}
	if !ok {
		res.Fail()
		return ErrInvalid
	}
	res.Succeed()
	if err := auth.ValidatePassword(next); err != nil {
		return err
	}
	var newPHC string
	if err := m.hash(ctx, func() error {
		var err error
		newPHC, err = auth.HashPassword(next, m.cfg.PasswordParams)
		return err
	}); err != nil {
		return err
	}
	ended := 0
	if err := m.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		if err := tx.SetPassword(s.User.ID, newPHC); err != nil {
			return err
		}
		var err error
		ended, err = tx.DeleteSessionsOfUser(s.User.ID, s.Hash)
		return err
	}); err != nil {
		return err
	}
	m.PasswordChanged(ended)
	return nil
}

// PasswordChanged counts the sessions a password change ended (the admin socket's changes too),
// and ends the streams they opened.
func (m *Manager) PasswordChanged(ended int) {
	m.m.ended.WithLabelValues("password_change").Add(float64(ended))
	if ended > 0 {
		m.sessionsEnded()
	}
}

// Sweep deletes expired sessions (at most 1000 per call) and returns how many it deleted.
func (m *Manager) Sweep(ctx context.Context) (int, error) {
	now := m.cfg.Now()
	// The streams of the sessions about to be deleted end as expired; sessions other instances on
	// the same store ended are seen here too.
	m.checkHeld()
	n := 0
	err := m.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		var err error
		n, err = tx.DeleteExpiredSessions(func(s *persistence.Session) bool { return m.expired(s, now) }, sweepBatch)
		return err
	})
	if err == nil {
		m.m.ended.WithLabelValues("expired").Add(float64(n))
	}
	m.throttle.Sweep()
	return n, err
}

// SweepKind is the session sweep's kind among the loops that run once across nodes
// (cluster.Singletons).
const SweepKind = "session-sweep"

// Run sweeps expired sessions and idle throttle entries every SweepEvery until ctx ends. Over
// several nodes one node runs it (a singleton, SweepKind) and every node runs RunLocal.
func (m *Manager) Run(ctx context.Context) {
	SweepEvery(ctx, m.cfg.SweepEvery, func(ctx context.Context) (bool, error) {
		n, err := m.Sweep(ctx)
		return n >= sweepBatch, err
	}, func(err error) { m.cfg.Log.Error("session sweep failed", "error", err) })
}

// RunLocal does, every SweepEvery until ctx ends, what the sweep does for this process alone,
// whichever process deletes the expired sessions: the streams this process holds for sessions
// that ended or expired end, and its idle throttle entries are forgotten.
func (m *Manager) RunLocal(ctx context.Context) {
	SweepEvery(ctx, m.cfg.SweepEvery, func(context.Context) (bool, error) {
		m.checkHeld()
		m.throttle.Sweep()
		return false, nil
	}, func(error) {})
}

// SweepEvery runs sweep every interval until ctx ends; a sweep that answers more (it filled its
// batch) is followed at once by another. A failed sweep is logged (unless ctx ended) and tried
// again at the next tick. Sessions and OAuth records (http/oauth) are swept this way.
func SweepEvery(ctx context.Context, interval time.Duration, sweep func(context.Context) (more bool, err error), logErr func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for {
				more, err := sweep(ctx)
				if err != nil {
					if ctx.Err() == nil {
						logErr(err)
					}
					break
				}
				if !more {
					break
				}
			}
		}
	}
}

type metrics struct {
	signins *prometheus.CounterVec
	created prometheus.Counter
	ended   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, store *persistence.Store) *metrics {
	m := &metrics{
		signins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_signins_total", Help: "Dashboard sign-in attempts by outcome (success, failure, throttled, busy).",
		}, []string{"outcome"}),
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_sessions_created_total", Help: "Dashboard sessions opened by a sign-in.",
		}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sessions_ended_total", Help: "Dashboard sessions ended, by reason (signout, expired, password_change).",
		}, []string{"reason"}),
	}
	for _, o := range []string{"success", "failure", "throttled", "busy"} {
		m.signins.WithLabelValues(o)
	}
	for _, r := range []string{"signout", "expired", "password_change"} {
		m.ended.WithLabelValues(r)
	}
	if reg != nil {
		active := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "herald_sessions_active", Help: "Dashboard sessions stored (expired ones count until the sweep deletes them).",
		}, func() float64 {
			n := 0
			_ = store.View(func(tx *persistence.Tx) error { n = tx.CountSessions(); return nil })
			return float64(n)
		})
		reg.MustRegister(m.signins, m.created, m.ended, active)
	}
	return m
}

// teamOf reads the member record of a user and the owner they act for: nil, nil for a user who
// is no one's member. A member whose owner is gone is ErrNotFound: the session opens nothing.
func teamOf(tx *persistence.Tx, userID string) (*persistence.Member, *persistence.User, error) {
	m, err := tx.Member(userID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	owner, err := tx.User(m.OwnerID)
	if err != nil {
		return nil, nil, err
	}
	return m, owner, nil
}

// SetWorkspace stores the workspace the dashboard shows for this session (the switcher's choice:
// "" for main, else a workspace's id the caller has checked is the user's). ErrNoSession when the
// session ended meanwhile (a sign-out, a password change).
func (m *Manager) SetWorkspace(ctx context.Context, s *Session, workspaceID string) error {
	err := m.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		rec, err := tx.Session(s.Hash)
		if err != nil {
			return err
		}
		next := *rec
		next.WorkspaceID = workspaceID
		return tx.PutSession(s.Hash, &next)
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return ErrNoSession
	}
	return err
}

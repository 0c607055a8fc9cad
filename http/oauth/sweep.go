package oauth

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/persistence"
)

const (
	// DefaultSweepEvery is how often the sweep deletes what can no longer be used.
	DefaultSweepEvery = 10 * time.Minute
	// UnusedClientTTL is how long a registered client that no grant or code names is kept after
	// its last registration: a host registers just before it sends the user to the consent page,
	// so a client never approved within the day never will be.
	UnusedClientTTL = 24 * time.Hour
	// sweepBatch bounds the records of each bucket one transaction of the sweep deletes.
	sweepBatch = 500
)

// Swept counts what one sweep deleted.
type Swept struct {
	Codes, AccessTokens, RefreshTokens, Clients int
}

// full reports whether a bucket filled its batch: more may be waiting.
func (w Swept) full() bool {
	return w.Codes >= sweepBatch || w.AccessTokens+w.RefreshTokens >= sweepBatch || w.Clients >= sweepBatch
}

// Sweep deletes, in one transaction and at most sweepBatch records of each bucket:
//   - codes past their 60 seconds; a used code is kept while its grant lives, so that a replay
//     still revokes the grant (RFC 6749 4.1.2);
//   - access and refresh tokens past their expiry, and every token of a grant that was revoked
//     or whose connector key expired or is gone; a rotated refresh token of a live grant is kept
//     until it expires, so that its reuse still ends the grant;
//   - clients last registered more than UnusedClientTTL ago that no grant or code names (never
//     approved), with their metadata's index entry.
//
// Grants themselves stay, with their connector keys (listed, revoked, in the key history).
func (s *Service) Sweep(ctx context.Context) (Swept, error) {
	now := s.cfg.Now().UTC()
	var w Swept
	err := s.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		w = Swept{}
		liveKeys := map[string]bool{}
		live := func(keyID string) bool {
			if l, ok := liveKeys[keyID]; ok {
				return l
			}
			k, err := tx.APIKey(keyID)
			l := err == nil && k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
			liveKeys[keyID] = l
			return l
		}
		var err error
		if w.AccessTokens, w.RefreshTokens, err = tx.DeleteOAuthTokens(func(t *persistence.OAuthToken) bool {
			return !now.Before(t.ExpiresAt) || !live(t.KeyID)
		}, sweepBatch); err != nil {
			return err
		}
		if w.Codes, err = tx.DeleteOAuthCodes(func(c *persistence.OAuthCode) bool {
			return !now.Before(c.ExpiresAt) && (c.UsedAt == nil || !live(c.KeyID))
		}, sweepBatch); err != nil {
			return err
		}
		used, err := tx.OAuthClientsInUse()
		if err != nil {
			return err
		}
		w.Clients, err = tx.DeleteOAuthClients(func(c *persistence.OAuthClient) bool {
			return !used[c.ID] && !now.Before(c.LastRegistered().Add(UnusedClientTTL))
		}, sweepBatch)
		return err
	})
	if err != nil {
		return Swept{}, err
	}
	s.swept.WithLabelValues("code").Add(float64(w.Codes))
	s.swept.WithLabelValues("access_token").Add(float64(w.AccessTokens))
	s.swept.WithLabelValues("refresh_token").Add(float64(w.RefreshTokens))
	s.swept.WithLabelValues("client").Add(float64(w.Clients))
	return w, nil
}

// SweepKind is the OAuth sweep's kind among the loops that run once across nodes
// (cluster.Singletons).
const SweepKind = "oauth-sweep"

// Run sweeps every SweepEvery until ctx ends; a sweep that filled a batch is followed at once by
// another.
func (s *Service) Run(ctx context.Context) {
	session.SweepEvery(ctx, s.cfg.SweepEvery, func(ctx context.Context) (bool, error) {
		w, err := s.Sweep(ctx)
		return w.full(), err
	}, func(err error) { s.cfg.Log.Error("oauth: sweep failed", "error", err) })
}

func newSweptCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_oauth_swept_total",
		Help: "OAuth records deleted by the periodic sweep, by record (code, access_token, refresh_token, client).",
	}, []string{"record"})
	for _, r := range []string{"code", "access_token", "refresh_token", "client"} {
		c.WithLabelValues(r)
	}
	return c
}

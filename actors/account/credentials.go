package account

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// seal encodes and encrypts credentials.
func (a *Actor) seal(c platforms.Credentials) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return a.deps.Box.Seal(b), nil
}

func (a *Actor) save(next *persistence.Account) error {
	if err := a.update(func(tx *persistence.Tx) error { return tx.PutAccount(next) }); err != nil {
		return err
	}
	if a.acc != nil && string(a.acc.DefaultOptions) != string(next.DefaultOptions) {
		a.deps.Store.ForgetAccount(next.Scope(), next.ID) // what the store's cache knows of its defaults
	}
	return nil
}

func (a *Actor) create(ctx actor.Context, m *Create) {
	if a.acc != nil {
		actors.ReplyError(ctx, ErrExists)
		return
	}
	next := *m.Account
	next.ID = a.id
	sealed, err := a.seal(m.Creds)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	next.Secret = sealed
	applyTokens(&next, m.Creds)
	if len(next.DefaultOptions) == 0 {
		next.DefaultOptions = platforms.ConnectDefaults(platforms.Platform(next.Platform), m.Creds.Extra)
	}
	if err := a.save(&next); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	a.acc, a.creds = &next, m.Creds
	a.adapter = a.deps.Adapters[platforms.Platform(next.Platform)]
	a.lane.setCredentials(a.adapter, a.creds)
	c := next
	actors.Reply(ctx, &Reply{Account: &c})
}

// setCredentials stores fresh tokens; a refresh token the network did not send again is kept.
func (a *Actor) setCredentials(ctx actor.Context, m *SetCredentials) {
	if a.acc == nil {
		actors.ReplyError(ctx, ErrNotFound)
		return
	}
	creds := keepRefreshToken(m.Creds, a.creds)
	next := *a.acc
	if m.Username != nil {
		next.Username = m.Username
	}
	if m.Kind != "" {
		next.Kind = m.Kind
	}
	if m.DisplayName != nil {
		next.DisplayName = m.DisplayName
	}
	if err := a.storeCreds(&next, creds); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	c := *a.acc
	actors.Reply(ctx, &Reply{Account: &c})
	a.pump(ctx)
}

// owned is nil when the account exists (and is not being deleted) and, when scope is set, is in
// that workspace (persistence.Scope); else ErrNotFound or ErrForbidden.
func (a *Actor) owned(scope string) error {
	switch {
	case a.acc == nil || a.deleting != nil:
		return ErrNotFound
	case scope != "" && a.acc.Scope() != scope:
		return ErrForbidden
	}
	return nil
}

// setDefaults stores the account's default options; publishes taken from now on go out with them.
func (a *Actor) setDefaults(ctx actor.Context, m *SetDefaults) {
	if err := a.owned(m.Scope); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	next := *a.acc
	next.DefaultOptions = m.Options
	if err := a.save(&next); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	a.acc = &next
	c := next
	actors.Reply(ctx, &Reply{Account: &c})
}

func (a *Actor) storeCreds(next *persistence.Account, creds platforms.Credentials) error {
	sealed, err := a.seal(creds)
	if err != nil {
		return err
	}
	next.Secret = sealed
	next.IsActive = true
	applyTokens(next, creds)
	// Tokens that work again (a refresh that succeeded, or the account connected again) end a
	// need to reconnect.
	next.ReconnectAt, next.ReconnectReason = nil, ""
	if err := a.save(next); err != nil {
		return err
	}
	a.acc, a.creds = next, creds
	a.unsavedCreds = false
	a.failing = "" // tokens that work again: what waits is published again
	a.lane.setCredentials(a.adapter, a.creds)
	return nil
}

// storeFailed counts a commit the store could not make and returns the wait before the next try;
// the first failure of a streak is logged.
func (a *Actor) storeFailed(what string, err error) time.Duration {
	a.storeFailures++
	if a.storeFailures == 1 {
		a.deps.Log.Warn(what+" failed; it is retried until the store takes it", "account_id", a.id, "error", err)
	}
	return actors.StoreRetryDelay(a.storeFailures)
}

// saveUnsavedCreds stores the tokens a refresh gave that the store could not take then.
func (a *Actor) saveUnsavedCreds(ctx actor.Context) {
	if !a.unsavedCreds || a.acc == nil {
		a.unsavedCreds = false
		return
	}
	next := *a.acc
	if err := a.storeCreds(&next, a.creds); err != nil {
		actors.SendSelfAfter(ctx, a.storeFailed("storing refreshed credentials", err), &saveCreds{})
		return
	}
	a.storeFailures = 0
}

// keepRefreshToken never overwrites a stored refresh token with an empty one: a network that
// does not send it again keeps it, and its expiry with it.
func keepRefreshToken(next, old platforms.Credentials) platforms.Credentials {
	if next.RefreshToken == "" {
		next.RefreshToken = old.RefreshToken
	}
	if next.RefreshToken == old.RefreshToken && next.RefreshExpiresAt.IsZero() {
		next.RefreshExpiresAt = old.RefreshExpiresAt
	}
	return next
}

// applyTokens copies what the API reports of the credentials onto the account record: the
// access token's expiry, whether Herald renews it (it holds a refresh token), and until when.
func applyTokens(next *persistence.Account, c platforms.Credentials) {
	next.TokenExpiresAt, next.RefreshExpiresAt = nil, nil
	if !c.ExpiresAt.IsZero() {
		exp := c.ExpiresAt.UTC()
		next.TokenExpiresAt = &exp
	}
	next.Refreshes = c.RefreshToken != ""
	if next.Refreshes && !c.RefreshExpiresAt.IsZero() {
		exp := c.RefreshExpiresAt.UTC()
		next.RefreshExpiresAt = &exp
	}
}

// needReconnect records, durably, that the account's token cannot be renewed and why, so that
// the API reports it expired until the account is connected again (storeCreds clears it). The
// first reason is kept.
func (a *Actor) needReconnect(reason string) {
	if a.acc == nil || a.acc.ReconnectAt != nil {
		return
	}
	next := *a.acc
	at := a.deps.Now().UTC()
	next.ReconnectAt, next.ReconnectReason = &at, reason
	if err := a.save(&next); err != nil {
		a.deps.Log.Error("recording that the account must be connected again failed", "account_id", a.id, "platform", next.Platform, "error", err)
		return
	}
	a.acc = &next
	a.deps.Log.Warn("the account must be connected again", "account_id", a.id, "platform", next.Platform, "reason", reason)
}

func (a *Actor) startRefresh(ctx actor.Context, forced bool) {
	if a.deps.Fence != nil && !a.deps.Fence.Trusted(a.id) {
		// A refresh rotates the account's tokens at the network: only the node that owns the
		// account may make it. This one no longer may, so the actor stops (Receive).
		a.untrusted = true
		return
	}
	a.refreshing = true
	adapter, creds := a.adapter, a.creds
	platform := a.acc.Platform
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		c = a.gated(c)
		start := time.Now()
		next, err := adapter.Refresh(c, creds)
		cancel()
		a.observeCall(platform, "refresh", start, err)
		root.Send(self, &refreshDone{creds: next, err: err, forced: forced})
	}()
}

func (a *Actor) refreshDone(ctx actor.Context, m *refreshDone) {
	a.refreshing = false
	defer a.resumeReads(ctx, m)
	if a.acc == nil {
		return
	}
	platform := a.acc.Platform
	now := a.deps.Now()
	if m.err == nil {
		creds := keepRefreshToken(m.creds, a.creds)
		if creds.UserID == "" {
			creds.UserID = a.creds.UserID
		}
		if creds.Extra == nil {
			creds.Extra = a.creds.Extra
		}
		next := *a.acc
		if err := a.storeCreds(&next, creds); err != nil {
			// The network issued these tokens and may have retired the old ones: use them, and
			// store them once the store can take them.
			a.creds, a.unsavedCreds = creds, true
			a.lane.setCredentials(a.adapter, a.creds)
			actors.SendSelfAfter(ctx, a.storeFailed("storing refreshed credentials", err), &saveCreds{})
		}
		a.deps.Metrics.Refreshes.WithLabelValues(platform, "ok").Inc()
		a.pump(ctx)
		return
	}
	a.deps.Metrics.Refreshes.WithLabelValues(platform, platforms.KindOf(m.err).String()).Inc()
	a.refreshNext = now.Add(5 * time.Minute)
	kind := platforms.KindOf(m.err)
	if kind == platforms.Permanent || kind == platforms.AuthExpired {
		// The network refused the refresh (revoked, consent withdrawn, refresh token expired):
		// the token cannot be renewed until the account is connected again.
		a.needReconnect(fmt.Sprintf("%s refused the token refresh (%s)", platform, errorMessage(m.err)))
	}
	if m.forced {
		// The network refused the access token itself: it no longer works. Fail what needed it,
		// and hold the token as expired, so that reads answer that the account must be connected
		// again (reconnectReason) until the next refresh may be tried.
		next := *a.acc
		expired := now.UTC()
		if a.creds.ExpiresAt.IsZero() || a.creds.ExpiresAt.After(expired) {
			a.creds.ExpiresAt = expired
		}
		if next.TokenExpiresAt == nil || next.TokenExpiresAt.After(expired) {
			next.TokenExpiresAt = &expired
			if err := a.save(&next); err == nil {
				a.acc = &next
			}
		}
		a.failWaiting(fmt.Sprintf("%s token refresh failed (%s); connect the account again", platform, errorMessage(m.err)))
		a.pumpLater(ctx)
		return
	}
	a.pump(ctx)
}

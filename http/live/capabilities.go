package live

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cache"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
)

// What an account allows (GET /v1/accounts/:id/capabilities): its network's limits and options
// schema, which are fixed, and its choices, which only the network knows now (a TikTok creator's
// privacy levels, Pinterest boards, YouTube categories and playlists). The choices are read
// through the account's actor, within its budget, and cached under the live-data rules (the
// 90-second floor, fresh=true, one fill per account at a time). The check of a post reads them
// through the same cache (Choices), so that validating many posts to one account costs one call.

// Limits are a network's limits on a post.
type Limits struct {
	TextMax int `json:"text_max"`
	// TextUnit is how the network counts text (registry.TextLimit.Count).
	TextUnit string                `json:"text_unit"`
	Media    platforms.MediaLimits `json:"media"`
	// ThreadMaxParts is the longest thread, the post included (0: the network has no threads);
	// FirstCommentMax the longest first comment (0: none is published there).
	ThreadMaxParts  int `json:"thread_max_parts"`
	FirstCommentMax int `json:"first_comment_max"`
}

// Capabilities is GET /v1/accounts/:id/capabilities.
type Capabilities struct {
	AccountID string    `json:"account_id"`
	Platform  string    `json:"platform"`
	FetchedAt time.Time `json:"fetched_at"`
	Limits    Limits    `json:"limits"`
	// OptionsSchema is the JSON Schema (2020-12) of the account's network options.
	OptionsSchema   map[string]any `json:"options_schema"`
	RequiredOptions []string       `json:"required_options"`
	// DefaultOptions are the account's defaults ({} when none).
	DefaultOptions json.RawMessage `json:"default_options"`
	// Choices are the account's live choices; empty for a network whose options do not depend
	// on the account.
	Choices platforms.Choices `json:"choices"`
}

// LimitsOf is a network's limits.
func LimitsOf(p platforms.Platform, adapter platforms.Adapter) Limits {
	tl := registry.TextLimits[p]
	l := Limits{TextMax: tl.Max, TextUnit: tl.Count, FirstCommentMax: platforms.CommentMax(p)}
	if p.HasThreads() {
		l.ThreadMaxParts = platforms.MaxThreadParts
	}
	if ml, ok := adapter.(platforms.MediaLimiter); ok {
		l.Media = ml.MediaLimits()
	}
	if l.Media.Types == nil {
		l.Media.Types = []string{}
	}
	return l
}

// Capabilities answers what the user's account allows; fresh reads the choices again unless
// they are younger than the floor.
func (s *Service) Capabilities(ctx context.Context, scope, accountID string, fresh bool) (*Capabilities, error) {
	a, err := s.ownedAccount(scope, accountID)
	if err != nil {
		return nil, err
	}
	p := platforms.Platform(a.Platform)
	out := &Capabilities{
		AccountID: a.ID, Platform: a.Platform, Limits: LimitsOf(p, s.cfg.Adapters[p]),
		OptionsSchema: platforms.OptionsSchema(p), RequiredOptions: platforms.RequiredOptions(p),
		DefaultOptions: a.DefaultOptions, FetchedAt: s.cfg.Now().UTC(),
	}
	if out.RequiredOptions == nil {
		out.RequiredOptions = []string{}
	}
	if len(out.DefaultOptions) == 0 {
		out.DefaultOptions = json.RawMessage("{}")
	}
	if _, ok := s.cfg.Adapters[p].(platforms.ChoiceReader); !ok {
		return out, nil
	}
	e, err := s.choices(ctx, scope, a, fresh)
	if err != nil {
		return nil, err
	}
	out.Choices, out.FetchedAt = e.Value, e.FetchedAt.UTC()
	return out, nil
}

// Choices are an account's live choices for the check of a post: nil (and no error) when its
// network's options do not depend on the account, or when they could not be read now (the
// check then leaves the network to judge them when the post goes out, and says so).
func (s *Service) Choices(ctx context.Context, scope, accountID string, p platforms.Platform) *platforms.Choices {
	if _, ok := s.cfg.Adapters[p].(platforms.ChoiceReader); !ok {
		return nil
	}
	e, err := s.choices(ctx, scope, &persistence.Account{ID: accountID, Platform: string(p)}, false)
	if err != nil {
		s.cfg.Log.Debug("live: choices unread for a check", "platform", p, "error", err)
		return nil
	}
	return &e.Value
}

func (s *Service) choices(ctx context.Context, scope string, a *persistence.Account, fresh bool) (cache.Entry[platforms.Choices], error) {
	key := cache.Key(scope, "choices;a="+a.ID)
	return s.choiceCache.Get(ctx, key, fresh, func(ctx context.Context) (platforms.Choices, error) {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.Deadline)
		defer cancel()
		reply, err := actors.Ask[*account.ReadReply](ctx, s.cfg.Accounts.To(a.ID), &account.Read{
			Op: account.OpChoices, Scope: scope, Deadline: deadlineOf(ctx),
		})
		if err != nil {
			_, out := s.accountError(platforms.Platform(a.Platform), doReadChoices, err)
			return platforms.Choices{}, out
		}
		return reply.Choices, nil
	})
}

// ownedAccount reads an account of the user: 404 when there is none or it is another user's.
func (s *Service) ownedAccount(scope, id string) (*persistence.Account, error) {
	var a *persistence.Account
	err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		a, err = tx.Account(id)
		return err
	})
	switch {
	case errors.Is(err, persistence.ErrNotFound) || (err == nil && a.Scope() != scope):
		return nil, apierr.NotFound("connected account")
	case err != nil:
		return nil, err
	}
	return a, nil
}

// ForgetChoices drops an account's cached choices (its credentials changed, or it was
// disconnected).
func (s *Service) ForgetChoices(scope, accountID string) {
	s.choiceCache.Forget(cache.Key(scope, "choices;a="+accountID))
}

package accountlink

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/platforms"
)

// Picking what a consent granted.
//
// A consent can grant several accounts: a LinkedIn member and the organisations they administer,
// the Facebook Pages a user manages and the Instagram professional accounts linked to them
// (platforms.Granter; an account on another network than the consent's is connected on its own
// network). When it grants one, Complete connects it as before. When it grants more, Complete
// connects nothing yet: it seals the grants (their tokens included) into the connect state, in the
// same store as the state and never in a page or a URL, and returns the choices (Result.Choices)
// for the browser's picker. The picker's form (POST PickPath, with the session's CSRF token and the
// state token) names the choices by their network ids; Pick checks them against the sealed grants
// and connects each one chosen as its own account. A submission naming anything the consent did not
// grant, or nothing, is refused and changes nothing; the first accepted one uses the choices up
// (ChosenAt, set in the same write that finds it unset) and drops the sealed tokens. The choices
// expire with the state.

// PickPath is the picker form's route.
const PickPath = "/v1/accounts/connect/pick"

// grantsKeyInfo separates the key that seals the grants from every other use of the state key.
const grantsKeyInfo = "herald connect grants v1"

// Errors of the picker.
var (
	// ErrNoChoice means the picker was submitted with nothing ticked.
	ErrNoChoice = errors.New("connect: no account was chosen")
	// ErrNotGranted means the picker named an account the consent did not grant.
	ErrNotGranted = errors.New("connect: the choice names an account the consent did not grant")
	// ErrNoChoices means the state has no choices to pick from (its consent granted one account,
	// or was not completed).
	ErrNoChoices = errors.New("connect: the connection link has nothing to choose from")
)

// Choice is one account a consent granted, as the picker lists it.
type Choice struct {
	// ID is what the form submits: the account's network id (member, organisation, Page) for an
	// account on the consent's network, "platform:id" for one on another network (the Instagram
	// account linked to a Facebook Page), so that ids of two networks never mix.
	ID string
	// Platform is the network the account is on.
	Platform platforms.Platform
	Kind     string
	Name     string
}

// sealedGrants is what a state's Choices hold once opened.
type sealedGrants struct {
	State  string            `json:"state"`
	Grants []platforms.Grant `json:"grants"`
}

func newGrantsBox(stateKey []byte) (*secret.Box, error) {
	k, err := hkdf.Key(sha256.New, stateKey, nil, grantsKeyInfo, 32)
	if err != nil {
		return nil, err
	}
	return secret.NewBox(k)
}

func (s *Service) sealGrants(stateID string, grants []platforms.Grant) ([]byte, error) {
	raw, err := json.Marshal(sealedGrants{State: stateID, Grants: grants})
	if err != nil {
		return nil, err
	}
	return s.box.Seal(raw), nil
}

func (s *Service) openGrants(st *persistence.ConnectState) ([]platforms.Grant, error) {
	raw, err := s.box.Open(st.Choices)
	if err != nil {
		return nil, err
	}
	var g sealedGrants
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, err
	}
	if g.State != st.ID {
		return nil, secret.ErrOpen
	}
	return g.Grants, nil
}

// platformOf is the network of a grant of a consent on p.
func platformOf(p platforms.Platform, g platforms.Grant) platforms.Platform {
	if g.Platform == "" {
		return p
	}
	return g.Platform
}

// choiceID is the id the picker's form names a grant of a consent on p by.
func choiceID(p platforms.Platform, g platforms.Grant) string {
	if on := platformOf(p, g); on != p {
		return string(on) + ":" + g.Creds.UserID
	}
	return g.Creds.UserID
}

// choicesOf lists the grants of a consent on p for the picker.
func choicesOf(p platforms.Platform, grants []platforms.Grant) []Choice {
	out := make([]Choice, 0, len(grants))
	for _, g := range grants {
		out = append(out, Choice{ID: choiceID(p, g), Platform: platformOf(p, g), Kind: g.Kind, Name: g.Name})
	}
	return out
}

// usable drops grants without a network id or on a network Herald does not know, and a second
// grant of one account (network and id); what is left are the accounts a consent on p can
// connect.
func usable(p platforms.Platform, grants []platforms.Grant) []platforms.Grant {
	seen := map[string]bool{}
	out := grants[:0:0]
	for _, g := range grants {
		id := strings.TrimSpace(g.Creds.UserID)
		key := choiceID(p, g)
		if id == "" || !platformOf(p, g).Valid() || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, g)
	}
	return out
}

// offer keeps a consent's grants for the picker in the state (already used by the callback) and
// returns the choices.
func (s *Service) offer(ctx context.Context, st *persistence.ConnectState, grants []platforms.Grant) ([]Choice, error) {
	sealed, err := s.sealGrants(st.ID, grants)
	if err != nil {
		return nil, fmt.Errorf("connect: seal choices: %w", err)
	}
	if err := s.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		got, err := tx.ConnectState(st.ID)
		if err != nil {
			return err
		}
		got.Choices = sealed
		return tx.PutConnectState(got)
	}); err != nil {
		return nil, fmt.Errorf("connect: store choices: %w", err)
	}
	return choicesOf(platforms.Platform(st.Platform), grants), nil
}

// Choices returns what the state's consent granted, for showing the picker again (a reload of
// the picker's page is the callback's, which is used; this serves a refused submission's page).
// Errors as Pick's, before anything is chosen.
func (s *Service) Choices(token, userID string, now time.Time) (platforms.Platform, []Choice, error) {
	id, err := s.check(token, now)
	if err != nil {
		return "", nil, err
	}
	var st *persistence.ConnectState
	if err := s.cfg.Store.View(func(tx *persistence.Tx) (err error) {
		st, err = tx.ConnectState(id)
		return err
	}); err != nil {
		if errors.Is(err, persistence.ErrNotFound) {
			return "", nil, ErrBadState
		}
		return "", nil, err
	}
	p := platforms.Platform(st.Platform)
	if err := pickable(st, userID, now); err != nil {
		return p, nil, err
	}
	grants, err := s.openGrants(st)
	if err != nil {
		return p, nil, ErrBadState
	}
	return p, choicesOf(p, grants), nil
}

// pickable is nil when st's choices can be picked by userID at now.
func pickable(st *persistence.ConnectState, userID string, now time.Time) error {
	if err := notHeld(st, userID); err != nil {
		return err
	}
	switch {
	case !now.Before(st.ExpiresAt):
		return ErrExpired
	case st.ChosenAt != nil:
		return ErrUsed
	case len(st.Choices) == 0:
		return ErrNoChoices
	}
	return nil
}

// Pick connects the accounts chosen (by their network ids) among those the state's consent
// granted, for userID (the browser's signed-in Herald user, or for a connect link's flow the
// browser holding it: BrowserHolder): each one becomes its own account,
// or renews the tokens of the account the user already has for it. Nothing is written when the
// state is not userID's, expired, already picked from, or when ids is empty (ErrNoChoice) or
// names anything the consent did not grant (ErrNotGranted). The results follow the order of the
// grants.
func (s *Service) Pick(ctx context.Context, token, userID string, ids []string, now time.Time) (platforms.Platform, []*Result, error) {
	id, err := s.check(token, now)
	if err != nil {
		return "", nil, err
	}
	var p platforms.Platform
	var chosen []platforms.Grant
	var outcome error
	var taken *persistence.ConnectState
	err = s.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		p, chosen, outcome, taken = "", nil, nil, nil // the function may run twice
		st, err := tx.ConnectState(id)
		if errors.Is(err, persistence.ErrNotFound) {
			outcome = ErrBadState
			return nil
		}
		if err != nil {
			return err
		}
		p = platforms.Platform(st.Platform)
		if outcome = pickable(st, userID, now); outcome != nil {
			return nil
		}
		grants, err := s.openGrants(st)
		if err != nil {
			outcome = ErrBadState
			return nil
		}
		if chosen, outcome = choose(p, grants, ids); outcome != nil {
			return nil
		}
		at := now.UTC()
		st.ChosenAt, st.Choices = &at, nil
		taken = st
		return tx.PutConnectState(st)
	})
	if err != nil {
		return p, nil, fmt.Errorf("connect: use choices: %w", err)
	}
	if outcome != nil {
		return p, nil, outcome
	}
	// The accounts go to the state's user and workspace: the holder may be a link's browser.
	var out []*Result
	for _, g := range chosen {
		res, err := s.saveGrant(ctx, taken.UserID, taken.WorkspaceID, p, g)
		if err != nil {
			s.linkOutcome(ctx, taken, p, nil, err, now)
			return p, out, err
		}
		out = append(out, res)
	}
	s.linkOutcome(ctx, taken, p, out, nil, now)
	return p, out, nil
}

// choose returns the grants of a consent on p named by ids (choiceID), in the grants' order;
// ErrNoChoice when ids names none, ErrNotGranted when it names one the grants do not hold.
func choose(p platforms.Platform, grants []platforms.Grant, ids []string) ([]platforms.Grant, error) {
	want := map[string]bool{}
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			want[id] = true
		}
	}
	if len(want) == 0 {
		return nil, ErrNoChoice
	}
	var out []platforms.Grant
	for _, g := range grants {
		if id := choiceID(p, g); want[id] {
			out = append(out, g)
			delete(want, id)
		}
	}
	if len(want) > 0 {
		return nil, ErrNotGranted
	}
	return out, nil
}

// saveGrant saves one account a consent on p granted, on its own network (the Instagram account
// linked to a Facebook Page is an Instagram account: it renews the one connected through
// Instagram Login, and the other way round), with its kind and name.
func (s *Service) saveGrant(ctx context.Context, userID, workspaceID string, p platforms.Platform, g platforms.Grant) (*Result, error) {
	return s.save(ctx, userID, workspaceID, platformOf(p, g), g.Creds, g.Kind, g.Name)
}

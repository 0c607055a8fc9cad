package platforms

import "context"

// Kinds of connected accounts: what an account is on its network.
const (
	// KindProfile is a person's own account.
	KindProfile = "profile"
	// KindOrganization is a LinkedIn organisation (Company Page) the member administers.
	KindOrganization = "organization"
	// KindPage is a Facebook Page.
	KindPage = "page"
	// KindChannel is a YouTube channel.
	KindChannel = "channel"
)

// Grant is one account a consent lets Herald publish as: the member's own profile, an
// organisation they administer, a Page they manage, the Instagram professional account linked to
// a Page. Creds are that account's own credentials (a Page's token for a Page and for its
// Instagram account; the member's token for a LinkedIn organisation, whose UserID is the
// organisation's id): connecting it saves them as they are.
type Grant struct {
	// Platform is the network the account is on, when it is not the consent's own: a Facebook
	// consent grants the Instagram professional accounts linked to its Pages, which are Instagram
	// accounts (published through the Graph API on Facebook's host). Empty: the consent's network.
	Platform Platform
	Kind     string
	Name     string
	Creds    Credentials
}

// Granter is implemented by connectors whose consent can grant several accounts at once
// (LinkedIn: the member and the organisations they administer; Facebook: the Pages the user
// manages). The connect flow calls ExchangeGrants instead of Exchange and, when more than one
// account comes back, lets the person pick which ones to connect.
type Granter interface {
	// ExchangeGrants trades an authorization code as Exchange does and returns every account
	// the consent lets Herald publish as, in the network's order; never an empty list without an
	// error.
	ExchangeGrants(ctx context.Context, code, redirectURI, codeVerifier string) ([]Grant, error)
}

// SharedToken is the Credentials.Extra key set to "true" on the grants of a consent that
// granted several accounts through one authorisation (a LinkedIn member's token that their
// organisations post with too; a Facebook user's authorisation behind each Page's token).
// Revoking it for one account would cut off the others, so an adapter's Revoke leaves such a
// token alone: the person removes the app in the network's settings to withdraw it.
const SharedToken = "shared_token"

// MarkShared sets SharedToken on every grant when there are several.
func MarkShared(grants []Grant) {
	if len(grants) < 2 {
		return
	}
	for i := range grants {
		extra := make(map[string]string, len(grants[i].Creds.Extra)+1)
		for k, v := range grants[i].Creds.Extra {
			extra[k] = v
		}
		extra[SharedToken] = "true"
		grants[i].Creds.Extra = extra
	}
}

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
// organisation they administer, a Page they manage. Creds are that account's own credentials
// (a Page's token for a Page; the member's token for a LinkedIn organisation, whose UserID is the
// organisation's id): connecting it saves them as they are.
type Grant struct {
	Kind  string
	Name  string
	Creds Credentials
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

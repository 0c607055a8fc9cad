package persistence

// Account kinds: what a connected account is on its network.
const (
	// AccountProfile is a person's own account (a LinkedIn member, an X or Bluesky user, an
	// Instagram or Threads professional account, a Pinterest or TikTok user).
	AccountProfile = "profile"
	// AccountOrganization is a LinkedIn organisation (Company Page) the member administers.
	AccountOrganization = "organization"
	// AccountPage is a Facebook Page.
	AccountPage = "page"
	// AccountChannel is a YouTube channel.
	AccountChannel = "channel"
)

// AccountKinds lists the kinds in the order the API documents them.
var AccountKinds = []string{AccountProfile, AccountOrganization, AccountPage, AccountChannel}

// KindOf is the account's kind. A record written before accounts had kinds is read as the kind
// its network's accounts always were then: a Facebook account was always a Page, a YouTube one a
// channel, every other one the person's own profile. Nothing is rewritten.
func (a *Account) KindOf() string {
	if a.Kind != "" {
		return a.Kind
	}
	return DefaultKind(a.Platform)
}

// DefaultKind is the kind of an account on platform (an API platform identifier) that says none.
func DefaultKind(platform string) string {
	switch platform {
	case "facebook":
		return AccountPage
	case "youtube":
		return AccountChannel
	}
	return AccountProfile
}

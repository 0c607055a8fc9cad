package linkedin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/platforms"
)

// An organisation account is a LinkedIn organisation (Company Page) the member administers,
// connected with the member's own token: its Credentials carry the organisation's id as UserID,
// Extra["kind"] = "organization" and the member's id in Extra["member_id"]. Its posts, uploads and
// lookups name the organisation (urn:li:organization:{id}) as author and owner, which LinkedIn
// allows for an ADMINISTRATOR with the w_organization_social scope.
const (
	extraKind   = "kind"
	extraMember = "member_id"
)

var _ platforms.Granter = (*Adapter)(nil)

// isOrganization reports whether c are an organisation account's credentials.
func isOrganization(c platforms.Credentials) bool {
	return c.Extra[extraKind] == platforms.KindOrganization
}

// authorURN is the URN the account posts and uploads as: the organisation's for an organisation
// account, else the member's.
func authorURN(c platforms.Credentials) string {
	if isOrganization(c) {
		return "urn:li:organization:" + c.UserID
	}
	return personURN(c)
}

// maxOrganizations bounds how many organisations one consent offers.
const maxOrganizations = 100

// ExchangeGrants trades the code as Exchange does and returns the member's own profile followed
// by each organisation the member administers (GET /rest/organizationAcls?q=roleAssignee&
// role=ADMINISTRATOR&state=APPROVED, named by GET /rest/organizations/{id}). An app that LinkedIn
// has not granted the organisation scopes answers 403 to that finder: the member alone is then
// the choice, as before organisations were offered.
func (a *Adapter) ExchangeGrants(ctx context.Context, code, redirectURI, codeVerifier string) ([]platforms.Grant, error) {
	member, err := a.Exchange(ctx, code, redirectURI, codeVerifier)
	if err != nil {
		return nil, err
	}
	out := []platforms.Grant{{Kind: platforms.KindProfile, Name: member.Handle, Creds: member}}
	orgs, err := a.organizations(ctx, member)
	if err != nil {
		return nil, err
	}
	for _, o := range orgs {
		c := member
		c.UserID, c.Handle = o.id, o.name
		c.Extra = map[string]string{extraKind: platforms.KindOrganization, extraMember: member.UserID}
		out = append(out, platforms.Grant{Kind: platforms.KindOrganization, Name: o.name, Creds: c})
	}
	platforms.MarkShared(out)
	return out, nil
}

type organization struct{ id, name string }

// organizations lists the organisations the member administers, with their names.
func (a *Adapter) organizations(ctx context.Context, member platforms.Credentials) ([]organization, error) {
	q := url.Values{"q": {"roleAssignee"}, "role": {"ADMINISTRATOR"}, "state": {"APPROVED"}, "count": {"100"}}
	var acls struct {
		Elements []struct {
			Organization string `json:"organization"`
			Role         string `json:"role"`
			State        string `json:"state"`
		} `json:"elements"`
	}
	r, err := a.call(ctx, platforms.Call{Method: http.MethodGet, URL: a.base + "/rest/organizationAcls?" + q.Encode(), Bearer: member.AccessToken,
		Header: a.restHeader("X-RestLi-Method", "FINDER")}, &acls)
	if err != nil {
		var e *platforms.Error
		if r != nil && r.Status == http.StatusForbidden && errors.As(err, &e) {
			return nil, nil
		}
		return nil, err
	}
	var out []organization
	seen := map[string]bool{}
	for _, el := range acls.Elements {
		id, ok := strings.CutPrefix(el.Organization, "urn:li:organization:")
		if !ok || id == "" || seen[id] || el.Role != "ADMINISTRATOR" || el.State != "APPROVED" || len(out) == maxOrganizations {
			continue
		}
		seen[id] = true
		var org struct {
			LocalizedName string `json:"localizedName"`
			VanityName    string `json:"vanityName"`
		}
		if _, err := a.call(ctx, platforms.Call{Method: http.MethodGet, URL: a.base + "/rest/organizations/" + url.PathEscape(id), Bearer: member.AccessToken, Header: a.restHeader()}, &org); err != nil {
			return nil, err
		}
		name := org.LocalizedName
		if name == "" {
			name = org.VanityName
		}
		out = append(out, organization{id: id, name: name})
	}
	return out, nil
}

package sim

import (
	"html/template"
	"net/http"
	"sort"
	"strings"

	"github.com/heraldhq/herald/platforms"
)

// Simulated members: the network users a consent page can sign in as, and the organisations,
// Pages and linked Instagram professional accounts they manage, so that tests and the sandbox can
// walk Herald's picker of what a consent granted.
//
// A consent page signs in, in this order: the member its sim_member parameter names (what its own
// select submits), its login_hint, the member set for the network's next consent
// (POST /_sim/consent {"platform","member"}, SetMember), or else DefaultMember, at once. When the
// simulator asks (Options.AskMember, SetAskMember: the sandbox does), a consent page with no
// member named, opened by a browser (its Accept names text/html), shows a select of the network's
// members instead, DefaultMember first, and an Allow button, so that a person can choose; a
// program (curl -L, Go's HTTP client) still gets DefaultMember at once.

// DefaultMember is the member a consent page signs in when none is named: a person who manages
// nothing but their own profile (and, on Facebook, the one Page named after them).
const DefaultMember = "sim-user"

// MemberOrgAdmin is the LinkedIn member who administers two organisations (OrgAcme, OrgGlobex).
const MemberOrgAdmin = "sim-org-admin"

// MemberPages is the Facebook user who manages two Pages (PageCafe, PageBakery), each linked to
// an Instagram professional account.
const MemberPages = "sim-pages"

// The simulated organisations and Pages. One organisation's name has characters HTML escapes,
// so that a page that lists it shows whether it escapes them.
var (
	OrgAcme    = Managed{ID: "90210001", Name: "Acme <Widgets> & Co"}
	OrgGlobex  = Managed{ID: "90210002", Name: "Globex Corporation"}
	PageCafe   = Managed{ID: "80310001", Name: "Corner Café", Instagram: &Managed{ID: "17841400000000001", Name: "cornercafe"}}
	PageBakery = Managed{ID: "80310002", Name: "Hill Street Bakery", Instagram: &Managed{ID: "17841400000000002", Name: "hillstreetbakery"}}
)

// Managed is an organisation, a Page or an Instagram professional account a member manages.
type Managed struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Instagram is a Page's linked Instagram professional account.
	Instagram *Managed `json:"instagram,omitempty"`
}

// Member is one simulated member of a network.
type Member struct {
	Handle string `json:"handle"`
	// Label is how the consent page's select names the member.
	Label string `json:"label"`
	// Organizations are the LinkedIn organisations the member administers (ADMINISTRATOR,
	// APPROVED).
	Organizations []Managed `json:"organizations,omitempty"`
	// Pages are the Facebook Pages the member manages.
	Pages []Managed `json:"pages,omitempty"`
}

var members = map[platforms.Platform][]Member{
	platforms.LinkedIn: {
		{Handle: DefaultMember, Label: "Sim User (no organisation)"},
		{Handle: MemberOrgAdmin, Label: "Sim Org Admin (administers two organisations)", Organizations: []Managed{OrgAcme, OrgGlobex}},
	},
	platforms.Facebook: {
		{Handle: DefaultMember, Label: "Sim User (one Page)"},
		{Handle: MemberPages, Label: "Sim Pages (manages two Pages, each with Instagram)", Pages: []Managed{PageCafe, PageBakery}},
	},
}

// Members lists the simulated members of p, the default first.
func Members(p platforms.Platform) []Member { return members[p] }

// memberOf returns the member of p with this handle; nil for any other handle (a member who
// manages nothing but their own profile).
func memberOf(p platforms.Platform, handle string) *Member {
	for i := range members[p] {
		if members[p][i].Handle == handle {
			return &members[p][i]
		}
	}
	return nil
}

// linkedInstagram is the Instagram professional account linked to a simulated Page with this
// username.
func linkedInstagram(username string) (Managed, bool) {
	for _, m := range members[platforms.Facebook] {
		for _, pg := range m.Pages {
			if pg.Instagram != nil && pg.Instagram.Name == username {
				return *pg.Instagram, true
			}
		}
	}
	return Managed{}, false
}

// administers reports whether the LinkedIn member with this handle administers organisation id.
func administers(handle, id string) bool {
	if m := memberOf(platforms.LinkedIn, handle); m != nil {
		for _, o := range m.Organizations {
			if o.ID == id {
				return true
			}
		}
	}
	return false
}

// SetMember makes the next consent page of p sign in the member with this handle.
func (s *Sim) SetMember(p platforms.Platform, handle string) {
	if n := s.networks[p]; n != nil {
		n.Store.Put("consent-member", handle)
	}
}

// SetAskMember makes every consent page that names no member show the select of members (on), or
// sign in DefaultMember at once (off, unless Options.AskMember).
func (s *Sim) SetAskMember(on bool) {
	for _, n := range s.networks {
		n.Store.Put("consent-ask", on)
	}
}

// consentMember is the member a consent page signs in. When the page shows the select instead,
// it has answered r and shown is true. The select's form has no action: it submits to the page's
// own address (whatever prefix the simulator serves it under) with the same parameters and the
// member chosen.
func (n *Network) consentMember(w http.ResponseWriter, r *http.Request) (handle string, shown bool) {
	q := r.URL.Query()
	if h := q.Get("sim_member"); h != "" {
		return h, false
	}
	if h := q.Get("login_hint"); h != "" {
		return h, false
	}
	var pending string
	ask := n.Sim.opts.AskMember
	n.Store.With(func(objects map[string]any) {
		pending, _ = objects["consent-member"].(string)
		delete(objects, "consent-member")
		if on, ok := objects["consent-ask"].(bool); ok {
			ask = ask || on
		}
	})
	if pending != "" {
		return pending, false
	}
	if !ask || len(members[n.Platform]) < 2 || !strings.Contains(r.Header.Get("Accept"), "text/html") {
		return DefaultMember, false
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type field struct{ Name, Value string }
	var hidden []field
	for _, k := range keys {
		for _, v := range q[k] {
			hidden = append(hidden, field{k, v})
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = consentPage.Execute(w, struct {
		Network string
		Hidden  []field
		Members []Member
	}{n.Platform.Name(), hidden, members[n.Platform]})
	return "", true
}

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>{{.Network}} (simulated): sign in and allow</title></head>
<body><main>
<h1>{{.Network}} (simulated)</h1>
<p>Herald asks to publish for you. Sign in as:</p>
<form method="get">
{{range .Hidden}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">
{{end}}<select id="sim_member" name="sim_member">
{{range .Members}}<option value="{{.Handle}}">{{.Label}}</option>
{{end}}</select>
<button id="allow" type="submit">Allow</button>
</form>
</main></body></html>
`))

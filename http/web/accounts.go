package web

import (
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

type connectButton struct {
	Platform, Name string
	// Count is how many accounts of the network the user has connected.
	Count int
}

type accountsData struct {
	Accounts []accountRow
	Browser  []connectButton
	// Workspace is the API id of the workspace shown; Links its connect links, newest first.
	Workspace    string
	Links        []linkRow
	LinkMaxHours int
	// XConsent is true when the server has an X app: X connects through its consent (a button
	// among the browser networks', Reconnect, connect links) and the token form is folded away
	// for teams with an X app of their own.
	XConsent bool
}

// linkRow is a connect link as the Accounts page lists it.
type linkRow struct {
	ID, Prefix, Networks, Note, Status string
	ExpiresAt, CreatedAt               time.Time
	LastUsedAt                         *time.Time
	Uses                               int
	Active                             bool
}

// linkRows lists a workspace's connect links, newest first, with what each is now.
func linkRows(ls []*persistence.ConnectLink, now time.Time) []linkRow {
	out := make([]linkRow, 0, len(ls))
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		r := linkRow{ID: l.ID, Prefix: l.Prefix, Note: l.Note, ExpiresAt: l.ExpiresAt, CreatedAt: l.CreatedAt, LastUsedAt: l.LastUsedAt, Uses: l.Uses}
		names := make([]string, 0, len(l.Platforms))
		for _, p := range l.Platforms {
			names = append(names, networkName(p))
		}
		r.Networks = strings.Join(names, ", ")
		if r.Networks == "" {
			r.Networks = "Every network"
		}
		switch {
		case l.RevokedAt != nil:
			r.Status = "revoked"
		case !now.Before(l.ExpiresAt):
			r.Status = "expired"
		default:
			r.Status, r.Active = "active", true
		}
		out = append(out, r)
	}
	return out
}

// accounts is GET /accounts: the connected accounts with their health and a disconnect button,
// a connect button per browser network (X's too when the server has an X app), the credential
// forms of X and Bluesky, and the workspace's connect links (docs/workspaces.md) with the form
// that makes one.
func (p *pages) accounts(c *echo.Context) error {
	v := p.newView(c, "Accounts", "accounts", nil)
	d := accountsData{Workspace: server.Principal(c).WorkspaceID, LinkMaxHours: accountlink.LinkMaxHours}
	err := p.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.AccountsIn(v.Scope)
		if err != nil {
			return err
		}
		d.Accounts = accountRows(list, p.Now(), v.Zone)
		links, err := tx.ConnectLinks(v.Scope)
		if err != nil {
			return err
		}
		d.Links = linkRows(links, p.Now())
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	consent := accountlink.Browser
	if p.Connect != nil && p.Connect.Connects(platforms.X) {
		d.XConsent, consent = true, accountlink.Consent
		for i := range d.Accounts {
			if d.Accounts[i].Platform == string(platforms.X) {
				d.Accounts[i].Browser = true // Reconnect through X's consent
			}
		}
	}
	for _, b := range consent {
		n := 0
		for _, a := range d.Accounts {
			if a.Platform == string(b) {
				n++
			}
		}
		d.Browser = append(d.Browser, connectButton{Platform: string(b), Name: networkName(string(b)), Count: n})
	}
	v.Data = d
	return p.render(c, 200, "accounts", v)
}

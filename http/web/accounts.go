package web

import (
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/persistence"
)

type connectButton struct {
	Platform, Name string
	// Count is how many accounts of the network the user has connected.
	Count int
}

type accountsData struct {
	Accounts []accountRow
	Browser  []connectButton
}

// accounts is GET /accounts: the connected accounts with their health and a disconnect button,
// a connect button per browser network, and the credential forms of X and Bluesky.
func (p *pages) accounts(c *echo.Context) error {
	v := p.newView(c, "Accounts", "accounts", nil)
	var d accountsData
	err := p.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.AccountsIn(v.Scope)
		if err != nil {
			return err
		}
		d.Accounts = accountRows(list, p.Now(), v.Zone)
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	for _, b := range accountlink.Browser {
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

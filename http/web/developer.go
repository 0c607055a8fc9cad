package web

import (
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// webhookEvents are the events a webhook can subscribe to (the spec's four, and Herald's
// campaign.completed).
var webhookEvents = []string{"post.published", "post.failed", "post.scheduled", "post.deleted", "campaign.completed"}

// deliveriesShown is how many of a webhook's latest deliveries the page lists.
const deliveriesShown = 10

type keyRow struct {
	*persistence.APIKey
	// State is active, expired or revoked.
	State string
	// Workspace names the workspace the key is bound to ("" for a key of every workspace).
	Workspace string
}

type webhookRow struct {
	*persistence.Webhook
	Deliveries []*persistence.Delivery
	Total      int
	// Subscribed says, per event, whether the webhook has it (for the edit form's boxes).
	Subscribed map[string]bool
}

type developerData struct {
	// ShowKeys is false for a member below admin: the team's keys are an admin's to see.
	ShowKeys bool
	Keys     []keyRow
	Webhooks []webhookRow
	Events   []string
	// Scopes are what a new key may be limited to (auth.KeyScopes).
	Scopes []string
}

// developer is GET /developer: the user's API keys (each with the workspace it is bound to and
// the scopes it is limited to) and the workspace's webhooks with their latest deliveries.
func (p *pages) developer(c *echo.Context) error {
	v := p.newView(c, "Developer", "developer", nil)
	d := developerData{Events: webhookEvents, ShowKeys: server.Principal(c).HasRole(auth.RoleAdmin), Scopes: auth.KeyScopes}
	names := map[string]string{}
	for _, w := range v.Workspaces {
		names[w.ID] = w.Name
	}
	now := p.Now()
	err := p.Store.View(func(tx *persistence.Tx) error {
		var keys []*persistence.APIKey
		if d.ShowKeys {
			var err error
			if keys, err = tx.APIKeysOfUser(v.User.ID); err != nil {
				return err
			}
		}
		for i := len(keys) - 1; i >= 0; i-- { // newest first
			k := keys[i]
			st := "active"
			switch {
			case k.RevokedAt != nil:
				st = "revoked"
			case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
				st = "expired"
			}
			row := keyRow{APIKey: k, State: st}
			if k.WorkspaceID != "" {
				row.Workspace = names[k.WorkspaceID]
				if row.Workspace == "" {
					row.Workspace = "a deleted workspace"
				}
			}
			d.Keys = append(d.Keys, row)
		}
		hooks, err := tx.WebhooksIn(v.Scope)
		if err != nil {
			return err
		}
		for _, w := range hooks {
			dl, total, err := tx.ListDeliveries(w.ID, 0, deliveriesShown)
			if err != nil {
				return err
			}
			sub := map[string]bool{}
			for _, e := range w.Events {
				sub[e] = true
			}
			d.Webhooks = append(d.Webhooks, webhookRow{Webhook: w, Deliveries: dl, Total: total, Subscribed: sub})
		}
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	v.Data = d
	return p.render(c, 200, "developer", v)
}

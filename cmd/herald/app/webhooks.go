package app

import (
	"github.com/heraldhq/herald/actors/webhook"
)

// buildWebhooks builds the webhook service: subscription actors, the dispatcher that reads the
// outbox, and the egress policy (private targets only with WebhookAllowPrivate, which sandbox
// mode turns on; extra CA certificates from WebhookCAFile). Signing secrets are sealed with the
// same box as account tokens. It needs the store, the actor system, the box and the events
// notifier.
func (a *App) buildWebhooks() error {
	roots, err := webhook.LoadCAFile(a.Cfg.WebhookCAFile)
	if err != nil {
		return err
	}
	a.Webhooks = webhook.New(a.Actors, webhook.Options{
		Store: a.Store, Events: a.Events, Registry: a.Registry, Log: a.Log, Sealer: a.Box, Route: a.route(),
		Egress: webhook.EgressOptions{
			AllowPrivate: a.Cfg.WebhookAllowPrivate, RootCAs: roots, AttemptTimeout: a.Cfg.WebhookAttemptTimeout,
		},
		Schedule: a.Cfg.WebhookSchedule, MaxLive: a.Cfg.MaxLiveActors.For(webhook.KindName),
	})
	return nil
}

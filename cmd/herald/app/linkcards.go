package app

import (
	"time"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/linkcard"
)

// cardTimeout bounds the read of one link card, its page and image together.
const cardTimeout = 5 * time.Second

// buildCards builds the link card reader the adapters of Bluesky and LinkedIn and the validation
// of posts read pages with. It reads through an egress guard of its own built by the webhooks'
// rules and options (private targets only with WebhookAllowPrivate, which sandbox mode turns on;
// the CA file's certificates trusted): the same policy, with the card's own time bound and a
// connection pool apart from the deliveries'.
func (a *App) buildCards() error {
	roots, err := webhook.LoadCAFile(a.Cfg.WebhookCAFile)
	if err != nil {
		return err
	}
	a.Cards = linkcard.New(linkcard.Options{Egress: webhook.NewGuard(webhook.EgressOptions{
		AllowPrivate: a.Cfg.WebhookAllowPrivate, RootCAs: roots, AttemptTimeout: cardTimeout, MaxConnsPerHost: 4,
	}), Timeout: cardTimeout, Registry: a.Registry})
	return nil
}

// withCards is the networks' configurations with the card reader: every adapter gets it (those of
// networks without cards do not use it).
func withCards(cfg map[platforms.Platform]platforms.Config, cards platforms.CardReader) map[platforms.Platform]platforms.Config {
	out := make(map[platforms.Platform]platforms.Config, len(platforms.All))
	for _, p := range platforms.All {
		c := cfg[p]
		c.Cards = cards
		out[p] = c
	}
	return out
}

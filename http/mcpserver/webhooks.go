package mcpserver

import (
	"context"
	"net/http"
	"time"

	"github.com/heraldhq/herald/http/api"
)

var webhookEvents = []string{"post.published", "post.failed", "post.scheduled", "post.deleted", "campaign.completed"}

func (t *Tools) addWebhookTools() {
	add(t, read("list_webhooks", "List webhooks"),
		"The user's webhook subscriptions: id, URL, events, whether active.",
		t.listWebhooks)
	add(t, write("create_webhook", "Create a webhook").enum("events", webhookEvents...),
		"Subscribes an https URL to post events: Herald POSTs each event to it, signed. Answers the subscription with its signing secret, shown only this once.",
		t.createWebhook)
	add(t, write("delete_webhook", "Delete a webhook").destructive().idempotent(),
		"Deletes a webhook subscription; its pending deliveries are cancelled.",
		t.deleteWebhook)
}

type createWebhookIn struct {
	URL    string   `json:"url" jsonschema:"the receiver: a public https URL"`
	Events []string `json:"events" jsonschema:"the events to send"`
}

type webhookIDIn struct {
	WebhookID string `json:"webhook_id" jsonschema:"the subscription's id (list_webhooks)"`
}

// Webhook is a subscription.
type Webhook struct {
	WebhookID string    `json:"webhook_id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Active    bool      `json:"active"`
	CreatedAt time.Time `json:"created_at"`
	// DeactivatedReason says why Herald turned it off (its endpoint answered 410).
	DeactivatedReason *string `json:"deactivated_reason,omitempty"`
	// Secret is the signing secret, in create_webhook's answer only.
	Secret string `json:"secret,omitempty"`
}

// WebhookList answers list_webhooks.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// webhookOut is a subscription as /v1 answers it (http/api's WebhookCreated: the secret only
// in a create's answer) in the tools' words.
func webhookOut(w api.WebhookCreated) Webhook {
	return Webhook{WebhookID: w.ID, URL: w.URL, Events: w.Events, Active: w.Active, CreatedAt: w.CreatedAt, DeactivatedReason: w.DeactivatedReason, Secret: w.Secret}
}

func (t *Tools) listWebhooks(ctx context.Context, _ struct{}) (WebhookList, error) {
	var v1 struct {
		Data []api.WebhookCreated `json:"data"`
	}
	if _, err := t.call(ctx, get("/v1/webhooks", nil), &v1); err != nil {
		return WebhookList{}, err
	}
	out := WebhookList{Webhooks: make([]Webhook, 0, len(v1.Data))}
	for _, w := range v1.Data {
		out.Webhooks = append(out.Webhooks, webhookOut(w))
	}
	return out, nil
}

func (t *Tools) createWebhook(ctx context.Context, in createWebhookIn) (Webhook, error) {
	var v1 api.WebhookCreated
	if _, err := t.call(ctx, Request{Method: http.MethodPost, Path: "/v1/webhooks", Body: map[string]any{"url": in.URL, "events": in.Events}}, &v1); err != nil {
		return Webhook{}, err
	}
	return webhookOut(v1), nil
}

func (t *Tools) deleteWebhook(ctx context.Context, in webhookIDIn) (Deleted, error) {
	if _, err := t.call(ctx, Request{Method: http.MethodDelete, Path: "/v1/webhooks/" + esc(in.WebhookID)}, nil); err != nil {
		return Deleted{}, err
	}
	return Deleted{ID: in.WebhookID, Deleted: true}, nil
}

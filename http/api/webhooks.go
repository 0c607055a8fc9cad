package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// Webhook is a subscription as the API shows it (never with its secret, except WebhookCreated).
type Webhook struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Active    bool      `json:"active"`
	CreatedAt time.Time `json:"created_at"`
	// DeactivatedReason says why Herald turned the subscription off (its endpoint answered 410).
	DeactivatedReason *string `json:"deactivated_reason"`
}

// WebhookCreated is the create response: the subscription with its secret, shown once.
type WebhookCreated struct {
	Webhook
	Secret string `json:"secret"`
}

// RotatedSecret is the rotate-secret response.
type RotatedSecret struct {
	ID                      string    `json:"id"`
	Secret                  string    `json:"secret"`
	PreviousSecretExpiresAt time.Time `json:"previous_secret_expires_at"`
}

// WebhookDelivery is one entry of a subscription's delivery log.
type WebhookDelivery struct {
	ID               string     `json:"id"`
	EventID          string     `json:"event_id"`
	Event            string     `json:"event"`
	Status           string     `json:"status"`
	Attempts         int        `json:"attempts"`
	LastResponseCode *int       `json:"last_response_code"`
	LastError        *string    `json:"last_error"`
	NextAttemptAt    *time.Time `json:"next_attempt_at"`
	LastAttemptAt    *time.Time `json:"last_attempt_at"`
	CompletedAt      *time.Time `json:"completed_at"`
	CreatedAt        time.Time  `json:"created_at"`
}

func webhookView(w *persistence.Webhook) Webhook {
	out := Webhook{ID: w.ID, URL: w.URL, Events: append([]string{}, w.Events...), Active: w.Active, CreatedAt: w.CreatedAt}
	if w.DeactivatedReason != "" {
		r := w.DeactivatedReason
		out.DeactivatedReason = &r
	}
	return out
}

// WebhookDeliveryDetail is one delivery with the exact body sent (GET
// /webhooks/:id/deliveries/:deliveryId) and the receiver's last answer: LastResponseCode,
// LastError, and its body: ResponseBody the first 4 KiB as text (null for none, or for bytes
// that are not text), ResponseBodyBytes how many bytes it had (as far as they were read).
type WebhookDeliveryDetail struct {
	WebhookDelivery
	Payload           json.RawMessage `json:"payload"`
	ResponseBody      *string         `json:"response_body"`
	ResponseBodyBytes int64           `json:"response_body_bytes"`
}

// AnswerText is a delivery's kept answer as text, for showing: false when there is none or its
// bytes are not text (invalid UTF-8, or control characters other than tab, line feed, carriage
// return and form feed). A last character cut in two by the 4 KiB limit is dropped.
func AnswerText(d *persistence.Delivery) (string, bool) {
	b := d.LastResponseBody
	if len(b) == 0 {
		return "", false
	}
	if d.LastResponseSize > int64(len(b)) {
		// Cut at the limit: drop a last rune cut in two (at most utf8.UTFMax-1 bytes).
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.Valid(b); i++ {
			b = b[:len(b)-1]
		}
	}
	if !utf8.Valid(b) {
		return "", false
	}
	for _, r := range string(b) {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f') || r == 0x7f {
			return "", false
		}
	}
	return string(b), true
}

func deliveryView(d *persistence.Delivery) WebhookDelivery {
	return WebhookDelivery{
		ID: d.ID, EventID: d.EventID, Event: d.Type, Status: d.Status, Attempts: d.Attempts,
		LastResponseCode: d.LastStatusCode, LastError: d.LastError, NextAttemptAt: d.NextAttemptAt,
		LastAttemptAt: d.LastAttemptAt, CompletedAt: d.CompletedAt, CreatedAt: d.CreatedAt,
	}
}

// boolean reads a boolean field. Absent: nil, nil.
func (o object) boolean(field string) (*bool, error) {
	raw, ok := o[field]
	if !ok {
		return nil, nil
	}
	if jsonType(raw) != "boolean" {
		return nil, typeError(field, "boolean", raw)
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, typeError(field, "boolean", raw)
	}
	return &b, nil
}

// events reads the events field: a non-empty array of distinct known event names.
func (o object) events(required bool) ([]string, error) {
	raw, ok := o["events"]
	if !ok {
		if required {
			return nil, apierr.Validation("events: Required")
		}
		return nil, nil
	}
	if jsonType(raw) != "array" {
		return nil, typeError("events", "array", raw)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, typeError("events", "array", raw)
	}
	if len(items) == 0 {
		return nil, apierr.Validation("events: must contain at least one of %s", strings.Join(persistence.WebhookEvents, ", "))
	}
	out := make([]string, 0, len(items))
	seen := map[string]bool{}
	for i, it := range items {
		if jsonType(it) != "string" {
			return nil, apierr.Validation("events.%d: Expected string, received %s", i, jsonType(it))
		}
		var s string
		_ = json.Unmarshal(it, &s)
		if !oneOf(s, persistence.WebhookEvents) {
			return nil, apierr.Validation("events: unknown event %q (item %d); allowed: %s", truncate(s, 64), i, strings.Join(persistence.WebhookEvents, ", "))
		}
		if seen[s] {
			return nil, apierr.Validation("events: duplicate event %s", s)
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

func (h *handlers) webhookURL(c *echo.Context, raw string) (string, error) {
	u, err := h.Webhooks.Guard.CheckURL(c.Request().Context(), raw)
	var ue *webhook.URLError
	if errors.As(err, &ue) {
		return "", apierr.Validation("%s", ue.Error())
	}
	return u, err
}

// webhookError maps a subscription actor's error reply to the API's error.
func (h *handlers) webhookError(c *echo.Context, err error) error {
	var le *webhook.LimitError
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		return apierr.NotFound("webhook")
	case errors.Is(err, webhook.ErrForbidden):
		return apierr.Forbidden("webhook")
	case errors.Is(err, webhook.ErrDeliveryNotFound):
		return apierr.NotFound("delivery")
	case errors.Is(err, webhook.ErrInactive):
		return apierr.Validation("the webhook is turned off: turn it on to send to it")
	case errors.As(err, &le):
		return apierr.New(http.StatusBadRequest, apierr.CodeLimitExceeded, "%s", le.Error()).WithDetails(map[string]any{"limit": le.Max})
	}
	return h.actorError(c, "webhook", err)
}

func (h *handlers) listWebhooks(c *echo.Context) error {
	p := server.Principal(c)
	var hooks []*persistence.Webhook
	if err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		hooks, err = tx.WebhooksIn(p.Scope())
		return err
	}); err != nil {
		return h.storeError(c, err)
	}
	out := make([]Webhook, 0, len(hooks))
	for _, w := range hooks {
		out = append(out, webhookView(w))
	}
	return c.JSON(http.StatusOK, map[string]any{"data": out})
}

func (h *handlers) createWebhook(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	rawURL, err := o.str("url", true)
	if err != nil {
		return err
	}
	events, err := o.events(true)
	if err != nil {
		return err
	}
	u, err := h.webhookURL(c, *rawURL)
	if err != nil {
		return err
	}
	id := uuid.Must(uuid.NewV7()).String()
	r, err := ask[*webhook.Reply](h, c, h.Webhooks.To.To(id), &webhook.Create{UserID: server.Principal(c).User.ID, WorkspaceID: server.Principal(c).ObjectWorkspace(), URL: u, Events: events})
	if err != nil {
		return h.webhookError(c, err)
	}
	return c.JSON(http.StatusCreated, WebhookCreated{Webhook: webhookView(r.Webhook), Secret: r.Secret})
}

func (h *handlers) updateWebhook(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	msg := &webhook.Update{Scope: server.Principal(c).Scope()}
	rawURL, err := o.str("url", false)
	if err != nil {
		return err
	}
	if msg.Events, err = o.events(false); err != nil {
		return err
	}
	if msg.Active, err = o.boolean("active"); err != nil {
		return err
	}
	if rawURL == nil && msg.Events == nil && msg.Active == nil {
		return apierr.Validation("nothing to update: send at least one of url, events, active")
	}
	if rawURL != nil {
		u, err := h.webhookURL(c, *rawURL)
		if err != nil {
			return err
		}
		msg.URL = &u
	}
	r, err := ask[*webhook.Reply](h, c, h.Webhooks.To.To(id), msg)
	if err != nil {
		return h.webhookError(c, err)
	}
	return c.JSON(http.StatusOK, webhookView(r.Webhook))
}

func (h *handlers) deleteWebhook(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	if _, err := ask[*webhook.Reply](h, c, h.Webhooks.To.To(id), &webhook.Delete{Scope: server.Principal(c).Scope()}); err != nil {
		return h.webhookError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handlers) rotateWebhookSecret(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	r, err := ask[*webhook.Reply](h, c, h.Webhooks.To.To(id), &webhook.RotateSecret{Scope: server.Principal(c).Scope()})
	if err != nil {
		return h.webhookError(c, err)
	}
	out := RotatedSecret{ID: r.Webhook.ID, Secret: r.Secret}
	if r.Webhook.PreviousSecretUntil != nil {
		out.PreviousSecretExpiresAt = r.Webhook.PreviousSecretUntil.UTC()
	}
	return c.JSON(http.StatusOK, out)
}

func (h *handlers) listDeliveries(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	page, err := queryInt(c, "page", 1, 1, 1_000_000)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	user := server.Principal(c).Scope()
	var list []*persistence.Delivery
	total := 0
	err = h.Store.View(func(tx *persistence.Tx) error {
		if err := ownedWebhook(tx, id, user); err != nil {
			return err
		}
		list, total, err = tx.ListDeliveries(id, (page-1)*limit, limit)
		return err
	})
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if err != nil {
		return h.storeError(c, err)
	}
	items := make([]WebhookDelivery, 0, len(list))
	for _, d := range list {
		items = append(items, deliveryView(d))
	}
	return c.JSON(http.StatusOK, map[string]any{
		"data":       items,
		"pagination": map[string]int{"page": page, "limit": limit, "total": total},
	})
}

// sendTestEvent is POST /webhooks/:id/test: a test event (webhook.TestEventType) delivered at once
// through the delivery log. 202 with the pending delivery.
func (h *handlers) sendTestEvent(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	r, err := ask[*webhook.DeliveryReply](h, c, h.Webhooks.To.To(id), &webhook.SendTest{Scope: server.Principal(c).Scope()})
	if err != nil {
		return h.webhookError(c, err)
	}
	return c.JSON(http.StatusAccepted, deliveryView(r.Delivery))
}

// deliveryIDs are a delivery route's webhook and delivery ids.
func deliveryIDs(c *echo.Context) (id, deliveryID string, err error) {
	if id, err = parseUUID("id", c.Param("id")); err != nil {
		return "", "", err
	}
	deliveryID, err = parseUUID("deliveryId", c.Param("deliveryId"))
	return id, deliveryID, err
}

// redeliver is POST /webhooks/:id/deliveries/:deliveryId/redeliver: the delivery's event sent
// again as a new delivery. 202 with the new pending delivery.
func (h *handlers) redeliver(c *echo.Context) error {
	id, did, err := deliveryIDs(c)
	if err != nil {
		return err
	}
	r, err := ask[*webhook.DeliveryReply](h, c, h.Webhooks.To.To(id), &webhook.Redeliver{Scope: server.Principal(c).Scope(), DeliveryID: did})
	if err != nil {
		return h.webhookError(c, err)
	}
	return c.JSON(http.StatusAccepted, deliveryView(r.Delivery))
}

// getDelivery is GET /webhooks/:id/deliveries/:deliveryId: one delivery with the body sent.
func (h *handlers) getDelivery(c *echo.Context) error {
	id, did, err := deliveryIDs(c)
	if err != nil {
		return err
	}
	scope := server.Principal(c).Scope()
	var d *persistence.Delivery
	err = h.Store.View(func(tx *persistence.Tx) error {
		if err := ownedWebhook(tx, id, scope); err != nil {
			return err
		}
		d, err = tx.Delivery(id, did)
		if errors.Is(err, persistence.ErrNotFound) {
			return apierr.NotFound("delivery")
		}
		return err
	})
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if err != nil {
		return h.storeError(c, err)
	}
	out := WebhookDeliveryDetail{WebhookDelivery: deliveryView(d), Payload: d.Body, ResponseBodyBytes: d.LastResponseSize}
	if text, ok := AnswerText(d); ok {
		out.ResponseBody = &text
	}
	return c.JSON(http.StatusOK, out)
}

// ownedWebhook refuses a webhook that does not exist (404) or is another workspace's (403).
func ownedWebhook(tx *persistence.Tx, id, scope string) error {
	w, err := tx.Webhook(id)
	if errors.Is(err, persistence.ErrNotFound) {
		return apierr.NotFound("webhook")
	}
	if err != nil {
		return err
	}
	if w.Scope() != scope {
		return apierr.Forbidden("webhook")
	}
	return nil
}

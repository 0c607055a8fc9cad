package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// CampaignProgress is the data of a campaign stream's progress event: one step of one target of
// one of its posts.
type CampaignProgress struct {
	PostID             string    `json:"post_id"`
	TrackingID         string    `json:"tracking_id"`
	Target             int       `json:"target"`
	Platform           string    `json:"platform"`
	ConnectedAccountID string    `json:"connected_account_id"`
	Phase              string    `json:"phase"`
	Message            string    `json:"message"`
	At                 time.Time `json:"at"`
}

// campaignStreamBatch is how many events a stream reads from the store at a time.
const campaignStreamBatch = 256

// campaignStream serves GET /v1/campaigns/:id/stream: one stream for every post of a campaign.
//
// The campaign's timeline is durable (campaign_events, appended by the jobs in the transactions
// of the changes they record), so the stream is a reader of it: it sends what is new each time
// a commit touches the campaign (persistence.Store.Follow: a job's step, a post's status, on any
// node), from the store, in the timeline's order, and ends with done once none of the campaign's
// posts is scheduled or publishing. Every event's id is its number in the timeline: a client that
// reconnects with Last-Event-ID gets what followed, none twice; one without it gets the timeline
// from the start. Nothing of the stream is held in memory but the batch being written. At
// shutdown it ends like a job stream, with the farewell (streams.go).
func (h *handlers) campaignStream(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	user := server.Principal(c).Scope()
	if err := h.Store.View(func(tx *persistence.Tx) error {
		_, err := ownCampaign(tx, id, user)
		return err
	}); err != nil {
		return h.campaignReadError(c, err)
	}
	var after uint64
	if v := strings.TrimSpace(c.Request().Header.Get("Last-Event-ID")); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return apierr.Validation("Last-Event-ID: must be the id of an event of this stream (a number), got %q", truncate(v, 32))
		}
		after = n
	}
	// Followed before the first read: a change committed after it wakes the loop below, on
	// whichever node it was made (persistence.Store.Follow).
	wake, stop := h.Store.Follow(persistence.CampaignTopic(id))
	defer stop()
	held, release := h.hold(c)
	defer release()
	if err := h.Streams.add(user, "Herald is shutting down; reconnect with Last-Event-ID to follow the campaign"); err != nil {
		return err
	}
	defer h.Streams.done(user)

	w := c.Response()
	sseHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	s := newSSE(w, h.streams)
	defer s.close()
	if !s.write(commentBytes("campaign " + id)) {
		return nil
	}
	s.open(c.Request().Context().Done(), held, h.Streams.Closing())
	stream := campaignStreamURL(c, id)
	for {
		var evs []persistence.CampaignEvent
		var detail *CampaignDetail
		deleted := false
		err := h.Store.View(func(tx *persistence.Tx) error {
			camp, err := tx.Campaign(id)
			if errors.Is(err, persistence.ErrNotFound) {
				deleted = true
			} else if err != nil {
				return err
			}
			if evs, err = tx.CampaignEventsAfter(id, after, campaignStreamBatch); err != nil {
				return err
			}
			// Done is judged in the same snapshot as the events read: when no post is open in
			// it, every step of its jobs was committed before it, and has been read.
			if !deleted && len(evs) < campaignStreamBatch && tx.CampaignCounts(id).Open() == 0 {
				detail, err = campaignDetail(tx, camp, stream)
			}
			return err
		})
		if err != nil {
			h.Log.Error("reading a campaign's timeline failed", append(server.LogAttrs(c), "campaign_id", id, "error", err)...)
			_ = s.write(commentBytes("the campaign could not be read; reconnect with Last-Event-ID"))
			return nil
		}
		var out []byte
		for _, e := range evs {
			b, err := eventBytes("progress", e.Seq, CampaignProgress{PostID: e.PostID, TrackingID: e.TrackingID, Target: e.Target, Platform: e.Platform,
				ConnectedAccountID: e.AccountID, Phase: e.Phase, Message: e.Message, At: e.At})
			if err != nil {
				return nil
			}
			out = append(out, b...)
			after = e.Seq
		}
		if deleted {
			out = append(out, commentBytes("the campaign was deleted; the stream ends")...)
		} else if detail != nil {
			b, err := eventBytes("done", after, detail)
			if err != nil {
				return nil
			}
			out = append(out, b...)
		}
		if len(out) > 0 && !s.events(out, len(evs)) {
			return nil
		}
		if deleted || detail != nil {
			return nil
		}
		if len(evs) == campaignStreamBatch {
			continue
		}
		if _, _, live := sseNext(s, wake); !live {
			return nil
		}
	}
}

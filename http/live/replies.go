package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
	"github.com/heraldhq/herald/platforms"
)

// CommentReply is a validated POST /v1/inbox/comments/:commentId/reply.
type CommentReply struct {
	CommentID string
	// PostID is the publication_id of the body: a publication id, or a post id (every
	// publication of the post on a comments network).
	PublicationID string
	Text          string
	MediaID       string // "" for none
}

// MessageReply is a validated POST /v1/inbox/dms/:conversationId/reply.
type MessageReply struct {
	ConversationID string
	AccountID      string
	Text           string
	PeerID         string
	MediaID        string
}

// Sent is what a reply created on the network.
type Sent struct {
	ID       string
	Platform string
}

// ReplyToComment answers a comment of one of the user's publications. The comment is looked up
// in the publication's live threads first, on each network the post was published to that has
// a comments inbox: a comment that is not there is refused (400) and nothing is posted. Media
// only where the network takes an attachment on a reply.
func (s *Service) ReplyToComment(ctx context.Context, scope string, r CommentReply) (Sent, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteWait)
	defer cancel()
	targets, err := s.commentTargets(scope, r.PublicationID)
	if err != nil {
		return Sent{}, err
	}
	if r.MediaID != "" {
		usable := false
		for _, t := range targets {
			usable = usable || slices.Contains(AttachmentPlatforms, platforms.Platform(t.t.Platform))
		}
		if !usable {
			return Sent{}, apierr.Validation("media_id: only %s take an attachment on a comment reply", platformList(AttachmentPlatforms))
		}
	}
	media, err := s.resolve(ctx, scope, r.MediaID)
	if err != nil {
		return Sent{}, err
	}
	for _, t := range targets {
		reply, err := actors.Ask[*account.ReadReply](ctx, s.cfg.Accounts.To(t.t.AccountID), &account.Read{
			Op: account.OpComments, Scope: scope, PublicationID: t.t.PublicationID, Deadline: deadlineOf(ctx),
		})
		if errors.Is(err, platforms.ErrNotFound) || errors.Is(err, account.ErrNotFound) {
			continue // the publication (or its account) is gone: the comment cannot be there
		}
		if err != nil {
			return Sent{}, s.writeError("comment_reply", platforms.Platform(t.t.Platform), doReadThread, err)
		}
		if !slices.ContainsFunc(reply.Comments, func(c platforms.Comment) bool { return c.ID == r.CommentID }) {
			continue
		}
		platform := platforms.Platform(t.t.Platform)
		if len(media) > 0 && !slices.Contains(AttachmentPlatforms, platform) {
			s.metrics.writes.WithLabelValues("comment_reply", "refused").Inc()
			return Sent{}, apierr.Validation("media_id: %s takes no attachment on a comment reply (only %s do)", platform, platformList(AttachmentPlatforms))
		}
		sent, err := actors.Ask[*account.ReadReply](ctx, s.cfg.Accounts.To(t.t.AccountID), &account.Read{
			Op: account.OpReply, Scope: scope, PublicationID: t.t.PublicationID, CommentID: r.CommentID, Text: r.Text, Media: media, Deadline: deadlineOf(ctx),
		})
		if err != nil {
			return Sent{}, s.writeError("comment_reply", platform, doPost, err)
		}
		s.metrics.writes.WithLabelValues("comment_reply", "sent").Inc()
		s.bumpGeneration(scope)
		return Sent{ID: sent.Comment.ID, Platform: string(platform)}, nil
	}
	s.metrics.writes.WithLabelValues("comment_reply", "refused").Inc()
	return Sent{}, apierr.Validation("publication_id: comment %s is not a comment of publication %s; nothing was posted", truncate(r.CommentID, 128), r.PublicationID)
}

// commentTarget is a publication a comment may belong to: a published target of the post.
type commentTarget struct {
	index int
	t     persistence.Target
}

// commentTargets resolves a publication_id (persistence.Tx.PublicationOf) to the publications on
// networks with a live comments inbox that it names: the one publication, or every one of a post.
func (s *Service) commentTargets(scope, publicationID string) ([]commentTarget, error) {
	var post *persistence.Post
	target := -1
	if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		post, target, err = tx.PublicationOf(scope, publicationID)
		if errors.Is(err, persistence.ErrNotFound) {
			post, err = nil, nil
		}
		return err
	}); err != nil {
		return nil, err
	}
	if post == nil {
		return nil, apierr.Validation("publication_id: %s is not a publication of yours", publicationID)
	}
	var targets []commentTarget
	for i, t := range post.Targets {
		if (target < 0 || target == i) && t.Status == persistence.TargetPublished && t.PublicationID != "" &&
			slices.Contains(CommentsPlatforms, platforms.Platform(t.Platform)) {
			targets = append(targets, commentTarget{i, t})
		}
	}
	if len(targets) == 0 {
		return nil, apierr.Validation("publication_id: %s is not a publication on a network with a live comments inbox (%s)", publicationID, platformList(CommentsPlatforms))
	}
	return targets, nil
}

// ReplyToConversation sends a direct message in a conversation of one of the user's accounts,
// after checking on the network that the conversation is the account's.
func (s *Service) ReplyToConversation(ctx context.Context, scope string, r MessageReply) (Sent, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteWait)
	defer cancel()
	name, ok, err := s.cfg.Store.AccountPlatform(scope, r.AccountID)
	if err != nil {
		return Sent{}, err
	}
	if !ok {
		return Sent{}, apierr.AccountNotYours("account_id", r.AccountID)
	}
	platform := platforms.Platform(name)
	if !slices.Contains(MessagePlatforms, platform) {
		return Sent{}, apierr.Validation("account_id: direct messages are live only on %s, not on %s", platformList(MessagePlatforms), platform)
	}
	if r.MediaID != "" && !slices.Contains(MessageMediaPlatforms, platform) {
		return Sent{}, apierr.Validation("media_id: %s direct messages are text only (media only on %s)", platform, platformList(MessageMediaPlatforms))
	}
	media, err := s.resolve(ctx, scope, r.MediaID)
	if err != nil {
		return Sent{}, err
	}
	_, err = actors.Ask[*account.ReadReply](ctx, s.cfg.Accounts.To(r.AccountID), &account.Read{
		Op: account.OpConversation, Scope: scope, ConversationID: r.ConversationID, Deadline: deadlineOf(ctx),
	})
	if errors.Is(err, platforms.ErrNotFound) {
		s.metrics.writes.WithLabelValues("dm_reply", "refused").Inc()
		return Sent{}, apierr.Validation("conversationId: conversation %s does not belong to account %s; nothing was sent", truncate(r.ConversationID, 128), r.AccountID)
	}
	if err != nil {
		return Sent{}, s.writeError("dm_reply", platform, doReadConversation, err)
	}
	sent, err := actors.Ask[*account.ReadReply](ctx, s.cfg.Accounts.To(r.AccountID), &account.Read{
		Op: account.OpSendMessage, Scope: scope, ConversationID: r.ConversationID, PeerID: r.PeerID, Text: r.Text, Media: media, Deadline: deadlineOf(ctx),
	})
	if err != nil {
		return Sent{}, s.writeError("dm_reply", platform, doSend, err)
	}
	s.metrics.writes.WithLabelValues("dm_reply", "sent").Inc()
	s.bumpGeneration(scope) // the conversation listings show the message at once
	return Sent{ID: sent.Message.ID, Platform: string(platform)}, nil
}

func (s *Service) resolve(ctx context.Context, scope, mediaID string) ([]platforms.Media, error) {
	if mediaID == "" {
		return nil, nil
	}
	if s.cfg.Media == nil {
		return nil, apierr.Validation("media_id: this server has no media storage")
	}
	media, err := s.cfg.Media(ctx, scope, []string{mediaID})
	var ue *blob.UnusableError
	if errors.As(err, &ue) {
		return nil, apierr.MediaNotYours("media_id", mediaID)
	}
	return media, err
}

// What a write was doing when it failed.
const (
	doReadThread        = "read the comment's thread"
	doPost              = "post the reply"
	doReadConversation  = "read the conversation"
	doSend              = "send the message"
	doLike              = "like the comment"
	doHide              = "hide the comment"
	doReadMessages      = "read the conversation's messages"
	doListConversations = "list the conversations"
	doReadChoices       = "read the account's choices"
)

// writeError maps an account's error on the way to a reply, a like or a hide to the API's error,
// and counts the write's outcome.
func (s *Service) writeError(kind string, p platforms.Platform, doing string, err error) error {
	outcome, out := s.accountError(p, doing, err)
	s.metrics.writes.WithLabelValues(kind, outcome).Inc()
	if outcome == "failed" {
		s.cfg.Log.Warn("live write failed", "kind", kind, "platform", p, "error", err)
	}
	return out
}

// accountError maps an account's error to the API's error; outcome is "refused" (a 4xx: the
// account, its budget or the network said no) or "failed" (the network failed or did not answer).
func (s *Service) accountError(p platforms.Platform, doing string, err error) (outcome string, out error) {
	sending := doing == doPost || doing == doSend
	// A like or a hide is idempotent on every network: repeating one whose outcome is unknown
	// is safe.
	idempotent := doing == doLike || doing == doHide
	var spent *account.BudgetSpentError
	var rc *account.ReconnectError
	var pe *platforms.Error
	switch {
	case errors.Is(err, actors.ErrBusy):
		// The request never reached the account: nothing was sent.
		return "refused", apierr.Unavailable(fmt.Sprintf("the %s account is too busy to take the request; nothing was sent; retry shortly", p))
	case errors.As(err, &rc):
		return "refused", apierr.Validation("the %s account must be connected again before Herald can %s (%s)", p, doing, rc.Reason)
	case errors.As(err, &spent):
		wait := max(int(time.Until(spent.RetryAt).Seconds()+0.999), 1)
		return "refused", apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimitExceeded,
			"the %s account's rate budget for this call is spent until %s; nothing was sent", p, spent.RetryAt.UTC().Format(time.RFC3339)).
			WithHeader("Retry-After", strconv.Itoa(wait))
	case errors.Is(err, account.ErrNotFound), errors.Is(err, account.ErrForbidden):
		return "refused", apierr.Validation("the connected account was disconnected")
	case errors.As(err, &pe) && (pe.Kind == platforms.Permanent || pe.Kind == platforms.Invalid):
		return "refused", apierr.Validation("%s refused: %s", p, pe.Message)
	}
	unknown := platforms.KindOf(err) == platforms.Unknown || errors.Is(err, actors.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
	msg := fmt.Sprintf("%s did not answer in time or failed while Herald tried to %s; nothing was sent; retry shortly", p, doing)
	switch {
	case sending && unknown:
		msg = fmt.Sprintf("%s did not confirm in time: it may have been sent; check before sending it again", p)
	case idempotent:
		msg = fmt.Sprintf("%s did not answer in time or failed while Herald tried to %s; it may have been done; repeating it is safe", p, doing)
	case doing == doReadMessages || doing == doListConversations || doing == doReadChoices:
		msg = fmt.Sprintf("%s did not answer in time or failed while Herald tried to %s; retry shortly", p, doing)
	}
	return "failed", apierr.Unavailable(msg)
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

func platformList(ps []platforms.Platform) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

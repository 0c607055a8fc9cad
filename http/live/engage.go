package live

import (
	"context"
	"errors"
	"slices"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/platforms"
)

// LikePlatforms are the networks whose comments Herald likes (YouTube's API has no such call).
var LikePlatforms = []platforms.Platform{platforms.X, platforms.Bluesky}

// HidePlatforms are the networks whose comments Herald hides: X hidden replies, Bluesky
// threadgate hiddenReplies, YouTube moderation (rejected).
var HidePlatforms = []platforms.Platform{platforms.YouTube, platforms.X, platforms.Bluesky}

// CommentAction is a validated POST /v1/inbox/comments/:commentId/like or /hide.
type CommentAction struct {
	CommentID string
	// PublicationID is a publication id, or a post id (every publication of the post).
	PublicationID string
	// Undo unlikes or shows the comment again.
	Undo bool
}

// Engaged is what a like or a hide did: the network, and the state the comment is in now.
type Engaged struct {
	Platform string
	On       bool
}

// LikeComment likes (or, with Undo, unlikes) a comment of one of the user's publications.
func (s *Service) LikeComment(ctx context.Context, scope string, a CommentAction) (Engaged, error) {
	return s.engage(ctx, scope, a, account.OpLike, LikePlatforms, "comment_like", doLike)
}

// HideComment hides (or, with Undo, shows again) a comment of one of the user's publications.
func (s *Service) HideComment(ctx context.Context, scope string, a CommentAction) (Engaged, error) {
	return s.engage(ctx, scope, a, account.OpHide, HidePlatforms, "comment_hide", doHide)
}

// engage runs a like or a hide on the publications publication_id names that are on a network
// with the action. The adapter reads the comment on the network first (its conversation, thread
// root or video must be the publication): a comment of another publication, or none, is refused
// (400) and nothing is sent. It reads the comment itself rather than the publication's thread so
// that a hidden comment, which networks leave out of threads, can be shown again.
func (s *Service) engage(ctx context.Context, scope string, a CommentAction, op account.ReadOp, allowed []platforms.Platform, kind, doing string) (Engaged, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteWait)
	defer cancel()
	targets, err := s.commentTargets(scope, a.PublicationID)
	if err != nil {
		return Engaged{}, err
	}
	var usable []commentTarget
	for _, t := range targets {
		if slices.Contains(allowed, platforms.Platform(t.t.Platform)) {
			usable = append(usable, t)
		}
	}
	if len(usable) == 0 {
		s.metrics.writes.WithLabelValues(kind, "refused").Inc()
		if op == account.OpLike {
			return Engaged{}, apierr.Validation("publication_id: comments can be liked only on %s (YouTube's API has no call to like a comment); publication %s is on %s",
				platformList(allowed), a.PublicationID, targetPlatforms(targets))
		}
		return Engaged{}, apierr.Validation("publication_id: comments can be hidden only on %s; publication %s is on %s", platformList(allowed), a.PublicationID, targetPlatforms(targets))
	}
	for _, t := range usable {
		platform := platforms.Platform(t.t.Platform)
		_, err := actors.Ask[*account.ReadReply](ctx, s.cfg.Accounts.To(t.t.AccountID), &account.Read{
			Op: op, Scope: scope, PublicationID: t.t.PublicationID, CommentID: a.CommentID, Undo: a.Undo, Deadline: deadlineOf(ctx),
		})
		switch {
		case err == nil:
			s.metrics.writes.WithLabelValues(kind, "sent").Inc()
			s.bumpGeneration(scope)
			return Engaged{Platform: string(platform), On: !a.Undo}, nil
		case errors.Is(err, platforms.ErrNotLiked):
			s.metrics.writes.WithLabelValues(kind, "refused").Inc()
			return Engaged{}, apierr.Validation("unlike: the %s account has not liked comment %s; nothing was changed", platform, truncate(a.CommentID, 128))
		case errors.Is(err, platforms.ErrNotFound), errors.Is(err, account.ErrNotFound):
			continue // not this publication's comment (or the publication or account is gone)
		}
		return Engaged{}, s.writeError(kind, platform, doing, err)
	}
	s.metrics.writes.WithLabelValues(kind, "refused").Inc()
	return Engaged{}, apierr.Validation("publication_id: comment %s is not a comment of publication %s; nothing was sent", truncate(a.CommentID, 128), a.PublicationID)
}

// targetPlatforms names the networks of the targets.
func targetPlatforms(targets []commentTarget) string {
	var ps []platforms.Platform
	for _, t := range targets {
		if p := platforms.Platform(t.t.Platform); !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	return platformList(ps)
}

package account

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// A target published in several steps (a thread's parts, a first comment) is one request that
// goes through the queue, the budget and the lane once per step: each step reserves its own
// budget and is recorded as an attempt (with the steps done before it) before its call, so that a
// crash resumes the chain at the first step whose outcome is not known, looked up first, and never
// makes a step twice. The steps, in order: the post (0), each thread part (1 to len(parts)), the
// first comment. A failed part ends the target as failed with what was published kept (a retry
// resumes at the part); a failed comment leaves the post published (a retry makes only the
// comment).

// steps is how many calls the request makes.
func (r *request) steps() int {
	n := 1 + len(r.parts)
	if r.comment != nil {
		n++
	}
	return n
}

// isComment reports whether the request's next call is its first comment.
func (r *request) isComment() bool { return r.comment != nil && r.step == 1+len(r.parts) }

// stepName names the request's next call for messages: "the post", "part 3 of 5", "the first
// comment".
func (r *request) stepName() string {
	switch {
	case r.isComment():
		return "the first comment"
	case len(r.parts) == 0:
		return "the post"
	}
	return fmt.Sprintf("part %d of %d", r.step+1, 1+len(r.parts))
}

// main is the post as the network created it, once step 0 is done.
func (r *request) main() platforms.Publication {
	if len(r.done) == 0 {
		return platforms.Publication{}
	}
	return publication(r.done[0])
}

func publication(s persistence.Step) platforms.Publication {
	return platforms.Publication{ID: s.ID, URL: s.URL, Ref: s.Ref}
}

// call makes the request's next call.
func (r *request) call(ctx context.Context, adapter platforms.Adapter, creds platforms.Credentials) (platforms.Result, error) {
	switch {
	case r.step == 0:
		return adapter.Publish(ctx, creds, r.Post)
	case r.isComment():
		return adapter.(platforms.FirstCommenter).PublishComment(ctx, creds, r.main(), r.comment.Content)
	default:
		return adapter.(platforms.Threader).PublishReply(ctx, creds, r.main(), publication(r.done[r.step-1]), r.parts[r.step-1])
	}
}

// lookup looks for what the request's next call would create, made at or after since.
func (r *request) lookup(ctx context.Context, adapter platforms.Adapter, creds platforms.Credentials, since time.Time) (platforms.Publication, bool, error) {
	switch {
	case r.step == 0:
		return adapter.Lookup(ctx, creds, r.Post, since)
	case r.isComment():
		return adapter.(platforms.FirstCommenter).LookupComment(ctx, creds, r.main(), r.comment.Content, since)
	default:
		return adapter.(platforms.Threader).LookupReply(ctx, creds, r.main(), publication(r.done[r.step-1]), r.parts[r.step-1], since)
	}
}

// attempt is the record written before the request's next call.
func (r *request) attempt(accountID string, now time.Time) *persistence.Attempt {
	return &persistence.Attempt{JobID: r.JobID, Target: r.Target, AccountID: accountID, StartedAt: now.UTC(), Step: r.step, Done: r.done}
}

// prepareSteps reads a target's thread parts and first comment into r: each part's media
// resolved and the part checked by the network's rules, as the post was.
func (a *Actor) prepareSteps(r *request, userID string, thread []persistence.ThreadPart, comment *persistence.FirstComment) error {
	if len(thread) > 0 {
		if _, ok := a.adapter.(platforms.Threader); !ok {
			return fmt.Errorf("%s has no threads; publish the parts as posts of their own", platforms.Platform(a.acc.Platform).Name())
		}
	}
	if comment != nil {
		if _, ok := a.adapter.(platforms.FirstCommenter); !ok {
			return fmt.Errorf("Herald publishes no first comment on %s", platforms.Platform(a.acc.Platform).Name())
		}
	}
	r.parts = make([]platforms.Post, len(thread))
	for i, part := range thread {
		p := platforms.Post{Text: part.Content}
		if len(part.MediaIDs) > 0 {
			var err error
			if p.Media, err = a.media(userID, part.MediaIDs, fmt.Sprintf("the media of part %d of the thread", i+2)); err != nil {
				return err
			}
		}
		if err := a.adapter.Validate(p); err != nil {
			return fmt.Errorf("part %d of the thread: %s", i+2, errorMessage(err))
		}
		r.parts[i] = p
	}
	if comment != nil {
		r.comment = &persistence.FirstComment{Content: comment.Content, Status: persistence.CommentPending}
	}
	return nil
}

// resume takes a multi-step request's progress from its attempt record, unless the record does
// not fit the target's steps (then it is of the post alone).
func (r *request) resume(att *persistence.Attempt) {
	if att.Step <= 0 || att.Step >= r.steps() || len(att.Done) < min(att.Step, 1+len(r.parts)) {
		return
	}
	r.step, r.done = att.Step, append([]persistence.Step(nil), att.Done...)
}

// stepDone takes a step's success (its call's, or its lookup's: event EventResolved): the
// target's outcome after its last step, else progress and the next step at the queue's front.
func (a *Actor) stepDone(r *request, pub platforms.Publication, event string) {
	platform := a.acc.Platform
	if r.steps() == 1 {
		msg := "published to " + platform
		if event == persistence.EventResolved {
			msg += " (confirmed by looking the post up)"
		}
		a.reportStep(r, event, true, true, msg, pub)
		return
	}
	name, part := r.stepName(), !r.isComment() && len(r.parts) > 0
	r.advance(pub)
	if r.step < r.steps() {
		msg := fmt.Sprintf("published %s to %s", name, platform)
		if event == persistence.EventResolved {
			msg += " (confirmed by looking it up)"
		} else if part {
			event = persistence.EventPart
		}
		a.progress(r, event, msg)
		a.queueFront(r)
		return
	}
	msg := fmt.Sprintf("published %s to %s: the thread is complete", name, platform)
	switch {
	case r.comment != nil:
		msg = fmt.Sprintf("published %s to %s, after the post", name, platform)
		if event == "" {
			event = persistence.EventComment
		}
	case event == "":
		event = persistence.EventPart
	}
	a.final(r, event, true, msg)
}

// advance records what the request's step created and moves it to its next step.
func (r *request) advance(pub platforms.Publication) {
	if r.isComment() {
		r.comment.Status, r.comment.PublicationID, r.comment.URL, r.comment.Error = persistence.CommentPublished, pub.ID, pub.URL, ""
	} else {
		r.done = append(r.done, persistence.Step{ID: pub.ID, URL: pub.URL, Ref: pub.Ref})
	}
	r.step++
	r.retries, r.resolved, r.refreshed = 0, false, false
}

// stepFailed ends a request whose step failed: before the post exists, the target fails as any
// publish does; a failed thread part fails the target and keeps what was published; a failed
// first comment leaves the post published, its comment failed.
func (a *Actor) stepFailed(r *request, msg string) {
	switch {
	case len(r.done) == 0:
		a.report(r, true, false, msg, platforms.Publication{})
	case r.isComment():
		r.comment.Status, r.comment.Error = persistence.CommentFailed, msg
		a.final(r, persistence.EventComment, true, fmt.Sprintf("published to %s; the first comment failed: %s", a.platformName(), msg))
	default:
		a.final(r, "", false, fmt.Sprintf("%s of the thread failed (the parts before it are published): %s", r.stepName(), msg))
	}
}

// platformName is the account's network id, or "" once the account is gone.
func (a *Actor) platformName() string {
	if a.acc == nil {
		return "the network"
	}
	return a.acc.Platform
}

// progress reports a multi-step request's progress: what was published so far.
func (a *Actor) progress(r *request, event, msg string) { a.stepReport(r, event, false, false, msg) }

// final reports a multi-step request's outcome with what it published.
func (a *Actor) final(r *request, event string, success bool, msg string) {
	a.stepReport(r, event, true, success, msg)
}

func (a *Actor) stepReport(r *request, event string, final, success bool, msg string) {
	a.send(r, &Report{JobID: r.JobID, Target: r.Target, AccountID: a.id, Final: final, Success: success, Message: msg,
		Publication: r.main(), Event: event, Parts: r.parts0(), Comment: r.commentCopy()})
}

// parts0 are the thread parts published so far (the steps done after the post).
func (r *request) parts0() []persistence.Step {
	if len(r.done) <= 1 {
		return nil
	}
	return append([]persistence.Step(nil), r.done[1:]...)
}

func (r *request) commentCopy() *persistence.FirstComment {
	if r.comment == nil || r.comment.Status == "" || r.comment.Status == persistence.CommentPending {
		return nil
	}
	c := *r.comment
	return &c
}

// stepRules are the rules the request's next call spends when it is a step after the post that
// the network does not count as a post (Deps.StepRules); nil: the publish rules.
func (a *Actor) stepRules(r *request) []Rule {
	if r.step == 0 {
		return nil
	}
	return a.deps.StepRules[platforms.Platform(a.acc.Platform)]
}

// reserve reserves the budget of the request's next call.
func (a *Actor) reserve(p platforms.Platform, r *request, now time.Time) (bool, time.Time) {
	if rules := a.stepRules(r); rules != nil {
		return a.deps.Budgets.reserveOp(p, a.id, OpReply, rules, 1, now)
	}
	return a.deps.Budgets.Reserve(p, a.id, now)
}

// refund gives back the budget of a call that was never sent.
func (a *Actor) refund(p platforms.Platform, r *request) {
	if rules := a.stepRules(r); rules != nil {
		a.deps.Budgets.refundOp(p, a.id, rules, 1)
		return
	}
	a.deps.Budgets.Refund(p, a.id)
}

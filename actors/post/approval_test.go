package post_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/persistence"
)

// eventTypes lists the types of the outbox's events about post id, oldest first.
func (s *states) eventTypes(id string) []string {
	s.t.Helper()
	var out []string
	require.NoError(s.t, s.store.View(func(tx *persistence.Tx) error {
		evs, err := tx.EventsAfter("approval-test-"+uuid.NewString(), 1000)
		for _, e := range evs {
			if strings.Contains(string(e.Data), `"post_id":"`+id+`"`) {
				out = append(out, e.Type)
			}
		}
		return err
	}))
	return out
}

func (s *states) draft() string {
	s.t.Helper()
	id, _ := s.in(persistence.PostDraft)
	return id
}

func (s *states) noJob() {
	s.t.Helper()
	select {
	case j := <-s.started:
		s.t.Fatalf("a job started: %+v", j)
	default:
	}
}

// A held publish keeps its request and starts nothing; approving it starts the job, once.
func TestHeldPublishIsApprovedOnce(t *testing.T) {
	t.Parallel()
	s := newStates(t)
	id := s.draft()
	p, err := s.ask(id, &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String(), Hold: &post.Hold{By: "key:k1"}})
	require.NoError(t, err)
	require.Equal(t, persistence.PostPendingApproval, p.Status)
	require.Equal(t, persistence.ApprovalPublish, p.Approval.Action)
	require.Equal(t, "key:k1", p.Approval.RequestedBy)
	require.Nil(t, p.TrackingID)
	s.noJob()

	jobID := uuid.Must(uuid.NewV7()).String()
	p, err = s.ask(id, &post.Approve{Scope: s.user, By: "user:owner", JobID: jobID})
	require.NoError(t, err)
	require.Equal(t, persistence.PostPublishing, p.Status)
	require.Nil(t, p.Approval)
	j := <-s.started
	require.Equal(t, jobID, j.TrackingID)
	require.Len(t, j.Targets, 2)

	_, err = s.ask(id, &post.Approve{Scope: s.user, By: "user:owner", JobID: uuid.Must(uuid.NewV7()).String()})
	var np *post.NotPendingError
	require.ErrorAs(t, err, &np, "a second approval finds nothing to approve")
	s.noJob()
	require.Equal(t, []string{persistence.PostEventApprovalRequested, persistence.PostEventApproved}, s.eventTypes(id))
	kinds := []string{}
	for _, st := range s.get(id).ApprovalLog {
		kinds = append(kinds, st.Kind)
	}
	require.Equal(t, []string{persistence.ApprovalRequested, persistence.ApprovalApproved}, kinds)
}

// A held schedule leaves the schedule index, so that its time firing publishes nothing; approved
// before its time it is scheduled, approved after it (late) it is published at once.
func TestHeldScheduleOnTimeAndLate(t *testing.T) {
	t.Parallel()
	s := newStates(t)
	id, at := s.in(persistence.PostScheduled)
	p, err := s.ask(id, &post.Schedule{Scope: s.user, At: at, Hold: &post.Hold{By: "oauth:host"}})
	require.NoError(t, err)
	require.Equal(t, persistence.PostPendingApproval, p.Status)
	require.Equal(t, at, *p.Approval.ScheduledAt)
	require.False(t, post.Late(p, time.Now()))
	require.True(t, post.Late(p, at))
	require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
		require.Empty(t, tx.DueBefore(at.Add(time.Minute), persistence.Due{}, 100), "a held post is not in the schedule index")
		return nil
	}))
	p, err = s.ask(id, &post.Approve{Scope: s.user, By: "user:owner"})
	require.NoError(t, err)
	require.Equal(t, persistence.PostScheduled, p.Status)
	require.Equal(t, at, *p.ScheduledAt)
	s.noJob()

	// Late: the request's time has passed while it waited.
	late, _ := s.in(persistence.PostDraft)
	past := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	_, err = s.ask(late, &post.Schedule{Scope: s.user, At: past, Hold: &post.Hold{By: "key:k1"}})
	require.NoError(t, err)
	_, err = s.ask(late, &post.Fire{At: past, JobID: uuid.Must(uuid.NewV7()).String()})
	require.NoError(t, err)
	s.noJob()
	require.Equal(t, persistence.PostPendingApproval, s.get(late).Status, "a late post stays pending")
	p, err = s.ask(late, &post.Approve{Scope: s.user, By: "user:owner", JobID: uuid.Must(uuid.NewV7()).String()})
	require.NoError(t, err)
	require.Equal(t, persistence.PostPublishing, p.Status)
	require.Equal(t, late, (<-s.started).PostID)
}

// Reject returns the post to draft with the reason, which a new submission clears.
func TestRejectReturnsToDraft(t *testing.T) {
	t.Parallel()
	s := newStates(t)
	id := s.draft()
	_, err := s.ask(id, &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String(), Hold: &post.Hold{By: "key:k1"}})
	require.NoError(t, err)
	_, err = s.ask(id, &post.Reject{Scope: uuid.NewString(), Reason: "no"})
	require.ErrorIs(t, err, post.ErrForbidden, "another workspace cannot reject it")
	p, err := s.ask(id, &post.Reject{Scope: s.user, By: "user:owner", Reason: "Fix the price"})
	require.NoError(t, err)
	require.Equal(t, persistence.PostDraft, p.Status)
	require.Equal(t, "Fix the price", *p.RejectionReason)
	require.Nil(t, p.Approval)
	p, err = s.ask(id, &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String(), Hold: &post.Hold{By: "key:k1"}})
	require.NoError(t, err)
	require.Nil(t, p.RejectionReason, "submitted again")
	require.Equal(t, []string{persistence.PostEventApprovalRequested, persistence.PostEventRejected, persistence.PostEventApprovalRequested}, s.eventTypes(id))
	s.noJob()
}

// An approval link works once, only while it is the post's latest and unexpired.
func TestApprovalLinkRules(t *testing.T) {
	t.Parallel()
	s := newStates(t)
	id := s.draft()
	_, err := s.ask(id, &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String(), Hold: &post.Hold{By: "key:k1"}})
	require.NoError(t, err)
	hash := func(tok string) []byte { h := sha256.Sum256([]byte(tok)); return h[:] }
	_, err = s.ask(id, &post.SetApprovalLink{Scope: s.user, Hash: hash("old"), ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = s.ask(id, &post.SetApprovalLink{Scope: s.user, Hash: hash("new"), ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = s.ask(id, &post.Approve{Link: hash("old"), By: "link", JobID: uuid.Must(uuid.NewV7()).String()})
	require.ErrorIs(t, err, post.ErrLinkRevoked)
	_, err = s.ask(id, &post.Reject{Link: hash("new"), By: "link", Reason: "change the photo"})
	require.NoError(t, err)
	_, err = s.ask(id, &post.Approve{Link: hash("new"), By: "link", JobID: uuid.Must(uuid.NewV7()).String()})
	require.ErrorIs(t, err, post.ErrLinkUsed)
	require.Equal(t, persistence.PostDraft, s.get(id).Status)

	// Expired.
	_, err = s.ask(id, &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String(), Hold: &post.Hold{By: "key:k1"}})
	require.NoError(t, err)
	_, err = s.ask(id, &post.SetApprovalLink{Scope: s.user, Hash: hash("short"), ExpiresAt: time.Now().Add(-time.Second)})
	require.NoError(t, err)
	_, err = s.ask(id, &post.Approve{Link: hash("short"), By: "link", JobID: uuid.Must(uuid.NewV7()).String()})
	require.ErrorIs(t, err, post.ErrLinkExpired)
	require.Equal(t, persistence.PostPendingApproval, s.get(id).Status)
	s.noJob()
	var np *post.NotPendingError
	_, err = s.ask(s.draft(), &post.SetApprovalLink{Scope: s.user, Hash: hash("x"), ExpiresAt: time.Now().Add(time.Hour)})
	require.ErrorAs(t, err, &np, "a draft takes no approval link")
}

// A held publish with an idempotency answer stores the answer, built from the post as held, in
// the hold's own transaction; an answer that cannot be built holds nothing.
func TestHeldPublishStoresItsIdempotencyAnswerWithTheHold(t *testing.T) {
	t.Parallel()
	s := newStates(t)
	id := s.draft()
	key := []byte("idem-" + uuid.NewString())
	idem := &post.Idempotency{Key: key, Held: func(p *persistence.Post) (*persistence.IdempotencyRecord, error) {
		return &persistence.IdempotencyRecord{Status: 202, Body: []byte(`{"status":"` + p.Status + `","id":"` + p.ID + `"}`),
			Location: "/v1/posts/" + p.ID, CreatedAt: time.Now().UTC()}, nil
	}}
	p, err := s.ask(id, &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String(), Hold: &post.Hold{By: "key:k1"}, Idempotency: idem})
	require.NoError(t, err)
	require.Equal(t, persistence.PostPendingApproval, p.Status)
	require.NotNil(t, idem.Record, "the answer the request gives")
	require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
		rec, err := tx.Idempotency(key)
		require.NoError(t, err)
		require.NotNil(t, rec)
		require.JSONEq(t, `{"status":"pending_approval","id":"`+id+`"}`, string(rec.Body), "built from the post as held")
		return nil
	}))
	s.noJob()

	other := s.draft()
	key2 := []byte("idem-" + uuid.NewString())
	_, err = s.ask(other, &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String(), Hold: &post.Hold{By: "key:k1"},
		Idempotency: &post.Idempotency{Key: key2, Held: func(*persistence.Post) (*persistence.IdempotencyRecord, error) {
			return nil, errors.New("no answer")
		}}})
	require.Error(t, err)
	require.Equal(t, persistence.PostDraft, s.get(other).Status, "nothing held")
	require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
		rec, err := tx.Idempotency(key2)
		require.Nil(t, rec)
		if errors.Is(err, persistence.ErrNotFound) {
			return nil
		}
		return err
	}))
}

// A publish whose Idempotency-Key was answered while it was on its way (another request with the
// key committed first: sent again by a client that gave up on this one, on this node or another)
// changes nothing, whatever it was to do: create and publish a post, publish a draft, hold one
// for approval. It is refused with persistence.ErrIdempotencyKeyUsed, which the HTTP layer
// answers with the stored answer.
func TestAPublishWhoseKeyWasAnsweredMeanwhileChangesNothing(t *testing.T) {
	t.Parallel()
	s := newStates(t)
	key := []byte("idem-" + uuid.NewString())
	answered := &persistence.IdempotencyRecord{Status: 202, Body: []byte(`{"tracking_id":"first"}`), CreatedAt: time.Now().UTC()}
	require.NoError(t, s.store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.ClaimIdempotency(key, answered) }))
	record := func() *persistence.IdempotencyRecord {
		return &persistence.IdempotencyRecord{Status: 202, Body: []byte(`{"tracking_id":"second"}`), CreatedAt: time.Now().UTC()}
	}

	created := uuid.Must(uuid.NewV7()).String()
	_, err := s.ask(created, &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String(), Idempotency: &post.Idempotency{Key: key, Record: record()},
		Create: &persistence.Post{ID: created, UserID: s.user, Content: "sent twice", Status: persistence.PostDraft, CreatedAt: time.Now().UTC(), Targets: targets(2)}})
	require.ErrorIs(t, err, persistence.ErrIdempotencyKeyUsed)
	require.Nil(t, s.get(created), "no post was created")

	draft := s.draft()
	_, err = s.ask(draft, &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String(), Idempotency: &post.Idempotency{Key: key, Record: record()}})
	require.ErrorIs(t, err, persistence.ErrIdempotencyKeyUsed)
	require.Equal(t, persistence.PostDraft, s.get(draft).Status, "the draft was not published")

	_, err = s.ask(draft, &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String(), Hold: &post.Hold{By: "key:k1"},
		Idempotency: &post.Idempotency{Key: key, Held: func(*persistence.Post) (*persistence.IdempotencyRecord, error) { return record(), nil }}})
	require.ErrorIs(t, err, persistence.ErrIdempotencyKeyUsed)
	require.Equal(t, persistence.PostDraft, s.get(draft).Status, "the draft was not held")
	s.noJob()
	require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
		rec, err := tx.Idempotency(key)
		require.NoError(t, err)
		require.JSONEq(t, `{"tracking_id":"first"}`, string(rec.Body), "the first answer stands")
		return nil
	}))
}

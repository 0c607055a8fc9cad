package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/campaign"
	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

func roundTrip(t *testing.T, msg any) any {
	t.Helper()
	env, err := cluster.Encode(msg)
	require.NoError(t, err, "%T", msg)
	got, err := cluster.Decode(env)
	require.NoError(t, err, "%T", msg)
	return got
}

// The actor packages' messages and replies cross between nodes as they were.
func TestWireMessagesRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	content := "hello"
	p := &persistence.Post{ID: "p1", UserID: "u1", Content: "hi", Status: persistence.PostScheduled, ScheduledAt: &at,
		Targets: []persistence.Target{{AccountID: "a1", Platform: "x"}}}
	j := &persistence.Job{TrackingID: "j1", PostID: "p1", UserID: "u1", Status: persistence.JobProcessing,
		Targets: []persistence.JobTarget{{AccountID: "a1", Platform: "x", Phase: "queued"}}}
	limit := 3
	for _, msg := range []any{
		&post.Create{Post: p},
		&post.Update{Scope: "u1", Content: &content, MediaIDs: []string{"m1"}},
		&post.Publish{Scope: "u1", JobID: "j1", Create: p, Idempotency: &post.Idempotency{Key: []byte("k"), Record: &persistence.IdempotencyRecord{Status: 202, Body: []byte(`{}`)}},
			Quota: &post.Quota{Limit: 10, Month: "2026-11", Workspace: &limit}, Only: &post.Only{AccountID: "a1"}},
		&post.PublishReply{Post: p, Job: j},
		&post.Fire{At: at, JobID: "j2"},
		&post.Finish{Job: j},
		&job.Start{},
		&job.Reply{Job: j},
		&job.PostSynced{Stored: true},
		&account.Take{},
		&account.Report{JobID: "j1", Target: 1, AccountID: "a1", Final: true, Success: true, Publication: platforms.Publication{ID: "x1", URL: "https://x/1"}},
		&account.Read{Op: account.ReadOp("metrics"), PublicationIDs: []string{"x1"}, Deadline: at},
		&campaign.RetryReply{Retried: []campaign.Retried{{PostID: "p1", TrackingID: "j1", Targets: 2}}, Skipped: []campaign.Skipped{{PostID: "p2", Reason: "published"}}},
	} {
		require.Equal(t, msg, roundTrip(t, msg))
	}
}

// Error replies keep what the HTTP layer maps them by: the sentinel (errors.Is) or the type and
// its fields (errors.As).
func TestWireErrorsRoundTrip(t *testing.T) {
	t.Parallel()
	got := roundTrip(t, &actors.ErrorReply{Err: post.ErrNotFound}).(*actors.ErrorReply)
	require.ErrorIs(t, got.Err, post.ErrNotFound)
	require.NotErrorIs(t, got.Err, post.ErrForbidden)

	got = roundTrip(t, &actors.ErrorReply{Err: &post.InvalidError{Field: "content", Reason: "too long", Err: errors.New("x: 300 > 280")}}).(*actors.ErrorReply)
	var ie *post.InvalidError
	require.ErrorAs(t, got.Err, &ie)
	require.Equal(t, "content: too long", ie.Error())

	retry := time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC)
	got = roundTrip(t, &actors.ErrorReply{Err: &account.BudgetSpentError{Platform: platforms.X, RetryAt: retry}}).(*actors.ErrorReply)
	var be *account.BudgetSpentError
	require.ErrorAs(t, got.Err, &be)
	require.Equal(t, retry, be.RetryAt)

	got = roundTrip(t, &actors.ErrorReply{Err: errors.Join(errors.New("committing"), persistence.ErrWriteFailed)}).(*actors.ErrorReply)
	require.ErrorIs(t, got.Err, persistence.ErrWriteFailed)

	got = roundTrip(t, &actors.ErrorReply{Err: errors.New("something else")}).(*actors.ErrorReply)
	require.EqualError(t, got.Err, "something else")
}

// What holds a channel or a func cannot cross: it is refused before it is sent.
func TestWireRefusesWhatCannotCross(t *testing.T) {
	t.Parallel()
	for _, msg := range []any{
		&job.Subscribe{Sub: job.NewSubscriber(1)},
		&post.Publish{Idempotency: &post.Idempotency{Held: func(*persistence.Post) (*persistence.IdempotencyRecord, error) { return nil, nil }}},
		&account.Read{Media: []platforms.Media{{ID: "m1"}}},
	} {
		_, err := cluster.Encode(msg)
		require.ErrorIs(t, err, cluster.ErrUnknownType, "%T", msg)
	}
}

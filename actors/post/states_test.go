package post_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/storetest"
)

// states is a post directory whose job starts are recorded, on a real store and actor system.
type states struct {
	t       *testing.T
	dir     *actors.Directory
	store   *persistence.Store
	user    string
	started chan *persistence.Job
}

func newStates(t *testing.T) *states {
	t.Helper()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	s := &states{t: t, store: store, user: uuid.NewString(), started: make(chan *persistence.Job, 16)}
	s.dir = actors.NewDirectory(sys, post.Kind(post.Deps{Store: store,
		Handoff: post.StartFunc(func(j *persistence.Job, _ *persistence.Post) { s.started <- j })}))
	return s
}

func (s *states) ask(id string, m any) (*persistence.Post, error) {
	s.t.Helper()
	switch m.(type) {
	case *post.Publish:
		r, err := actors.Ask[*post.PublishReply](context.Background(), s.dir.To(id), m)
		if err != nil {
			return nil, err
		}
		return r.Post, nil
	case *post.Approve:
		r, err := actors.Ask[*post.ApproveReply](context.Background(), s.dir.To(id), m)
		if err != nil {
			return nil, err
		}
		return r.Post, nil
	case *post.Fire:
		if _, err := actors.Ask[*post.FireReply](context.Background(), s.dir.To(id), m); err != nil {
			return nil, err
		}
		return s.get(id), nil
	}
	r, err := actors.Ask[*post.Reply](context.Background(), s.dir.To(id), m)
	if err != nil {
		return nil, err
	}
	return r.Post, nil
}

func (s *states) get(id string) *persistence.Post {
	s.t.Helper()
	p, err := s.ask(id, &post.Get{Scope: s.user})
	if err != nil {
		return nil
	}
	return p
}

// in makes a post of two targets in status, through the transitions that lead there: a draft is
// created; a scheduled post is a draft scheduled; a publishing post a draft published (its job
// started); a published, partial or failed post a publishing one given its job's outcome.
func (s *states) in(status string) (id string, at time.Time) {
	s.t.Helper()
	id = uuid.Must(uuid.NewV7()).String()
	at = time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	_, err := s.ask(id, &post.Create{Post: &persistence.Post{UserID: s.user, Content: "hello", Status: persistence.PostDraft,
		CreatedAt: time.Now().UTC(), Targets: targets(2)}})
	require.NoError(s.t, err)
	switch status {
	case persistence.PostDraft:
		return id, at
	case persistence.PostScheduled:
		_, err = s.ask(id, &post.Schedule{Scope: s.user, At: at})
		require.NoError(s.t, err)
		return id, at
	case persistence.PostPendingApproval:
		_, err = s.ask(id, &post.Schedule{Scope: s.user, At: at, Hold: &post.Hold{By: "key:editor"}})
		require.NoError(s.t, err)
		return id, at
	}
	_, err = s.ask(id, &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String()})
	require.NoError(s.t, err)
	j := <-s.started
	if status == persistence.PostPublishing {
		return id, at
	}
	outcome := map[string][2]string{
		persistence.PostPublished: {persistence.PhaseSuccess, persistence.PhaseSuccess},
		persistence.PostPartial:   {persistence.PhaseSuccess, persistence.PhaseFailed},
		persistence.PostFailed:    {persistence.PhaseFailed, persistence.PhaseFailed},
	}[status]
	done := j.Clone()
	now := time.Now().UTC()
	done.CompletedAt = &now
	done.Status = persistence.JobCompleted
	if status == persistence.PostFailed {
		done.Status = persistence.JobFailed
	}
	for i := range done.Targets {
		done.Targets[i].Phase = outcome[i]
		if outcome[i] == persistence.PhaseSuccess {
			done.Targets[i].PublicationID = "net-" + done.Targets[i].AccountID
		} else {
			done.Targets[i].Message = "refused by the network"
		}
	}
	s.dir.Send(id, &post.Finish{Job: done})
	require.Eventually(s.t, func() bool { p := s.get(id); return p != nil && p.Status == status }, 5*time.Second, 5*time.Millisecond)
	return id, at
}

// The post's state machine, every status against every change: what each answers, the status it
// leaves, and whether a job started (the spec's table of states and transitions; only draft and
// scheduled posts are deleted or scheduled, and those and failed or partial ones updated; a failed
// or partial post publishes its failed targets again; a Fire moves only a scheduled post whose time it names).
func TestPostStateMachine(t *testing.T) { //nolint:tparallel // the cases share one post directory and read the jobs it starts, in turn
	t.Parallel()
	s := newStates(t)
	const (
		updated = "updated"
		deleted = "deleted"
	)
	type want struct {
		status  string // the status after the change ("" deleted)
		err     any    // the error's type, nil when it succeeds
		started int    // the targets of the job it started (0: none)
	}
	all := []string{persistence.PostDraft, persistence.PostScheduled, persistence.PostPublishing, persistence.PostPublished,
		persistence.PostPartial, persistence.PostFailed, persistence.PostPendingApproval}
	notEditable, notPublishable, notSchedulable := &post.NotEditableError{}, &post.NotPublishableError{}, &post.NotSchedulableError{}
	cases := map[string]map[string]want{
		updated: {
			persistence.PostDraft: {status: persistence.PostDraft}, persistence.PostScheduled: {status: persistence.PostScheduled},
			persistence.PostPublishing: {err: notEditable}, persistence.PostPublished: {err: notEditable},
			// A failed or partial post is edited to fix what failed (post.Edit).
			persistence.PostPartial: {status: persistence.PostPartial}, persistence.PostFailed: {status: persistence.PostFailed},
			persistence.PostPendingApproval: {err: notEditable},
		},
		deleted: {
			persistence.PostDraft: {}, persistence.PostScheduled: {}, persistence.PostPendingApproval: {},
			persistence.PostPublishing: {err: notEditable}, persistence.PostPublished: {err: notEditable},
			persistence.PostPartial: {err: notEditable}, persistence.PostFailed: {err: notEditable},
		},
		"scheduled": {
			persistence.PostDraft: {status: persistence.PostScheduled}, persistence.PostScheduled: {status: persistence.PostScheduled},
			persistence.PostPublishing: {err: notSchedulable}, persistence.PostPublished: {err: notSchedulable},
			persistence.PostPartial: {err: notSchedulable}, persistence.PostFailed: {err: notSchedulable},
			persistence.PostPendingApproval: {err: notSchedulable},
		},
		"published": {
			persistence.PostDraft:      {status: persistence.PostPublishing, started: 2},
			persistence.PostScheduled:  {status: persistence.PostPublishing, started: 2},
			persistence.PostPublishing: {err: notPublishable}, persistence.PostPublished: {err: notPublishable},
			persistence.PostPartial:         {status: persistence.PostPublishing, started: 1},
			persistence.PostFailed:          {status: persistence.PostPublishing, started: 2},
			persistence.PostPendingApproval: {err: notPublishable},
		},
		"fired": {
			persistence.PostDraft: {status: persistence.PostDraft}, persistence.PostScheduled: {status: persistence.PostPublishing, started: 2},
			persistence.PostPublishing: {status: persistence.PostPublishing}, persistence.PostPublished: {status: persistence.PostPublished},
			persistence.PostPartial: {status: persistence.PostPartial}, persistence.PostFailed: {status: persistence.PostFailed},
			// Nothing publishes a post waiting for approval, its time come or not.
			persistence.PostPendingApproval: {status: persistence.PostPendingApproval},
		},
	}
	for change, byStatus := range cases {
		for _, from := range all {
			w, ok := byStatus[from]
			require.True(t, ok, "%s from %s has no expectation", change, from)
			t.Run(change+"/"+from, func(t *testing.T) {
				id, at := s.in(from)
				var m any
				switch change {
				case updated:
					m = &post.Update{Scope: s.user, Content: str("changed")}
				case deleted:
					m = &post.Delete{Scope: s.user}
				case "scheduled":
					m = &post.Schedule{Scope: s.user, At: at.Add(time.Hour)}
				case "published":
					m = &post.Publish{Scope: s.user, JobID: uuid.Must(uuid.NewV7()).String()}
				case "fired":
					m = &post.Fire{At: at, JobID: uuid.Must(uuid.NewV7()).String()}
				}
				before := s.get(id)
				_, err := s.ask(id, m)
				after := s.get(id)
				if w.err != nil {
					require.Error(t, err)
					require.IsType(t, w.err, err) //nolint:testifylint // the table names the error's type; ErrorAs would need a target per type
					require.Equal(t, before, after, "a refused change changes nothing")
					return
				}
				require.NoError(t, err)
				if change == deleted {
					require.Nil(t, after, "a deleted post is gone")
					return
				}
				require.Equal(t, w.status, after.Status)
				if change == updated {
					require.Equal(t, "changed", after.Content)
				}
				if w.started == 0 {
					select {
					case j := <-s.started:
						t.Fatalf("a job started: %+v", j)
					default:
					}
					return
				}
				j := <-s.started
				require.Equal(t, id, j.PostID)
				require.Len(t, j.Targets, w.started)
				require.Equal(t, j.TrackingID, *after.TrackingID)
			})
		}
	}
}

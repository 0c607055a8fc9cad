package live

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// readState is what became of one publication in a fan-out.
type readState int

const (
	// notRead: the request's budget or deadline ran out first, or the account's rate budget was
	// spent, or the network failed. Counts as partial.
	notRead readState = iota
	// read: the network answered.
	read
	// reconnect: the account's token is expired or refused. Listed, not partial.
	reconnect
	// gone: the publication or its account no longer exists. Neither partial nor listed.
	gone
)

type outcome struct {
	state readState
	reply *account.ReadReply
	// reason labels a notRead in metrics.
	reason string
}

// fanOut reads op for every publication, newest first per account, in parallel: at most
// PerAccount calls at a time per account, at most calls network calls in all, until ctx ends. The
// outcomes are aligned with pubs. Metrics are read in batches where the network has a batch
// read (one call for up to account.MetricsPerCall publications). Once an account answers that it
// needs reconnecting or that its budget is spent, its other publications are not asked for.
func (s *Service) fanOut(ctx context.Context, kind, scope string, op account.ReadOp, pubs []persistence.Publication, calls int) []outcome {
	start := time.Now()
	out := make([]outcome, len(pubs))
	f := &fan{s: s, ctx: ctx, scope: scope, op: op, pubs: pubs, out: out}
	f.deadline, _ = ctx.Deadline()
	f.left.Store(int64(calls))
	byAccount := map[string][]int{}
	var order []string
	for i, p := range pubs {
		if _, ok := byAccount[p.AccountID]; !ok {
			order = append(order, p.AccountID)
		}
		byAccount[p.AccountID] = append(byAccount[p.AccountID], i)
	}
	var wg sync.WaitGroup
	for _, acct := range order {
		idx := byAccount[acct]
		per := 1
		if op == account.OpMetrics {
			per = account.MetricsPerCall(platforms.Platform(pubs[idx[0]].Platform))
		}
		var tasks [][]int
		for len(idx) > 0 {
			n := min(per, len(idx))
			tasks = append(tasks, idx[:n])
			idx = idx[n:]
		}
		a := &fanAccount{id: acct, batch: per > 1}
		var next atomic.Int64
		for range min(s.cfg.PerAccount, len(tasks)) {
			wg.Go(func() {
				for k := int(next.Add(1)) - 1; k < len(tasks); k = int(next.Add(1)) - 1 {
					f.run(a, tasks[k])
				}
			})
		}
	}
	wg.Wait()
	for i, o := range out {
		if o.state == notRead {
			s.metrics.unread.WithLabelValues(pubs[i].Platform, o.reason).Inc()
		}
	}
	s.metrics.fanoutSize.WithLabelValues(kind).Observe(float64(len(pubs)))
	s.metrics.requestBudgets.WithLabelValues(kind).Observe(float64(f.made.Load()))
	s.metrics.fanoutSeconds.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	return out
}

// fan is one fan-out in progress.
type fan struct {
	s        *Service
	ctx      context.Context
	deadline time.Time
	scope    string
	op       account.ReadOp
	pubs     []persistence.Publication
	out      []outcome
	left     atomic.Int64 // network calls left in the request's budget
	made     atomic.Int64
}

// fanAccount is one account's side of a fan-out.
type fanAccount struct {
	id string
	// stop holds the outcome every remaining publication of the account takes, once the
	// account said it cannot be read (nil: go on).
	stop atomic.Pointer[outcome]
	// batch is cleared when the account's adapter turns out to have no batch read.
	batch bool
	mu    sync.Mutex
}

// spend takes one network call from the request's budget.
func (f *fan) spend() (reason string, ok bool) {
	if f.ctx.Err() != nil {
		return "deadline", false
	}
	if f.left.Add(-1) < 0 {
		return "request_budget", false
	}
	f.made.Add(1)
	return "", true
}

// run reads one task: a batch of publications of one account, or a single one.
func (f *fan) run(a *fanAccount, task []int) {
	a.mu.Lock()
	batch := a.batch && len(task) > 1
	a.mu.Unlock()
	if batch {
		if o := a.stop.Load(); o != nil {
			for _, i := range task {
				f.out[i] = *o
			}
			return
		}
		reason, ok := f.spend()
		if !ok {
			for _, i := range task {
				f.out[i] = outcome{reason: reason}
			}
			return
		}
		ids := make([]string, len(task))
		for k, i := range task {
			ids[k] = f.pubs[i].NetworkID
		}
		reply, err := actors.Ask[*account.ReadReply](f.ctx, f.s.cfg.Accounts.To(a.id), &account.Read{
			Op: f.op, Scope: f.scope, PublicationIDs: ids, Deadline: f.deadline,
		})
		if errors.Is(err, account.ErrReadUnsupported) {
			// No batch read on this network after all: the call was not made.
			f.left.Add(1)
			f.made.Add(-1)
			a.mu.Lock()
			a.batch = false
			a.mu.Unlock()
		} else {
			o := classify(reply, err)
			for _, i := range task {
				f.out[i] = o
				if o.state == read {
					m, found := reply.Batch[f.pubs[i].NetworkID]
					if !found {
						f.out[i] = outcome{state: gone}
						continue
					}
					f.out[i].reply = &account.ReadReply{Platform: reply.Platform, Metrics: m}
				}
			}
			a.halt(o, err)
			return
		}
	}
	for _, i := range task {
		if o := a.stop.Load(); o != nil {
			f.out[i] = *o
			continue
		}
		reason, ok := f.spend()
		if !ok {
			f.out[i] = outcome{reason: reason}
			continue
		}
		reply, err := actors.Ask[*account.ReadReply](f.ctx, f.s.cfg.Accounts.To(a.id), &account.Read{
			Op: f.op, Scope: f.scope, PublicationID: f.pubs[i].NetworkID, Deadline: f.deadline,
		})
		o := classify(reply, err)
		f.out[i] = o
		a.halt(o, err)
	}
}

// halt stops asking an account that cannot be read.
func (a *fanAccount) halt(o outcome, err error) {
	if o.state == reconnect || o.reason == "rate_budget" || (o.state == gone && accountGone(err)) {
		a.stop.CompareAndSwap(nil, &o)
	}
}

func accountGone(err error) bool {
	return errors.Is(err, account.ErrNotFound) || errors.Is(err, account.ErrForbidden) || errors.Is(err, account.ErrReadUnsupported)
}

// classify turns an account's answer into an outcome.
func classify(reply *account.ReadReply, err error) outcome {
	var spent *account.BudgetSpentError
	var rc *account.ReconnectError
	switch {
	case err == nil:
		return outcome{state: read, reply: reply}
	case errors.As(err, &rc):
		return outcome{state: reconnect}
	case errors.As(err, &spent):
		return outcome{reason: "rate_budget"}
	case errors.Is(err, platforms.ErrNotFound), accountGone(err):
		return outcome{state: gone}
	case errors.Is(err, actors.ErrTimeout), errors.Is(err, actors.ErrBusy), errors.Is(err, account.ErrReadDeadline), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, cluster.ErrUnavailable):
		return outcome{reason: "deadline"}
	}
	return outcome{reason: "network"}
}

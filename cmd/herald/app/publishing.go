package app

import (
	"time"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/campaign"
	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/actors/publishing"
)

// DefaultFreePostQuota is the free plan's published or scheduled posts per calendar month.
const DefaultFreePostQuota = 10

// buildPublishing builds the post, account, job and campaign directories, the scheduler and the
// hand-off between them (actors/publishing) on the account actors' dependencies.
func (a *App) buildPublishing(ad account.Deps) {
	if a.JobBacklog == nil {
		a.JobBacklog = job.NewBacklog(jobBacklogLimit(a.Cfg.MaxJobBacklog))
	}
	if a.CampaignHub == nil {
		a.CampaignHub = campaign.NewHub()
	}
	cfg := publishing.Config{
		System: a.Actors, Store: a.Store, Events: a.Events, Hub: a.CampaignHub, Backlog: a.JobBacklog,
		Registry: a.Registry, Log: a.Log, IdleTimeout: orDefault(a.Cfg.PostIdleTimeout, 30*time.Second),
		Capped: a.capped, Account: ad, Route: a.route(),
	}
	if a.node != nil {
		cfg.Fence = a.node.fence
	}
	a.Publishing = publishing.New(cfg)
	if a.node != nil {
		// The shard manager: the member's callbacks for "shard/…" leases (nodes.go).
		callTimeout := orDefault(ad.CallTimeout, 10*time.Minute)
		a.node.shards = publishing.NewShards(a.Publishing, a.node.fence, Shards, callTimeout)
		// A takeover's doubt (the call time-out) is kept in the lease until it passed, so that a
		// shard handed off meanwhile keeps it too.
		a.node.leases.SetDoubt(callTimeout)
		// A message lost with a node that died is made good within a few lease lifetimes.
		a.node.shards.Remind = remindEvery * orDefault(a.Cfg.LeaseTTL, DefaultLeaseTTL)
	}
	p := a.Publishing
	a.Posts, a.Accounts, a.Jobs, a.Campaigns, a.Scheduler = p.Posts, p.Accounts, p.Jobs, p.Campaigns, p.Scheduler
}

// remindEvery is, in lease lifetimes, how often a node reminds the shards it holds of their work
// (publishing.Shards.Remind).
const remindEvery = 5

// DefaultMaxJobBacklog is the publish jobs in hand beyond which publish requests are refused,
// when --max-job-backlog is not given (docs/operations.md, Overload).
const DefaultMaxJobBacklog = 4096

func jobBacklogLimit(n int) int {
	switch {
	case n == 0:
		return DefaultMaxJobBacklog
	case n < 0:
		return 0
	}
	return n
}

func freeQuota(n int) int {
	switch {
	case n == 0:
		return DefaultFreePostQuota
	case n < 0:
		return 0
	}
	return n
}

// Package actors is Herald's virtual-actor runtime on Proto.Actor: an activation directory per
// actor kind (Directory: one live incarnation per id, activated on its first message, passivated
// when idle without losing a message), Ask with a deadline, supervision that restarts a failed
// actor from its persisted state, and metrics per actor kind and message type.
//
// The actor kinds, one package each, and the messages between them:
//
//	HTTP handlers ──Ask──▶ post (actors/post) ── job and jobs_waiting (bbolt) ──Take──▶ account (actors/account) ──▶ network adapter
//	      │                  ▲  │                                                  │  takes its next batch from jobs_waiting
//	      │                  │  └─ event to the outbox ─┐     job (actors/job) ◀── Report ┘
//	      │                  └────── Finish ────────────┼────────┘ └─ steps stored, read by SSE
//	      │                                             ▼
//	      └──Ask──▶ webhook (actors/webhook) ◀── dispatcher reads the outbox (bbolt)
//
//	scheduler (actors/scheduler) pages through the schedule index ──Fire──▶ post
//
//	HTTP handlers ──Ask──▶ campaign (actors/campaign) ──Publish, Delete──▶ post (a retry, a cancel)
//	                         └─ created in one transaction with its posts and jobs, no actor activated
//
// A job's final transaction writes its post's outcome and event too (the Finish arrow: the
// post's actor takes it only when that could not be done, as for a job a stop left finished), so
// that a job's last report costs one commit and no post activation. A job of a campaign's post
// also appends its steps to the campaign's timeline. Job and campaign streams read the store,
// woken by the commits that touch what they follow (persistence.Store.Follow), on this node or,
// through PostgreSQL's NOTIFY, on another (docs/cluster.md).
//
// The arrows between kinds are one package's, actors/publishing: it owns the post, job, account
// and campaign directories, the scheduler and the job backlog, and implements the small interface
// each kind declares for what it hands on (post.Handoff, campaign.Handoff, job.Handoff,
// account.Jobs, account.Backlog), so that no actor knows another kind's directory. At start it
// resumes what a stop left (the accounts with targets waiting take them; the jobs whose outcome
// their post had not taken hand it on) and runs the scheduler and the pruning of the outbox.
//
// Every actor writes through: it builds its next state as a copy, commits it to bbolt (group
// committed with other actors' writes), and only then applies it and answers. Reads across many
// entities (lists, the schedule, the outbox) read bbolt directly, never waking actors. A write the
// store cannot commit (disk full, I/O error) leaves the state as it was: a request gets the error,
// and what already happened in the world (a network call's outcome, a job's outcome, new tokens)
// is written again until the store takes it (storeretry.go).
//
// What waits (a job's targets for their account's turn or budget, a scheduled post for its time)
// waits in the store, not in mailboxes or goroutines, and each directory caps its live actors
// (Kind.MaxLive), passivating idle ones first: memory follows the work in hand, not the backlog.
//
// Every mailbox runs on the system's pool of worker goroutines (dispatcher.go): a message that
// wakes an idle actor takes an idle worker, the most recently idle first, instead of a new
// goroutine; the pool grows whenever every worker is busy (an actor waiting for its commit keeps
// its worker, and the others still run) and idle workers exit after five seconds.
//
// Actors address each other by id through the directories, never by PID, so an actor may
// passivate or restart between two messages; this is also what lets a cluster's grains replace the
// directories when Herald runs on several nodes.
package actors

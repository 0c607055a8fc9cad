package job

import "github.com/heraldhq/herald/cluster"

// The job's messages, replies and errors that cross between nodes when several run
// (docs/cluster.md). Subscribe and Unsubscribe carry a Subscriber (a channel) and stay on their
// node: a stream follows a job from the store's events instead.
func init() {
	cluster.Register[Start]("job.Start")
	cluster.Register[Get]("job.Get")
	cluster.Register[Reply]("job.Reply")
	cluster.Register[PostSynced]("job.PostSynced")
	cluster.Register[Flush]("job.Flush")
	cluster.Register[Flushed]("job.Flushed")
	cluster.RegisterError("job.not_found", ErrNotFound)
	cluster.RegisterError("job.forbidden", ErrForbidden)
}

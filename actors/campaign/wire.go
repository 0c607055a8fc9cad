package campaign

import "github.com/heraldhq/herald/cluster"

// The campaign's messages, replies and errors that cross between nodes when several run
// (docs/cluster.md).
func init() {
	cluster.Register[Create]("campaign.Create")
	cluster.Register[CreateReply]("campaign.CreateReply")
	cluster.Register[Retry]("campaign.Retry")
	cluster.Register[RetryReply]("campaign.RetryReply")
	cluster.Register[Cancel]("campaign.Cancel")
	cluster.Register[CancelReply]("campaign.CancelReply")
	cluster.RegisterError("campaign.not_found", ErrNotFound)
	cluster.RegisterError("campaign.exists", ErrExists)
}

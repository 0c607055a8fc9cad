package post

import "github.com/heraldhq/herald/cluster"

// The post's messages, replies and errors that cross between nodes when several run
// (docs/cluster.md). A Publish or campaign whose Idempotency carries Held (a func) cannot cross:
// it is answered cluster.ErrUnknownType.
func init() {
	cluster.Register[Create]("post.Create")
	cluster.Register[Get]("post.Get")
	cluster.Register[Update]("post.Update")
	cluster.Register[Delete]("post.Delete")
	cluster.Register[Reply]("post.Reply")
	cluster.Register[Publish]("post.Publish")
	cluster.Register[PublishReply]("post.PublishReply")
	cluster.Register[Schedule]("post.Schedule")
	cluster.Register[Fire]("post.Fire")
	cluster.Register[FireReply]("post.FireReply")
	cluster.Register[Finish]("post.Finish")
	cluster.Register[Took]("post.Took")
	cluster.Register[Approve]("post.Approve")
	cluster.Register[ApproveReply]("post.ApproveReply")
	cluster.Register[Reject]("post.Reject")
	cluster.Register[SetApprovalLink]("post.SetApprovalLink")
	cluster.RegisterError("post.not_found", ErrNotFound)
	cluster.RegisterError("post.forbidden", ErrForbidden)
	cluster.RegisterError("post.exists", ErrExists)
	cluster.RegisterError("post.link_revoked", ErrLinkRevoked)
	cluster.RegisterError("post.link_used", ErrLinkUsed)
	cluster.RegisterError("post.link_expired", ErrLinkExpired)
	cluster.RegisterErrorType[InvalidError]("post.InvalidError")
	cluster.RegisterErrorType[NotEditableError]("post.NotEditableError")
	cluster.RegisterErrorType[NotPublishableError]("post.NotPublishableError")
	cluster.RegisterErrorType[NotSchedulableError]("post.NotSchedulableError")
	cluster.RegisterErrorType[NotPendingError]("post.NotPendingError")
	cluster.RegisterErrorType[QuotaExceededError]("post.QuotaExceededError")
}

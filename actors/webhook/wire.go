package webhook

import "github.com/heraldhq/herald/cluster"

// The subscription's messages, replies and errors that cross between nodes when several run
// (docs/cluster.md). The actor's own timers and results (tick, attemptDone) never leave it.
func init() {
	cluster.Register[Create]("webhook.Create")
	cluster.Register[Update]("webhook.Update")
	cluster.Register[Delete]("webhook.Delete")
	cluster.Register[RotateSecret]("webhook.RotateSecret")
	cluster.Register[Reply]("webhook.Reply")
	cluster.Register[SendTest]("webhook.SendTest")
	cluster.Register[Redeliver]("webhook.Redeliver")
	cluster.Register[DeliveryReply]("webhook.DeliveryReply")
	cluster.Register[Enqueue]("webhook.Enqueue")
	cluster.Register[Wake]("webhook.Wake")
	cluster.RegisterError("webhook.not_found", ErrNotFound)
	cluster.RegisterError("webhook.forbidden", ErrForbidden)
	cluster.RegisterError("webhook.exists", ErrExists)
	cluster.RegisterError("webhook.inactive", ErrInactive)
	cluster.RegisterError("webhook.delivery_not_found", ErrDeliveryNotFound)
	cluster.RegisterError("webhook.blocked", ErrBlocked)
	cluster.RegisterError("webhook.host", ErrHost)
	cluster.RegisterErrorType[LimitError]("webhook.LimitError")
	cluster.RegisterErrorType[URLError]("webhook.URLError")
}

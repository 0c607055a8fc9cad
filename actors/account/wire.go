package account

import (
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/platforms"
)

// The account's messages, replies and errors that cross between nodes when several run
// (docs/cluster.md). A Read that carries Media (each holds funcs that open the file) cannot
// cross: it is answered cluster.ErrUnknownType.
func init() {
	cluster.Register[Take]("account.Take")
	cluster.Register[Report]("account.Report")
	cluster.Register[Create]("account.Create")
	cluster.Register[SetCredentials]("account.SetCredentials")
	cluster.Register[SetDefaults]("account.SetDefaults")
	cluster.Register[Delete]("account.Delete")
	cluster.Register[Get]("account.Get")
	cluster.Register[Reply]("account.Reply")
	cluster.Register[Read]("account.Read")
	cluster.Register[ReadReply]("account.ReadReply")
	cluster.RegisterError("account.not_found", ErrNotFound)
	cluster.RegisterError("account.forbidden", ErrForbidden)
	cluster.RegisterError("account.no_media_storage", ErrNoMediaStorage)
	cluster.RegisterError("account.exists", ErrExists)
	cluster.RegisterError("account.read_unsupported", ErrReadUnsupported)
	cluster.RegisterError("account.read_deadline", ErrReadDeadline)
	cluster.RegisterErrorType[BudgetSpentError]("account.BudgetSpentError")
	cluster.RegisterErrorType[ReconnectError]("account.ReconnectError")
	cluster.RegisterErrorType[platforms.Error]("platforms.Error")
	cluster.RegisterError("platforms.not_found", platforms.ErrNotFound)
	cluster.RegisterError("platforms.lookup_unsupported", platforms.ErrLookupUnsupported)
	cluster.RegisterError("platforms.not_liked", platforms.ErrNotLiked)
	cluster.RegisterError("platforms.unconvertible", platforms.ErrUnconvertible)
}

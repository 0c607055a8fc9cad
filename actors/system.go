package actors

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
)

// System is the actor system with Herald's metrics.
type System struct {
	AS      *actor.ActorSystem
	Root    *actor.RootContext
	Metrics *Metrics
	Log     *slog.Logger

	replies *replyRouter // the reply address of every Ask (ask.go)
	// workers run the actors' mailboxes (dispatcher.go); every kind's props use them.
	workers *workerPool
}

// NewSystem starts an actor system. reg may be nil (metrics then go nowhere).
func NewSystem(reg prometheus.Registerer, log *slog.Logger) *System {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Proto.Actor logs every supervised failure and dead letter at info level, with the whole
	// message; Herald logs failures itself (with the actor kind), so the runtime's own logger
	// only reports warnings, and never a message's content (logging.go).
	quiet := slog.New(newRuntimeLogHandler(log.Handler().WithGroup("protoactor")))
	cfg := actor.Configure(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }),
		actor.WithDeadLetterThrottleInterval(time.Minute),
	)
	as := actor.NewActorSystemWithConfig(cfg)
	return &System{AS: as, Root: as.Root, Metrics: NewMetrics(reg), Log: log, replies: newReplyRouter(as),
		workers: newWorkerPool(dispatcherThroughput, workerIdleTimeout)}
}

// Listening names the reply address of every Ask after the system's address as it is now.
// Proto.Actor's remote gives the system its network address when it starts; a reply address
// made before names no node, so a reply from another node would go astray. Whoever starts
// remote calls Listening at once, before any Ask.
func (s *System) Listening() { s.replies.readdress(s.AS.ProcessRegistry.Address) }

// Shutdown stops the actor system and retires its idle workers.
func (s *System) Shutdown() {
	s.AS.Shutdown()
	s.workers.Close()
}

// supervisor restarts a failing actor (up to 10 times in 10 seconds, then stops it). A restart
// runs *actor.Started again, where every Herald actor reloads its state from bbolt.
var supervisor = actor.NewOneForOneStrategy(10, 10*time.Second, actor.DefaultDecider)

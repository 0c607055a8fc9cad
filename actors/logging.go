package actors

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// runtimeLogHandler is the log handler given to Proto.Actor. The runtime logs routine events at
// info level (dead letters, recoveries) and prints whole messages with them; Herald's messages
// carry credentials (account.Create, a refresh's new tokens), so only warnings and errors pass,
// and any message attribute is reduced to its type. Herald logs actor failures itself, with the
// actor kind and message type.
type runtimeLogHandler struct{ inner slog.Handler }

func newRuntimeLogHandler(inner slog.Handler) slog.Handler { return runtimeLogHandler{inner} }

func (h runtimeLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.inner.Enabled(ctx, l)
}

func (h runtimeLogHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(safeAttr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h runtimeLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	safe := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		safe[i] = safeAttr(a)
	}
	return runtimeLogHandler{h.inner.WithAttrs(safe)}
}

func (h runtimeLogHandler) WithGroup(name string) slog.Handler {
	return runtimeLogHandler{h.inner.WithGroup(name)}
}

// safeAttr keeps plain values, process ids and errors, and replaces anything else (a message) by
// its type name.
func safeAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindAny:
		switch x := v.Any().(type) {
		case *actor.PID:
			return slog.String(a.Key, x.String())
		case error:
			return slog.String(a.Key, x.Error())
		}
		return slog.String(a.Key+"_type", messageType(v.Any()))
	case slog.KindGroup:
		attrs := v.Group()
		safe := make([]any, len(attrs))
		for i, g := range attrs {
			safe[i] = safeAttr(g)
		}
		return slog.Group(a.Key, safe...)
	}
	return slog.Attr{Key: a.Key, Value: v}
}

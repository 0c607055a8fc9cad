package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/persistence"
)

// What crosses between nodes is one envelope, a protobuf Any (Proto.Actor's remote writes
// protobuf only): its type URL names the message's registered type, its value is the message's
// JSON (the encoding Herald's records already have). The actor packages register the messages
// and replies that may cross (Register) and the errors their replies carry (RegisterError,
// RegisterErrorType); a message whose type is not registered is never sent, and one that
// arrives under a name this node does not know is answered with ErrUnknownType.

// typePrefix starts the type URL of every envelope.
const typePrefix = "herald/"

// errorType is the type name of an error reply (*actors.ErrorReply).
const errorType = "error"

// ErrUnknownType means a message's type is not registered to cross between nodes: on the
// sending node it was not sent, on the receiving node it was not delivered.
var ErrUnknownType = errors.New("cluster: the message's type is not registered to cross between nodes")

type codec struct {
	name   string
	decode func([]byte) (any, error)
}

type errType struct {
	name   string
	as     func(error) (error, bool)
	decode func([]byte) (error, error)
}

var wire = struct {
	sync.RWMutex
	byName   map[string]*codec
	byType   map[reflect.Type]*codec
	errs     []sentinel
	errTypes []errType
}{byName: map[string]*codec{}, byType: map[reflect.Type]*codec{}}

type sentinel struct {
	name string
	err  error
}

// Register lets messages of type *T cross between nodes under name ("post.Create"), encoded as
// JSON: T must have no channel, func or other field JSON cannot carry (such a message fails to
// encode and is not sent). Names are unique; a second registration of a name or a type panics.
func Register[T any](name string) {
	t := reflect.TypeFor[*T]()
	wire.Lock()
	defer wire.Unlock()
	if _, dup := wire.byName[name]; dup || name == errorType {
		panic("cluster: message type name registered twice: " + name)
	}
	if _, dup := wire.byType[t]; dup {
		panic("cluster: message type registered twice: " + t.String())
	}
	c := &codec{name: name, decode: func(b []byte) (any, error) {
		v := new(T)
		if err := json.Unmarshal(b, v); err != nil {
			return nil, err
		}
		return v, nil
	}}
	wire.byName[name], wire.byType[t] = c, c
}

// RegisterError lets a sentinel error cross in error replies: the receiving node's error
// matches it with errors.Is and carries the sender's message.
func RegisterError(name string, err error) {
	wire.Lock()
	defer wire.Unlock()
	for _, s := range wire.errs {
		if s.name == name {
			panic("cluster: error name registered twice: " + name)
		}
	}
	wire.errs = append(wire.errs, sentinel{name, err})
}

// RegisterErrorType lets errors of type *T cross in error replies, encoded as JSON: the
// receiving node's error matches *T with errors.As, with the same fields, but for those JSON
// cannot carry back (an error it wraps stays nil).
func RegisterErrorType[T any, P interface {
	*T
	error
}](name string) {
	wire.Lock()
	defer wire.Unlock()
	wire.errTypes = append(wire.errTypes, errType{
		name: name,
		as: func(err error) (error, bool) {
			var p P
			if errors.As(err, &p) {
				return p, true
			}
			return nil, false
		},
		decode: func(b []byte) (error, error) {
			p := P(new(T))
			// A field JSON cannot fill (an error the type wraps, an interface) stays empty;
			// the others are filled all the same.
			if err := json.Unmarshal(b, p); err != nil {
				var te *json.UnmarshalTypeError
				if !errors.As(err, &te) {
					return nil, err
				}
			}
			return p, nil
		},
	})
}

// wireError is an error reply on the wire: a registered typed error (Type and Data), else a
// registered sentinel it matches (Sentinel), and the error's message.
type wireError struct {
	Type     string          `json:"type,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Sentinel string          `json:"sentinel,omitempty"`
	Message  string          `json:"message"`
}

// Encode puts a registered message, or an *actors.ErrorReply, in an envelope.
func Encode(msg any) (*anypb.Any, error) {
	if e, ok := msg.(*actors.ErrorReply); ok {
		return encodeError(e.Err)
	}
	wire.RLock()
	c := wire.byType[reflect.TypeOf(msg)]
	wire.RUnlock()
	if c == nil {
		return nil, fmt.Errorf("%w: %T", ErrUnknownType, msg)
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("%w: %T cannot be encoded: %w", ErrUnknownType, msg, err)
	}
	return &anypb.Any{TypeUrl: typePrefix + c.name, Value: b}, nil
}

// Decode takes the message out of an envelope; an error reply comes out as *actors.ErrorReply.
func Decode(a *anypb.Any) (any, error) {
	name, ok := strings.CutPrefix(a.GetTypeUrl(), typePrefix)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, a.GetTypeUrl())
	}
	if name == errorType {
		err, derr := decodeError(a.GetValue())
		if derr != nil {
			return nil, derr
		}
		return &actors.ErrorReply{Err: err}, nil
	}
	wire.RLock()
	c := wire.byName[name]
	wire.RUnlock()
	if c == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, name)
	}
	v, err := c.decode(a.GetValue())
	if err != nil {
		return nil, fmt.Errorf("cluster: decoding %s: %w", name, err)
	}
	return v, nil
}

func encodeError(err error) (*anypb.Any, error) {
	if err == nil {
		err = errors.New("unknown error")
	}
	w := wireError{Message: err.Error()}
	wire.RLock()
	for _, t := range wire.errTypes {
		if te, ok := t.as(err); ok {
			if b, merr := json.Marshal(te); merr == nil {
				w.Type, w.Data = t.name, b
				break
			}
		}
	}
	if w.Type == "" {
		for _, s := range wire.errs {
			if errors.Is(err, s.err) {
				w.Sentinel = s.name
				break
			}
		}
	}
	wire.RUnlock()
	b, merr := json.Marshal(w)
	if merr != nil {
		return nil, merr
	}
	return &anypb.Any{TypeUrl: typePrefix + errorType, Value: b}, nil
}

func decodeError(b []byte) (error, error) {
	var w wireError
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("cluster: decoding an error reply: %w", err)
	}
	wire.RLock()
	defer wire.RUnlock()
	if w.Type != "" {
		for _, t := range wire.errTypes {
			if t.name == w.Type {
				if e, err := t.decode(w.Data); err == nil {
					return e, nil
				}
				break
			}
		}
	}
	if w.Sentinel != "" {
		for _, s := range wire.errs {
			if s.name == w.Sentinel {
				return &remoteError{msg: w.Message, is: s.err}, nil
			}
		}
	}
	return &remoteError{msg: w.Message}, nil
}

// remoteError is an error answered by another node: its message, and the registered sentinel it
// matched there, if any.
type remoteError struct {
	msg string
	is  error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.is }

func init() {
	RegisterError("actors.timeout", actors.ErrTimeout)
	RegisterError("actors.failed", actors.ErrActorFailed)
	RegisterError("actors.busy", actors.ErrBusy)
	RegisterError("cluster.unavailable", ErrUnavailable)
	RegisterError("cluster.unknown_type", ErrUnknownType)
	RegisterError("persistence.busy", persistence.ErrBusy)
	RegisterError("persistence.write_failed", persistence.ErrWriteFailed)
	RegisterError("persistence.unavailable", persistence.ErrUnavailable)
	RegisterError("persistence.fenced", persistence.ErrFenced)
	RegisterError("persistence.not_found", persistence.ErrNotFound)
	RegisterError("persistence.exists", persistence.ErrExists)
	RegisterError("persistence.closed", persistence.ErrClosed)
	RegisterError("persistence.idempotency_key_used", persistence.ErrIdempotencyKeyUsed)
}

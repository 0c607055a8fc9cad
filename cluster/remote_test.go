package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/cluster/clustertest"
	"github.com/heraldhq/herald/persistence/secret"
)

// The test kind's messages: echo asks for a reply naming the node that answered, note is sent
// without a reply, chanMsg cannot be encoded (it holds a channel) and unlisted is not registered.
type (
	echo struct {
		Text string `json:"text"`
	}
	echoed struct {
		Node string `json:"node"`
		ID   string `json:"id"`
		Text string `json:"text"`
	}
	note struct {
		Text string `json:"text"`
	}
	failing struct {
		Typed bool `json:"typed"`
	}
	chanMsg   struct{ C chan int }
	unlisted  struct{}
	testError struct {
		Field string `json:"field"`
	}
)

func (e *testError) Error() string { return "bad " + e.Field }

var errTestSentinel = errors.New("test sentinel")

func init() {
	Register[echo]("test.echo")
	Register[echoed]("test.echoed")
	Register[note]("test.note")
	Register[failing]("test.failing")
	Register[chanMsg]("test.chan")
	RegisterError("test.sentinel", errTestSentinel)
	RegisterErrorType[testError]("test.error")
}

// placement is a fake lease table: the owner's address of every shard ("" for none) as this
// node believes it.
type placement struct {
	mu    sync.Mutex
	self  string
	owner string
	// fresh, when set, is the owner that reading the lease table again finds (Refresh);
	// refreshes counts the readings.
	fresh     string
	refreshes int
}

func (p *placement) Here(i int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.owner != "" && p.owner == p.self
}

func (p *placement) Where(int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.owner
}

func (p *placement) set(owner string) {
	p.mu.Lock()
	p.owner = owner
	p.mu.Unlock()
}

// node is one node: an actor system with remote on loopback and the test kind's directory.
// Proto.Actor's remote sets gRPC's process-wide logger each time it starts, which races with
// the gRPC servers already running in the process; so the test process runs one node of its
// own for all its tests (local), and every other node runs in a process of its own (peer).
type rnode struct {
	sys    *actors.System
	remote *Remote
	router *Router
	place  *placement
	notes  chan echoed
}

func newNode(name string, timeout time.Duration, listen, advertise string) (*rnode, error) {
	n := &rnode{sys: actors.NewSystem(nil, nil), place: &placement{}, notes: make(chan echoed, 16)}
	box, err := secret.NewBox(testKey)
	if err != nil {
		return nil, err
	}
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	r, err := StartRemote(n.sys, RemoteConfig{Addr: listen, Advertise: advertise, Placement: n.place, Timeout: timeout, Sealer: box})
	if err != nil {
		return nil, err
	}
	n.remote = r
	n.place.self = r.Addr()
	dir := actors.NewDirectory(n.sys, actors.Kind{Name: "test", New: func(id string) actor.Actor {
		return actor.ReceiveFunc(func(ctx actor.Context) {
			switch m := ctx.Message().(type) {
			case *echo:
				actors.Reply(ctx, &echoed{Node: name, ID: id, Text: m.Text})
			case *note:
				n.notes <- echoed{Node: name, ID: id, Text: m.Text}
			case *failing:
				if m.Typed {
					actors.ReplyError(ctx, fmt.Errorf("checking: %w", &testError{Field: "title"}))
				} else {
					actors.ReplyError(ctx, fmt.Errorf("checking: %w", errTestSentinel))
				}
			}
		})
	}})
	n.router = r.Route(dir)
	return n, nil
}

// testKey is the key every node of the tests shares.
var testKey = bytes.Repeat([]byte{7}, 32)

// localTimeout is the local node's forward time-out.
const localTimeout = 500 * time.Millisecond

var (
	localOnce sync.Once
	localNode *rnode
	localErr  error
)

// local is the test process's own node, "a".
func local(t *testing.T) *rnode {
	t.Helper()
	localOnce.Do(func() { localNode, localErr = newNode("a", localTimeout, "", "") })
	require.NoError(t, localErr)
	t.Cleanup(func() { localNode.place.set("") })
	return localNode
}

// count reads one of a node's counters.
func (n *rnode) count(received bool, kind, outcome string) float64 {
	v := n.remote.m.forwards
	if received {
		v = n.remote.m.received
	}
	return testutil.ToFloat64(v.WithLabelValues(kind, outcome))
}

// nodeEnv names a peer node; listenEnv and advertiseEnv give its listen and advertised
// addresses (a free port and none when unset).
const (
	nodeEnv      = "HERALD_TEST_NODE"
	listenEnv    = "HERALD_TEST_NODE_LISTEN"
	advertiseEnv = "HERALD_TEST_NODE_ADVERTISE"
)

// runNode runs a peer node: it prints "addr ADDR", then "note ID TEXT" for every note its actors
// get, and answers the commands read from stdin: "owner ADDR|self|-" (the owner of every shard),
// "count forwards|received KIND OUTCOME".
func runNode() {
	n, err := newNode(os.Getenv(nodeEnv), 0, os.Getenv(listenEnv), os.Getenv(advertiseEnv))
	if err != nil {
		fmt.Println("error", err)
		return
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	say("addr %s", n.remote.Addr())
	go func() {
		for e := range n.notes {
			say("note %s %s", e.ID, e.Text)
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 2 && f[0] == "owner":
			o := f[1]
			switch o {
			case "self":
				o = n.remote.Addr()
			case "-":
				o = ""
			}
			n.place.set(o)
			say("ok")
		case len(f) == 4 && f[0] == "count":
			say("count %v", n.count(f[1] == "received", f[2], f[3]))
		}
	}
}

// peer is a node in a process of its own.
type peer struct {
	addr  string
	in    io.Writer
	lines chan string
	notes chan string
}

func startPeer(t *testing.T, name string, env ...string) *peer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), nodeEnv+"="+name), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &peer{in: in, lines: make(chan string, 16), notes: make(chan string, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "note ") {
				p.notes <- strings.TrimPrefix(l, "note ")
			} else {
				p.lines <- l
			}
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		_ = in.Close() // the node ends with its stdin
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
	first := p.line(t)
	addr, ok := strings.CutPrefix(first, "addr ")
	require.True(t, ok, first)
	p.addr = addr
	return p
}

func (p *peer) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		require.True(t, ok, "the node process ended")
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("the node process did not answer")
	}
	return ""
}

// own tells the peer which node owns every shard: an address, "self" or "-" (none).
func (p *peer) own(t *testing.T, owner string) {
	t.Helper()
	_, err := fmt.Fprintln(p.in, "owner", owner)
	require.NoError(t, err)
	require.Equal(t, "ok", p.line(t))
}

func (p *peer) count(t *testing.T, received bool, kind, outcome string) float64 {
	t.Helper()
	which := "forwards"
	if received {
		which = "received"
	}
	_, err := fmt.Fprintln(p.in, "count", which, kind, outcome)
	require.NoError(t, err)
	v, err := strconv.ParseFloat(strings.TrimPrefix(p.line(t), "count "), 64)
	require.NoError(t, err)
	return v
}

func ask[R any](t *testing.T, n *rnode, id string, msg any) (R, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return actors.Ask[R](ctx, n.router.To(id), msg)
}

func TestRemoteForwardReachesOwner(t *testing.T) {
	a, b := local(t), startPeer(t, "b")
	a.place.set(b.addr)
	b.own(t, "self")
	answered, sent := a.count(false, "test", "answered"), a.count(false, "test", "sent")

	// A request's answer comes back across the nodes, from the owner's actor.
	r, err := ask[*echoed](t, a, "post-1", &echo{Text: "hello"})
	require.NoError(t, err)
	require.Equal(t, &echoed{Node: "b", ID: "post-1", Text: "hello"}, r)

	// A message without a reply reaches the owner's actor.
	a.router.Send("post-2", &note{Text: "wake"})
	select {
	case got := <-b.notes:
		require.Equal(t, "post-2 wake", got)
	case <-time.After(20 * time.Second):
		t.Fatal("the note never reached the owner's actor")
	}
	require.Empty(t, a.notes)
	require.InDelta(t, answered+1, a.count(false, "test", "answered"), 0)
	require.InDelta(t, sent+1, a.count(false, "test", "sent"), 0)
	require.InDelta(t, 2, b.count(t, true, "test", "delivered"), 0)

	// On the owner itself the router delivers locally, with no forward.
	a.place.set(a.remote.Addr())
	r, err = ask[*echoed](t, a, "post-3", &echo{Text: "local"})
	require.NoError(t, err)
	require.Equal(t, "a", r.Node)
	require.InDelta(t, answered+1, a.count(false, "test", "answered"), 0)
}

// SendLive reaches a live incarnation on the owner and never activates one there.
func TestRemoteSendLiveReachesOnlyALiveActor(t *testing.T) {
	a, b := local(t), startPeer(t, "b")
	a.place.set(b.addr)
	b.own(t, "self")

	require.True(t, a.router.SendLive("post-9", &note{Text: "cold"}))
	a.router.Send("post-9", &note{Text: "wakes"}) // after the first, on the same connection
	next := func() string {
		select {
		case got := <-b.notes:
			return got
		case <-time.After(20 * time.Second):
			t.Fatal("no note reached the owner's actor")
		}
		return ""
	}
	require.Equal(t, "post-9 wakes", next(), "the message for a live incarnation activated none")
	require.True(t, a.router.SendLive("post-9", &note{Text: "warm"}))
	require.Equal(t, "post-9 warm", next())
}

func TestRemoteErrorRepliesCross(t *testing.T) {
	a, b := local(t), startPeer(t, "b")
	a.place.set(b.addr)
	b.own(t, "self")

	// A sentinel error matches errors.Is on the asking node, with the owner's message.
	_, err := ask[*echoed](t, a, "post-1", &failing{})
	require.ErrorIs(t, err, errTestSentinel)
	require.EqualError(t, err, "checking: test sentinel")
	// A typed error comes back as its type with its fields.
	_, err = ask[*echoed](t, a, "post-1", &failing{Typed: true})
	var te *testError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "title", te.Field)
}

func TestRemoteUnknownTypeIsAnswered(t *testing.T) {
	a, b := local(t), startPeer(t, "b")
	a.place.set(b.addr)
	b.own(t, "self")

	// A type that is not registered, or that JSON cannot carry, is never sent: the request is
	// answered at once.
	_, err := ask[*echoed](t, a, "post-1", &unlisted{})
	require.ErrorIs(t, err, ErrUnknownType)
	_, err = ask[*echoed](t, a, "post-1", &chanMsg{C: make(chan int)})
	require.ErrorIs(t, err, ErrUnknownType)

	// A type the receiving node does not know is answered with an error, not dropped.
	_, err = askVia(t, a, raw{a: a, to: b.addr, kind: "test", env: &anypb.Any{TypeUrl: typePrefix + "test.newer", Value: []byte(`{}`)}})
	require.ErrorIs(t, err, ErrUnknownType)
	// And so is a kind it has no directory for.
	_, err = askVia(t, a, raw{a: a, to: b.addr, kind: "nope", env: &anypb.Any{TypeUrl: typePrefix + "test.echo", Value: []byte(`{}`)}})
	require.ErrorIs(t, err, ErrUnknownType)
	require.InDelta(t, 1, b.count(t, true, "test", "unknown_type"), 0)
	require.InDelta(t, 1, b.count(t, true, "unknown", "unknown_type"), 0)
	require.InDelta(t, 0, b.count(t, true, "test", "delivered"), 0)
}

func askVia(t *testing.T, n *rnode, r actors.Router) (*echoed, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return actors.Ask[*echoed](ctx, actors.Via(n.sys, r, "post-1"), &echo{})
}

// raw is a router that sends a request as an envelope built by hand, to the gateway of the node
// at to: sealed with the nodes' key, or with another (sealer), or not at all (clear).
type raw struct {
	a      *rnode
	to     string
	kind   string
	env    *anypb.Any
	sealer Sealer
	clear  bool
}

func (r raw) Kind() actors.Kind             { return actors.Kind{Name: r.kind} }
func (r raw) Send(string, any)              {}
func (r raw) To(id string) actors.Requester { return actors.Via(r.a.sys, r, id) }
func (r raw) Request(id string, _ any, sender *actor.PID) {
	from := r.a.remote.open(sender, r.kind, r.to)
	env := r.env
	switch {
	case r.sealer != nil:
		env = (&Remote{cfg: RemoteConfig{Sealer: r.sealer}}).seal(r.kind, id, "", env.GetTypeUrl(), string(env.GetValue()), "")
	case !r.clear:
		env = r.a.remote.seal(r.kind, id, "", env.GetTypeUrl(), string(env.GetValue()), "")
	}
	r.a.sys.Root.Send(actor.NewPID(r.to, gatewayID), &actor.MessageEnvelope{Message: env, Sender: from})
}

// A message that is not sealed with the nodes' key is neither delivered nor answered: only a
// node that holds the key can send another work.
func TestRemoteUnsealedIsNotDelivered(t *testing.T) {
	a, b := local(t), startPeer(t, "b")
	a.place.set(b.addr)
	b.own(t, "self")
	other, err := secret.NewBox(bytes.Repeat([]byte{8}, 32))
	require.NoError(t, err)

	echoEnv, err := Encode(&echo{Text: "forged"})
	require.NoError(t, err)
	for _, r := range []raw{
		{a: a, to: b.addr, kind: "test", env: echoEnv, clear: true},
		{a: a, to: b.addr, kind: "test", env: echoEnv, sealer: other},
	} {
		start := time.Now()
		_, err := askVia(t, a, r)
		// No answer came: the forward's own time-out answered.
		require.ErrorIs(t, err, ErrUnavailable)
		require.GreaterOrEqual(t, time.Since(start), localTimeout)
	}
	require.InDelta(t, 2, b.count(t, true, "unknown", "unsealed"), 0)
	require.InDelta(t, 0, b.count(t, true, "test", "delivered"), 0)
	// The same message sealed with the key is delivered and answered.
	got, err := askVia(t, a, raw{a: a, to: b.addr, kind: "test", env: echoEnv})
	require.NoError(t, err)
	require.Equal(t, "forged", got.Text)
}

func TestRemoteNotOwnerAnswersWithoutForwarding(t *testing.T) {
	a, b, c := local(t), startPeer(t, "b"), startPeer(t, "c")
	// a's lease table is stale: it names b, which has given the shards up to c.
	a.place.set(b.addr)
	b.own(t, c.addr)
	c.own(t, "self")

	start := time.Now()
	_, err := ask[*echoed](t, a, "post-1", &echo{Text: "hello"})
	require.ErrorIs(t, err, ErrUnavailable)
	require.Less(t, time.Since(start), localTimeout, "answered by b, not by the time-out")
	require.InDelta(t, 1, b.count(t, true, "test", "refused"), 0)
	// b forwarded nothing on, and c heard nothing.
	require.InDelta(t, 0, b.count(t, false, "test", "sent"), 0)
	require.InDelta(t, 0, b.count(t, false, "test", "unavailable"), 0)
	require.InDelta(t, 0, b.count(t, false, "test", "answered"), 0)
	require.InDelta(t, 0, c.count(t, true, "test", "delivered"), 0)
	require.InDelta(t, 0, c.count(t, true, "test", "refused"), 0)
	require.Empty(t, c.notes)
	require.Empty(t, b.notes)
}

func TestRemoteNoOwnerKnown(t *testing.T) {
	a := local(t)
	a.place.set("") // the shard is moving: expired or unowned
	deferred, unavailable := a.count(false, "test", "deferred"), a.count(false, "test", "unavailable")
	start := time.Now()
	_, err := ask[*echoed](t, a, "post-1", &echo{})
	require.ErrorIs(t, err, ErrUnavailable)
	require.Less(t, time.Since(start), localTimeout, "answered at once")
	require.InDelta(t, unavailable+1, a.count(false, "test", "unavailable"), 0)

	// A message without a reply waits for an owner to be known: here, once this node takes the
	// shard. It is delivered once.
	a.router.Send("no-owner", &note{Text: "later"})
	require.InDelta(t, deferred+1, a.count(false, "test", "deferred"), 0)
	time.Sleep(200 * time.Millisecond)
	requireNoNote(t, a.notes, "no-owner")
	a.place.set(a.remote.Addr())
	require.Equal(t, echoed{Node: "a", ID: "no-owner", Text: "later"}, nextNote(t, a.notes, "no-owner"))
	time.Sleep(1500 * time.Millisecond) // longer than the longest wait between tries
	requireNoNote(t, a.notes, "no-owner")
}

// A message without a reply whose tries run out is dropped, counted.
func TestRemoteASendWithNoOwnerIsDroppedAfterItsLastTry(t *testing.T) {
	a := local(t)
	a.remote.mu.Lock()
	a.remote.tries = 3
	a.remote.mu.Unlock()
	t.Cleanup(func() {
		a.remote.mu.Lock()
		a.remote.tries = redeliverTries
		a.remote.mu.Unlock()
	})
	a.place.set("")
	dropped, deferred := a.count(false, "test", "dropped"), a.count(false, "test", "deferred")
	a.router.Send("dropped-1", &note{Text: "never"})
	// 25 + 50 + 100 ms of waits, then the fourth try is the last.
	require.Eventually(t, func() bool { return a.count(false, "test", "dropped") == dropped+1 }, 5*time.Second, 10*time.Millisecond)
	require.InDelta(t, deferred+3, a.count(false, "test", "deferred"), 0)
	a.place.set(a.remote.Addr())
	time.Sleep(200 * time.Millisecond)
	requireNoNote(t, a.notes, "dropped-1")
}

// A message without a reply that reaches a node that no longer holds its shard is sent back,
// undelivered, and offered again: once the sender knows the new owner, it is delivered there,
// once.
func TestRemoteASendRefusedIsOfferedAgainToTheNewOwner(t *testing.T) {
	a, b, c := local(t), startPeer(t, "b"), startPeer(t, "c")
	a.place.set(b.addr) // stale: b gave the shards up to c
	b.own(t, c.addr)
	c.own(t, "self")
	returned := a.count(false, "test", "returned")
	a.router.Send("moved-1", &note{Text: "moved"})
	require.Eventually(t, func() bool { return a.count(false, "test", "returned") > returned }, 10*time.Second, 10*time.Millisecond)
	require.GreaterOrEqual(t, b.count(t, true, "test", "refused"), 1.0)
	a.place.set(c.addr) // a read the lease table again
	select {
	case n := <-c.notes:
		require.Equal(t, "moved-1 moved", n)
	case <-time.After(10 * time.Second):
		t.Fatal("the message did not reach the shard's new owner")
	}
	time.Sleep(1500 * time.Millisecond) // longer than the longest wait between tries
	require.Empty(t, c.notes, "delivered once")
	require.Empty(t, b.notes)
	require.InDelta(t, 0, b.count(t, false, "test", "sent"), 0, "b forwarded nothing on")
	require.InDelta(t, 1, c.count(t, true, "test", "delivered"), 0)
}

// nextNote waits for the note of actor id on a node's notes (others are passed over).
func nextNote(t *testing.T, notes chan echoed, id string) echoed {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case n := <-notes:
			if n.ID == id {
				return n
			}
		case <-deadline:
			t.Fatalf("no note for %s", id)
		}
	}
}

// requireNoNote checks that no note of actor id is on a node's notes now.
func requireNoNote(t *testing.T, notes chan echoed, id string) {
	t.Helper()
	for {
		select {
		case n := <-notes:
			require.NotEqual(t, id, n.ID, "a note for %s", id)
		default:
			return
		}
	}
}

func TestRemoteUnreachableOwner(t *testing.T) {
	a := local(t)

	// A port nobody listens on: the connection is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	// A listener that never answers (the kernel accepts, nobody speaks): only the time-out ends
	// the wait.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })

	for _, addr := range []string{closed, silent.Addr().String()} {
		a.place.set(addr)
		start := time.Now()
		_, err := ask[*echoed](t, a, "post-1", &echo{})
		require.ErrorIs(t, err, ErrUnavailable, addr)
		// Bounded by the forward time-out (with room for a loaded machine), far below the
		// ask's own 20 s deadline.
		require.Less(t, time.Since(start), 4*localTimeout+2*time.Second, addr)
	}
	a.remote.mu.Lock()
	defer a.remote.mu.Unlock()
	require.Empty(t, a.remote.pending, "nothing is left waiting")
}

func TestRemoteReplyAddressNamesTheNode(t *testing.T) {
	a := local(t)
	require.NotEqual(t, "nonhost", a.remote.Addr())
	// The Ask reply address was made again after remote started, so that an actor on another
	// node answering it reaches this node.
	var sender *actor.PID
	_, _ = actors.AskWithin[*echoed](context.Background(), time.Millisecond, actors.Via(a.sys, senderProbe{&sender}, "x"), &echo{})
	require.NotNil(t, sender)
	require.Equal(t, a.remote.Addr(), sender.Address)
}

// senderProbe is a router that records the reply address an Ask gives it.
type senderProbe struct{ got **actor.PID }

func (p senderProbe) Kind() actors.Kind                     { return actors.Kind{Name: "probe"} }
func (p senderProbe) Send(string, any)                      {}
func (p senderProbe) Request(_ string, _ any, s *actor.PID) { *p.got = s }
func (p senderProbe) To(string) actors.Requester            { return nil }

// A node that listens on one address and advertises another (a proxy in front of it here, a
// NAT or a listener on every interface in a deployment) is reached at the advertised one: it
// names itself so, takes the messages addressed to it there, and its answers come back. Cut the
// link and a request is answered ErrUnavailable; mend it and the next one gets through.
func TestRemoteAdvertisedAddress(t *testing.T) {
	a := local(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	listen := ln.Addr().String()
	require.NoError(t, ln.Close())
	proxy := clustertest.NewProxy(t, listen)
	b := startPeer(t, "b", listenEnv+"="+listen, advertiseEnv+"="+proxy.Addr())
	require.Equal(t, proxy.Addr(), b.addr, "the node names itself by its advertised address")
	a.place.set(b.addr)
	b.own(t, "self")

	r, err := ask[*echoed](t, a, "post-1", &echo{Text: "through the proxy"})
	require.NoError(t, err)
	require.Equal(t, &echoed{Node: "b", ID: "post-1", Text: "through the proxy"}, r)

	proxy.Cut()
	start := time.Now()
	_, err = ask[*echoed](t, a, "post-1", &echo{Text: "cut"})
	require.ErrorIs(t, err, ErrUnavailable)
	require.Less(t, time.Since(start), 4*localTimeout+2*time.Second)

	proxy.Mend()
	require.Eventually(t, func() bool {
		r, err := ask[*echoed](t, a, "post-1", &echo{Text: "mended"})
		return err == nil && r.Text == "mended"
	}, 20*time.Second, 100*time.Millisecond, "the link mended carries requests again")
	require.InDelta(t, 0, b.count(t, true, "test", "refused"), 0)
}

// An advertised address that is not HOST:PORT is refused at start.
func TestRemoteAdvertisedAddressMustBeHostPort(t *testing.T) {
	box, err := secret.NewBox(testKey)
	require.NoError(t, err)
	// Refused before remote starts: nothing listens, and gRPC's logger is left alone.
	_, err = StartRemote(actors.NewSystem(nil, nil), RemoteConfig{Addr: "127.0.0.1:0", Advertise: "nohost", Sealer: box})
	require.ErrorContains(t, err, "advertised node address")
}

package actors

// Notifier wakes a consumer when something it waits for was committed (for example a new event
// in the outbox). Notify never blocks; several notifications before the consumer wakes collapse
// into one, so the consumer must read everything pending each time it wakes.
type Notifier struct{ ch chan struct{} }

// NewNotifier makes a notifier.
func NewNotifier() *Notifier { return &Notifier{ch: make(chan struct{}, 1)} }

// Notify signals the consumer.
func (n *Notifier) Notify() {
	select {
	case n.ch <- struct{}{}:
	default:
	}
}

// C is the channel the consumer waits on.
func (n *Notifier) C() <-chan struct{} { return n.ch }

package campaign

import "sync"

// Hub wakes the followers of a campaign (its SSE streams) when a job of one of its posts records
// a step or one of its posts changes status. It carries no data: a follower woken reads what is
// new from the store, so a wake-up that finds nothing costs one read, and several wake-ups
// before the follower reads collapse into one.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// NewHub makes a hub.
func NewHub() *Hub { return &Hub{subs: map[string]map[chan struct{}]struct{}{}} }

// Subscribe follows a campaign; cancel stops following it.
func (h *Hub) Subscribe(id string) (wake <-chan struct{}, cancel func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	s := h.subs[id]
	if s == nil {
		s = map[chan struct{}]struct{}{}
		h.subs[id] = s
	}
	s[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		if s := h.subs[id]; s != nil {
			delete(s, ch)
			if len(s) == 0 {
				delete(h.subs, id)
			}
		}
		h.mu.Unlock()
	}
}

// Notify wakes a campaign's followers; it never blocks.
func (h *Hub) Notify(id string) {
	h.mu.Lock()
	for ch := range h.subs[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	h.mu.Unlock()
}

// Followers counts the campaigns followed and their followers.
func (h *Hub) Followers() (campaigns, followers int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		followers += len(s)
	}
	return len(h.subs), followers
}

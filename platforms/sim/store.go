package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// Store keeps a network's uploaded media and other per-network objects (containers, upload
// sessions, processing jobs) by id.
type Store struct {
	mu      sync.Mutex
	blobs   map[string]*Blob
	objects map[string]any
}

// Blob is an uploaded (or fetched) media file.
type Blob struct {
	ID          string
	ContentType string
	Data        []byte
	// Ready is false while asynchronous processing runs; Failed when it failed.
	Ready, Failed bool
	Owner         string
}

// SHA256 is the hex SHA-256 of the blob's bytes.
func (b *Blob) SHA256() string {
	sum := sha256.Sum256(b.Data)
	return hex.EncodeToString(sum[:])
}

func newStore() *Store { return &Store{blobs: map[string]*Blob{}, objects: map[string]any{}} }

func (s *Store) reset() {
	s.mu.Lock()
	s.blobs = map[string]*Blob{}
	s.objects = map[string]any{}
	s.mu.Unlock()
}

// PutBlob stores or replaces a blob.
func (s *Store) PutBlob(b *Blob) {
	s.mu.Lock()
	s.blobs[b.ID] = b
	s.mu.Unlock()
}

// Blob returns a blob by id.
func (s *Store) Blob(id string) (*Blob, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blobs[id]
	return b, ok
}

// Update runs fn on a blob under the store's lock.
func (s *Store) Update(id string, fn func(b *Blob)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blobs[id]
	if ok {
		fn(b)
	}
	return ok
}

// Put stores any object by id (containers, upload sessions, jobs).
func (s *Store) Put(id string, v any) {
	s.mu.Lock()
	s.objects[id] = v
	s.mu.Unlock()
}

// Get returns an object by id.
func (s *Store) Get(id string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.objects[id]
	return v, ok
}

// With runs fn with the store locked, for read-modify-write of objects.
func (s *Store) With(fn func(objects map[string]any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.objects)
}

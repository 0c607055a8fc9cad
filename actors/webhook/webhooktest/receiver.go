// Package webhooktest provides webhook receivers for tests: real HTTPS servers on loopback with a
// certificate from a test CA, whose PEM file Herald is given as its webhook CA file, and whose
// answers each test decides.
package webhooktest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/loopbackca"
)

// CA is a test certificate authority and a loopback server certificate it signed.
type CA = loopbackca.CA

// NewCA makes a CA in a temporary directory of t.
func NewCA(t testing.TB) *CA {
	t.Helper()
	ca, err := loopbackca.Make(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// Request is one request a receiver got.
type Request struct {
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	// ContentLength is what the request's header announced (-1: unknown); a body shorter than it
	// was cut off (the sender went away while it sent it).
	ContentLength int64
	// Status is what the receiver answered.
	Status int
}

// Answer decides a receiver's answer to its n-th request (from 1). It may write the response
// itself and return 0, or return a status (and headers to set) for the receiver to write.
type Answer func(n int, w http.ResponseWriter, r *http.Request) (status int)

// Always answers every request with status.
func Always(status int) Answer {
	return func(int, http.ResponseWriter, *http.Request) int { return status }
}

// Receiver is an HTTPS server on loopback that records every request.
type Receiver struct {
	URL string
	CA  *CA
	srv *httptest.Server

	mu     sync.Mutex
	answer Answer
	reqs   []Request
	ch     chan Request
}

// NewReceiver starts a receiver with a certificate from ca; its URL ends in /hook.
func NewReceiver(t testing.TB, ca *CA, answer Answer) *Receiver {
	t.Helper()
	r := &Receiver{CA: ca, answer: answer, ch: make(chan Request, 100000)}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.TLS = ca.TLSConfig()
	r.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	r.srv.EnableHTTP2 = true
	r.srv.StartTLS()
	r.URL = r.srv.URL + "/hook"
	t.Cleanup(r.Close)
	return r
}

// Close stops the receiver.
func (r *Receiver) Close() {
	r.srv.CloseClientConnections()
	r.srv.Close()
}

// SetAnswer changes how the receiver answers from now on.
func (r *Receiver) SetAnswer(a Answer) {
	r.mu.Lock()
	r.answer = a
	r.mu.Unlock()
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.reqs) + 1
	answer := r.answer
	r.reqs = append(r.reqs, Request{})
	r.mu.Unlock()
	status := answer(n, w, req)
	if status != 0 {
		w.WriteHeader(status)
	}
	rec := Request{Path: req.URL.Path, Query: req.URL.RawQuery, Header: req.Header.Clone(), Body: body, ContentLength: req.ContentLength, Status: status}
	r.mu.Lock()
	r.reqs[n-1] = rec
	r.mu.Unlock()
	r.ch <- rec
}

// Next waits for the next request (up to 30 s, then fails the test).
func (r *Receiver) Next(t testing.TB) Request {
	t.Helper()
	select {
	case req := <-r.ch:
		return req
	case <-time.After(30 * time.Second):
		t.Fatal("webhooktest: no request within 30s")
		return Request{}
	}
}

// Requests returns the requests answered so far.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Request
	for _, q := range r.reqs {
		if q.Header != nil {
			out = append(out, q)
		}
	}
	return out
}

// Count is the number of requests received so far (answered or not).
func (r *Receiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

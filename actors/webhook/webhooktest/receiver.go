// Package webhooktest provides webhook receivers for tests: real HTTPS servers on loopback with a
// certificate from a test CA, whose PEM file Herald is given as its webhook CA file, and whose
// answers each test decides.
package webhooktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// CA is a test certificate authority and a loopback server certificate it signed.
type CA struct {
	// File is the CA certificate's PEM file (for --webhook-ca-file).
	File string
	Pool *x509.CertPool
	// Cert is a server certificate for 127.0.0.1, ::1 and localhost.
	Cert tls.Certificate
}

// NewCA makes a CA in a temporary directory of t.
func NewCA(t testing.TB) *CA {
	t.Helper()
	ca, err := MakeCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// MakeCA makes a CA valid for two days and writes its certificate to dir/webhook-ca.pem.
func MakeCA(dir string) (*CA, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Herald test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "webhook-ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &CA{File: file, Pool: pool, Cert: tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}}, nil
}

// TLSConfig is a server configuration with the CA's loopback certificate.
func (ca *CA) TLSConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{ca.Cert}}
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

// Package loopbackca makes a throwaway certificate authority and a server certificate for the
// loopback addresses, so that a webhook receiver on 127.0.0.1 can speak HTTPS to Herald (given the
// CA's file as --webhook-ca-file). The tests' receivers (actors/webhook/webhooktest) and the bench
// suite's use it; it imports no testing package, so the shipped binary can link the bench.
package loopbackca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a throwaway certificate authority and a loopback server certificate it signed.
type CA struct {
	// File is the CA certificate's PEM file (for --webhook-ca-file).
	File string
	Pool *x509.CertPool
	// Cert is a server certificate for 127.0.0.1, ::1 and localhost.
	Cert tls.Certificate
}

// Make makes a CA valid for two days and writes its certificate to dir/webhook-ca.pem.
func Make(dir string) (*CA, error) {
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

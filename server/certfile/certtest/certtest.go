// Package certtest makes certificate authorities and certificates for
// tests: ECDSA P-256 keys, PEM files in a test's temporary directory.
package certtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// serial numbers certificates uniquely within a test binary.
var serial atomic.Int64

// CA is a test certificate authority.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, PEM encoded.
	PEM []byte
}

// NewCA makes a CA valid from an hour ago for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("ca key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("ca certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse ca certificate: %v", err)
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Pool returns a pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Leaf describes a server certificate.
type Leaf struct {
	// Hosts are the DNS names and IP addresses it is for (default
	// localhost and 127.0.0.1).
	Hosts []string
	// NotBefore and NotAfter bound its validity (default: from an hour ago
	// for a day).
	NotBefore, NotAfter time.Time
}

// Issue returns a certificate for leaf signed by the CA and its key, PEM
// encoded, and the certificate's serial number.
func (ca *CA) Issue(t testing.TB, leaf Leaf) (certPEM, keyPEM []byte, serialNumber *big.Int) {
	t.Helper()
	if len(leaf.Hosts) == 0 {
		leaf.Hosts = []string{"localhost", "127.0.0.1"}
	}
	if leaf.NotBefore.IsZero() {
		leaf.NotBefore = time.Now().Add(-time.Hour)
	}
	if leaf.NotAfter.IsZero() {
		leaf.NotAfter = time.Now().Add(24 * time.Hour)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("leaf key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)),
		Subject:      pkix.Name{CommonName: leaf.Hosts[0]},
		NotBefore:    leaf.NotBefore,
		NotAfter:     leaf.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range leaf.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("leaf certificate: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("leaf key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), tmpl.SerialNumber
}

// Files are a certificate's and its key's files.
type Files struct {
	Cert, Key string
}

// WriteLeaf issues a certificate and writes it and its key to
// <dir>/<name>.crt and <dir>/<name>.key, replacing them atomically (each
// file renamed into place) if they exist.
func (ca *CA) WriteLeaf(t testing.TB, dir, name string, leaf Leaf) (Files, *big.Int) {
	t.Helper()
	certPEM, keyPEM, sn := ca.Issue(t, leaf)
	f := Files{Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
	WriteFile(t, f.Key, keyPEM)
	WriteFile(t, f.Cert, certPEM)
	return f, sn
}

// WriteCA writes the CA certificate to <dir>/<name>.pem and returns the path.
func (ca *CA) WriteCA(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name+".pem")
	WriteFile(t, path, ca.PEM)
	return path
}

// WriteFile replaces path with data atomically.
func WriteFile(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatalf("write %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatalf("rename %s: %v", tmp, err)
	}
}

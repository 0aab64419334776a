package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServerAndTLSKeys(t *testing.T) {
	const ups = "upstreams: [{url: 'http://127.0.0.1:9001/mcp'}]\n"
	tests := []struct {
		name string
		yaml string
		want string // "" means valid
	}{
		{"defaults", "", ""},
		{"std plaintext", "server: std\n", ""},
		{"std with tls", "server: std\ntls: {cert_file: c.pem, key_file: k.pem}\n", ""},
		{"unknown server", "server: h2\n", `server: must be h1 or std, got "h2"`},
		{"tls without server", "tls: {cert_file: c.pem, key_file: k.pem}\n", ""},
		{"h1 with tls", "server: h1\ntls: {cert_file: c.pem, key_file: k.pem}\n", "server: h1 serves plaintext only; tls.cert_file and tls.key_file need server: std"},
		{"h1 with half a pair", "server: h1\ntls: {key_file: k.pem}\n", "server: h1 serves plaintext only"},
		{"half a pair without server", "tls: {key_file: k.pem}\n", "tls.cert_file: required with tls.key_file"},
		{"cert without key", "server: std\ntls: {cert_file: c.pem}\n", "tls.key_file: required with tls.cert_file"},
		{"key without cert", "server: std\ntls: {key_file: k.pem}\n", "tls.cert_file: required with tls.key_file"},
		{"admin tls", "admin: 127.0.0.1:9090\ntls: {admin: {cert_file: a.pem, key_file: ak.pem}}\n", ""},
		{"admin tls, h1 on the MCP listener", "admin: 127.0.0.1:9090\nserver: h1\ntls: {admin: {cert_file: a.pem, key_file: ak.pem}}\n", ""},
		{"admin tls without admin", "tls: {admin: {cert_file: a.pem, key_file: ak.pem}}\n", "tls.admin.cert_file: has no effect without admin"},
		{"admin half a pair", "admin: 127.0.0.1:9090\ntls: {admin: {cert_file: a.pem}}\n", "tls.admin.key_file: required with tls.admin.cert_file"},
		{"unknown tls key", "server: std\ntls: {cert: c.pem}\n", `line 3: tls: unknown key "cert" (did you mean "cert_file"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(ups + tt.yaml))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// TestServerResolved: server not set means std with TLS and h1 without,
// from the file or from the flags that fill a read file in before
// Validate; a server that is set stays as it is.
func TestServerResolved(t *testing.T) {
	const ups = "upstreams: [{url: 'http://127.0.0.1:9001/mcp'}]\n"
	tests := []struct {
		name, yaml string
		want       string
	}{
		{"no tls", "", ServerH1},
		{"tls", "tls: {cert_file: c.pem, key_file: k.pem}\n", ServerStd},
		{"admin tls only", "admin: 127.0.0.1:9090\ntls: {admin: {cert_file: a.pem, key_file: ak.pem}}\n", ServerH1},
		{"std without tls", "server: std\n", ServerStd},
		{"std with tls", "server: std\ntls: {cert_file: c.pem, key_file: k.pem}\n", ServerStd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(ups + tt.yaml))
			if err != nil || c.Server != tt.want {
				t.Errorf("Parse: server %q, %v; want %q", c.Server, err, tt.want)
			}
		})
	}
	// serve's order: the defaults, then flags, then Validate.
	c := Default()
	c.Upstreams = []Upstream{{URL: "http://127.0.0.1:9001/mcp"}}
	c.TLS.CertFile, c.TLS.KeyFile = "c.pem", "k.pem"
	if err := c.Validate(); err != nil || c.Server != ServerStd {
		t.Errorf("Default with tls set: server %q, %v; want std", c.Server, err)
	}
	c.Server = ServerH1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "server: h1 serves plaintext only") {
		t.Errorf("explicit h1 with tls: %v, want the h1 refusal", err)
	}
}

// writePair writes a fresh self-signed certificate and its key.
func writePair(t *testing.T, dir, name string) CertPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := CertPair{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	if err := os.WriteFile(p.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadCertificate(t *testing.T) {
	dir := t.TempDir()
	a, b := writePair(t, dir, "a"), writePair(t, dir, "b")
	tests := []struct {
		name string
		pair CertPair
		want string // "" means it loads
	}{
		{"a pair", a, ""},
		{"missing certificate", CertPair{CertFile: filepath.Join(dir, "none"), KeyFile: a.KeyFile}, "tls.cert_file: reading certificate"},
		{"missing key", CertPair{CertFile: a.CertFile, KeyFile: filepath.Join(dir, "none")}, "tls.key_file: reading private key"},
		{"another's key", CertPair{CertFile: a.CertFile, KeyFile: b.KeyFile}, "tls.cert_file, tls.key_file: loading the pair"},
		{"the key as certificate", CertPair{CertFile: a.KeyFile, KeyFile: a.KeyFile}, "tls.cert_file, tls.key_file: loading the pair"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, err := LoadCertificate("tls", tt.pair)
			if tt.want == "" {
				if err != nil || cert.Leaf == nil || cert.Leaf.Subject.CommonName != "a" {
					t.Fatalf("LoadCertificate = %v, %v", cert, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY-----") {
				t.Errorf("the error shows key material: %v", err)
			}
		})
	}
}

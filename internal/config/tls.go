package config

import (
	"crypto/tls"
	"fmt"
	"os"
)

// TLS configures TLS on the MCP listener and, apart, on the admin listener.
// The MCP listener's pair is inline: tls.cert_file and tls.key_file.
type TLS struct {
	CertPair `yaml:",inline"`
	// Admin is the admin listener's own pair (tls.admin.cert_file and
	// tls.admin.key_file); both empty means the admin listener serves
	// plaintext, whatever the MCP listener does.
	Admin CertPair `yaml:"admin"`
}

// CertPair names a PEM certificate chain and its private key.
type CertPair struct {
	// CertFile is the certificate chain, leaf first; "" with KeyFile ""
	// means plaintext.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the leaf's private key (PKCS #1, PKCS #8 or SEC 1 PEM).
	KeyFile string `yaml:"key_file"`
}

// Enabled reports whether the pair turns TLS on (either file named).
func (p CertPair) Enabled() bool { return p.CertFile != "" || p.KeyFile != "" }

// Server stacks, the values of the server key.
const (
	// ServerH1 is the gateway's own HTTP/1.1 server (internal/h1):
	// plaintext only.
	ServerH1 = "h1"
	// ServerStd is net/http's server: HTTP/1.1, and HTTP/2 (ALPN h2) when
	// TLS is on.
	ServerStd = "std"
)

// validateServer resolves an unset server and checks the server and tls
// keys. Whether the files can be read and make a pair is checked by
// LoadCertificate when the listener starts, and on every reload.
func (c *Config) validateServer(bad func(string, string, ...any)) {
	if c.Server == "" {
		// Not set in the file or by a flag: TLS needs std, and h1 is the
		// faster of the two in plaintext.
		c.Server = ServerH1
		if c.TLS.Enabled() {
			c.Server = ServerStd
		}
	}
	switch c.Server {
	case ServerH1, ServerStd:
	default:
		bad("server", "must be h1 or std, got %q", c.Server)
	}
	checkPair(bad, "tls", c.TLS.CertPair)
	checkPair(bad, "tls.admin", c.TLS.Admin)
	// h1 has no TLS. Refusing h1 when it was asked for, rather than
	// letting TLS switch the stack, keeps one meaning for each value of
	// server.
	if c.TLS.Enabled() && c.Server == ServerH1 {
		bad("server", "h1 serves plaintext only; tls.cert_file and tls.key_file need server: std")
	}
	if c.TLS.Admin.Enabled() && c.Admin == "" {
		bad("tls.admin.cert_file", "has no effect without admin (the admin listener's address)")
	}
}

// checkPair refuses a pair with one file named and not the other.
func checkPair(bad func(string, string, ...any), prefix string, p CertPair) {
	switch {
	case p.CertFile != "" && p.KeyFile == "":
		bad(prefix+".key_file", "required with %s.cert_file", prefix)
	case p.CertFile == "" && p.KeyFile != "":
		bad(prefix+".cert_file", "required with %s.key_file", prefix)
	}
}

// LoadCertificate reads a pair and checks that the key matches the
// certificate. prefix names the pair's keys in errors ("tls" or
// "tls.admin"); no error carries the key's bytes.
func LoadCertificate(prefix string, p CertPair) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(p.CertFile)
	if err != nil {
		return nil, fmt.Errorf("%s.cert_file: reading certificate: %w", prefix, err)
	}
	keyPEM, err := os.ReadFile(p.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%s.key_file: reading private key: %w", prefix, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s.cert_file, %s.key_file: loading the pair (%s, %s): %w",
			prefix, prefix, p.CertFile, p.KeyFile, err)
	}
	return &cert, nil
}

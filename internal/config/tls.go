package config

// TLS configures TLS on a listener.
type TLS struct {
	// CertFile and KeyFile are the PEM certificate chain and private key;
	// both empty means plaintext.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// validateServer checks the server and tls keys.
func (c *Config) validateServer(bad func(string, string, ...any)) {}

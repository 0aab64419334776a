package config

import (
	"strings"
	"time"
)

// Tools configures the gateway's watch of the replicas' tools
// (docs/GATEWAY.md, "Tools across the fleet").
type Tools struct {
	// Refresh is how often every replica's tools are listed again; 0s
	// turns the watch off, and tool-aware routing with it.
	Refresh Duration `yaml:"refresh"`
	// LockFile holds the accepted definitions (mcpfleet tools lock).
	LockFile string `yaml:"lock_file"`
	// OnUnlocked is warn (log and count) or quarantine (take the replica
	// out of new work) for a replica whose tools break the lock.
	OnUnlocked string `yaml:"on_unlocked"`
	// ProbeAuthorizationFile holds the Authorization header value the
	// listing sends, for servers that want a credential to list tools.
	ProbeAuthorizationFile string `yaml:"probe_authorization_file"`
}

func (c *Config) validateTools(bad func(string, string, ...any)) {
	t := c.Tools
	switch d := time.Duration(t.Refresh); {
	case d < 0 || (d > 0 && d < time.Second) || d > 24*time.Hour:
		bad("tools.refresh", "must be 0s (off) or between 1s and 24h, got %s", d)
	case d == 0 && (t.LockFile != "" || t.ProbeAuthorizationFile != ""):
		bad("tools.refresh", "0s turns the watch off: tools.lock_file and tools.probe_authorization_file need it on")
	}
	switch t.OnUnlocked {
	case "", "warn":
	case "quarantine":
		if t.LockFile == "" {
			bad("tools.on_unlocked", "quarantine needs tools.lock_file: without a lock, replicas that disagree are reported, never quarantined")
		}
	default:
		bad("tools.on_unlocked", "must be warn or quarantine, got %q", t.OnUnlocked)
	}
	for key, p := range map[string]string{"tools.lock_file": t.LockFile, "tools.probe_authorization_file": t.ProbeAuthorizationFile} {
		if strings.ContainsAny(p, "\x00\r\n") || strings.Contains(p, "://") {
			bad(key, "want the path of a file")
		}
	}
}

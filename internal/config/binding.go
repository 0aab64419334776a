package config

import "time"

// The values of Config.SessionBinding.
const (
	// SessionBindingIdentity binds a session, a 2024-11-05 endpoint and a
	// task to the caller that opened it: the verified issuer and subject
	// with auth, else the credential itself.
	SessionBindingIdentity = "identity"
	// SessionBindingNone lets anyone holding the ID use it.
	SessionBindingNone = "none"
)

// validateBinding checks session_binding and session_max_age.
func (c *Config) validateBinding(bad func(string, string, ...any)) {
	if c.SessionBinding != SessionBindingIdentity && c.SessionBinding != SessionBindingNone {
		bad("session_binding", "must be identity or none, got %q", c.SessionBinding)
	}
	nonNeg(bad, "session_max_age", time.Duration(c.SessionMaxAge))
	if c.SessionBinding == SessionBindingIdentity && c.TaskStore == "redis" && c.SecretFile == "" {
		// A task's opener is an HMAC under a key derived from the routing
		// salt: gateways with salts of their own would each refuse the
		// tasks the others recorded.
		bad("task_store", "redis with session_binding identity needs secret_file, so that every gateway names a task's opener alike (mcpfleet secret makes one)")
	}
}

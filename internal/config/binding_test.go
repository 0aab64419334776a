package config

import (
	"strings"
	"testing"
	"time"
)

// TestBindingKeys: session_binding and session_max_age default to
// identity and 24h, take their other values, and refuse what is not one;
// a task registry in Redis with binding on needs the secret file.
func TestBindingKeys(t *testing.T) {
	base := "upstreams:\n  - url: http://127.0.0.1:1/mcp\n"
	c, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if c.SessionBinding != SessionBindingIdentity || time.Duration(c.SessionMaxAge) != 24*time.Hour {
		t.Errorf("defaults: %q, %s", c.SessionBinding, c.SessionMaxAge)
	}
	c, err = Parse([]byte(base + "session_binding: none\nsession_max_age: 0s\n"))
	if err != nil || c.SessionBinding != SessionBindingNone || c.SessionMaxAge != 0 {
		t.Errorf("none and 0s: %q, %s, %v", c.SessionBinding, c.SessionMaxAge, err)
	}
	redis := "redis_url: redis://127.0.0.1:6379/0\ntask_store: redis\n"
	for _, tt := range []struct{ yaml, key string }{
		{"session_binding: token\n", "session_binding"},
		{"session_binding: \"\"\n", "session_binding"},
		{"session_max_age: -1s\n", "session_max_age"},
		{redis, "task_store"},
	} {
		_, err := Parse([]byte(base + tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.key+":") {
			t.Errorf("%q: %v, want an error naming %s", tt.yaml, err, tt.key)
		}
	}
	for _, ok := range []string{redis + "secret_file: s.yaml\n", redis + "session_binding: none\n"} {
		if _, err := Parse([]byte(base + ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

package config

import (
	"strings"
	"testing"
	"time"
)

func TestStdioUpstream(t *testing.T) {
	c, err := Parse([]byte(`
upstreams:
  - name: memory
    stdio:
      command: [npx, -y, "@modelcontextprotocol/server-memory"]
      env: {MEMORY_FILE_PATH: "/var/lib/mem/{child}.jsonl"}
      processes: 3
      max_line_bytes: 1MiB
      restart_backoff: 500ms..10s
  - url: http://127.0.0.1:9001/mcp
`))
	if err != nil {
		t.Fatal(err)
	}
	u := c.Upstreams[0]
	s := u.Stdio.WithDefaults()
	if !u.IsStdio() || c.Upstreams[1].IsStdio() || u.StdioName() != "memory" || s.Processes != 3 || s.MaxLineBytes != 1<<20 ||
		s.MaxSessions != 64 || s.WarmChildren() != 1 || s.StderrLines != 200 || time.Duration(s.IdleTimeout) != 10*time.Minute {
		t.Errorf("decoded %+v, defaults %+v", u, s)
	}
	lo, hi, err := ParseBackoff(s.RestartBackoff)
	if err != nil || lo != 500*time.Millisecond || hi != 10*time.Second {
		t.Errorf("backoff %v..%v, %v", lo, hi, err)
	}
}

func TestStdioPerSession(t *testing.T) {
	c, err := Parse([]byte("upstreams: [{name: mem, stdio: {command: [srv], per_session: true, max_sessions: 8, warm: 2, idle_timeout: 30s}}]"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Upstreams[0].Stdio.WithDefaults()
	if !s.PerSession || s.MaxSessions != 8 || s.WarmChildren() != 2 || time.Duration(s.IdleTimeout) != 30*time.Second || s.Processes != 2 {
		t.Errorf("decoded %+v", s)
	}
}

// TestStdioWarm: warm unset keeps one child ready; warm: 0 keeps none (each
// session's child starts at its initialize), where it once meant 1.
func TestStdioWarm(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want int
	}{
		{"upstreams: [{name: mem, stdio: {command: [srv], per_session: true}}]", 1},
		{"upstreams: [{name: mem, stdio: {command: [srv], per_session: true, warm: 0}}]", 0},
		{"upstreams: [{name: mem, stdio: {command: [srv], per_session: true, warm: 3}}]", 3},
	} {
		c, err := Parse([]byte(tt.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		if got := c.Upstreams[0].Stdio.WithDefaults().WarmChildren(); got != tt.want {
			t.Errorf("%s: %d warm children, want %d", tt.yaml, got, tt.want)
		}
	}
}

func TestStdioUpstreamErrors(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"upstreams: [{url: 'http://a/mcp', stdio: {command: [x]}}]", "upstreams[0].url: an upstream is either stdio or a URL"},
		{"upstreams: [{stdio: {command: []}}]", "upstreams[0].stdio.command: want the server's command as a list"},
		{"upstreams: [{name: My_Server, stdio: {command: [x]}}]", "upstreams[0].name: a stdio upstream's name names its children"},
		{"upstreams: [{stdio: {command: [x], processes: -1}}]", "upstreams[0].stdio.processes: want 0"},
		{"upstreams: [{stdio: {command: [x], restart_backoff: 30s..1s}}]", "upstreams[0].stdio.restart_backoff: want min..max"},
		{"upstreams: [{stdio: {command: [x], max_line_bytes: 10}}]", "upstreams[0].stdio.max_line_bytes: want 4KiB to 1GiB"},
		{"upstreams: [{stdio: {command: [x], env: {A: 1}, env_files: {A: /f}}}]", "upstreams[0].stdio.env_files: A is set by env too"},
		{"upstreams: [{stdio: {command: [x]}}, {stdio: {command: [y]}}]", `upstreams[1].name: duplicate replica name "stdio"`},
		{"upstreams: [{stdio: {command: [x], procesess: 2}}]", "procesess"},
		{"upstreams: [{stdio: {command: [x], max_sessions: 8}}]", "upstreams[0].stdio.max_sessions: applies to one child per session only"},
		{"upstreams: [{stdio: {command: [x], idle_timeout: 1m}}]", "upstreams[0].stdio.idle_timeout: applies to one child per session only"},
		{"upstreams: [{stdio: {command: [x], warm: 0}}]", "upstreams[0].stdio.warm: applies to one child per session only"},
		{"upstreams: [{stdio: {command: [x], per_session: true, warm: -1}}]", "upstreams[0].stdio.warm: want 0"},
		{"upstreams: [{stdio: {command: [x], per_session: true, max_sessions: 2, warm: 3}}]", "upstreams[0].stdio.warm: want at most max_sessions (2) children kept warm, got 3"},
		{"upstreams: [{stdio: {command: [x], per_session: true, max_sessions: -1}}]", "upstreams[0].stdio.max_sessions: want 0"},
		{"upstreams: [{stdio: {command: [x], per_session: true, idle_timeout: 10ms}}]", "upstreams[0].stdio.idle_timeout: want at least 100ms"},
	} {
		_, err := Parse([]byte(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant %q", tt.yaml, err, tt.want)
		}
	}
}

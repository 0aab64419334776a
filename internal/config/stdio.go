package config

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Stdio configures an upstream that is a stdio MCP server the gateway
// runs itself, as child processes (docs/GATEWAY.md, "stdio servers"). An
// upstream is either stdio (command set) or HTTP (url set).
type Stdio struct {
	// Command is the argv of the server, never run through a shell; nil
	// means the upstream is not a stdio one.
	Command []string `yaml:"command"`
	// Env is added to the child's environment, which is otherwise PATH and
	// HOME alone; {child} in a value is the child's name.
	Env map[string]string `yaml:"env"`
	// EnvFiles sets each variable to the content of its file (a secret
	// kept out of this file); {child} in a path is the child's name.
	EnvFiles map[string]string `yaml:"env_files"`
	// Dir is the children's working directory; {child} is the child's
	// name; "" means the gateway's.
	Dir string `yaml:"dir"`
	// Processes is how many pooled children run; 0 means 2.
	Processes int `yaml:"processes"`
	// PerSession gives each 2025-11-25 session a child of its own.
	PerSession bool `yaml:"per_session"`
	// MaxSessions bounds the children of per_session; 0 means 64.
	MaxSessions int `yaml:"max_sessions"`
	// Warm is how many per_session children wait started; nil means 1,
	// 0 none (each session's child starts at its initialize).
	Warm *int `yaml:"warm"`
	// IdleTimeout ends a per_session child after this long without a
	// request; 0 means 10m.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxLineBytes bounds a message a child writes; 0 means 16MiB.
	MaxLineBytes Size `yaml:"max_line_bytes"`
	// StderrLines is how many of a child's last stderr lines are kept; 0
	// means 200.
	StderrLines int `yaml:"stderr_lines"`
	// RestartBackoff is the first and the longest delay before a child
	// that exited starts again, as min..max; "" means 1s..30s.
	RestartBackoff string `yaml:"restart_backoff"`
	// NativeStateless gives each pooled child a stateless twin, a second
	// process of the command started at the child's first 2026-07-28
	// request, that serves them in that era itself when the server speaks
	// it; false translates them on the child. nil means true.
	NativeStateless *bool `yaml:"native_stateless"`
}

// WarmChildren is how many per_session children wait started (warm, 1
// unless set).
func (s Stdio) WarmChildren() int {
	if s.Warm == nil {
		return DefaultStdioWarm
	}
	return *s.Warm
}

// Native reports whether the upstream's children get stateless twins
// (native_stateless, true unless set false).
func (s Stdio) Native() bool { return s.NativeStateless == nil || *s.NativeStateless }

// Stdio's defaults.
const (
	DefaultStdioProcesses    = 2
	DefaultStdioMaxSessions  = 64
	DefaultStdioWarm         = 1
	DefaultStdioIdleTimeout  = 10 * time.Minute
	DefaultStdioMaxLineBytes = 16 << 20
	DefaultStdioStderrLines  = 200
	DefaultStdioBackoff      = "1s..30s"
)

// IsStdio reports whether the upstream is a stdio server.
func (u *Upstream) IsStdio() bool { return u.Stdio.Command != nil }

// WithDefaults returns s with each zero field set to its default.
func (s Stdio) WithDefaults() Stdio {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&s.Processes, DefaultStdioProcesses)
	def(&s.MaxSessions, DefaultStdioMaxSessions)
	def(&s.StderrLines, DefaultStdioStderrLines)
	if s.IdleTimeout == 0 {
		s.IdleTimeout = Duration(DefaultStdioIdleTimeout)
	}
	if s.MaxLineBytes == 0 {
		s.MaxLineBytes = DefaultStdioMaxLineBytes
	}
	if s.RestartBackoff == "" {
		s.RestartBackoff = DefaultStdioBackoff
	}
	return s
}

// ParseBackoff reads min..max, two durations, min at least 10ms and not
// over max.
func ParseBackoff(s string) (lo, hi time.Duration, err error) {
	a, b, ok := strings.Cut(s, "..")
	if ok {
		if lo, err = time.ParseDuration(a); err == nil {
			hi, err = time.ParseDuration(b)
		}
	}
	if !ok || err != nil || lo < 10*time.Millisecond || hi < lo {
		return 0, 0, fmt.Errorf("want min..max such as 1s..30s (min at least 10ms, max not under min), got %q", s)
	}
	return lo, hi, nil
}

// childName is what a child's name may be: a DNS label, since it is the
// host of the child's replica URL.
var childName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?$`)

// StdioName is the name of a stdio upstream: its name, or "stdio"; its
// children are name-1, name-2, ...
func (u *Upstream) StdioName() string {
	if u.Name != "" {
		return u.Name
	}
	return "stdio"
}

// validateStdio checks the stdio upstream u at key.
func validateStdio(key string, u *Upstream, bad func(string, string, ...any)) {
	s := u.Stdio
	if u.URL != "" || u.SSEURL != "" {
		bad(key+".url", "an upstream is either stdio or a URL, not both")
	}
	if len(s.Command) == 0 || s.Command[0] == "" {
		bad(key+".stdio.command", "want the server's command as a list, such as [npx, -y, \"@modelcontextprotocol/server-memory\"]")
	}
	if !childName.MatchString(u.StdioName()) {
		bad(key+".name", "a stdio upstream's name names its children (name-1, ...): want lower-case letters, digits and -, got %q", u.Name)
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			bad(key+".stdio.env", "%q is not an environment variable name", k)
		}
	}
	for k := range s.EnvFiles {
		if _, dup := s.Env[k]; dup {
			bad(key+".stdio.env_files", "%s is set by env too", k)
		}
	}
	validatePerSession(key, s, bad)
	nonNeg := map[string]int{"processes": s.Processes, "max_sessions": s.MaxSessions, "warm": s.WarmChildren(), "stderr_lines": s.StderrLines}
	for k, v := range nonNeg {
		if v < 0 || v > 10000 {
			bad(key+".stdio."+k, "want 0 (the default) to 10000, got %d", v)
		}
	}
	if s.IdleTimeout < 0 {
		bad(key+".stdio.idle_timeout", "must not be negative, got %s", s.IdleTimeout)
	}
	if s.MaxLineBytes != 0 && (s.MaxLineBytes < 4<<10 || s.MaxLineBytes > 1<<30) {
		bad(key+".stdio.max_line_bytes", "want 4KiB to 1GiB, got %d bytes", s.MaxLineBytes)
	}
	if s.RestartBackoff != "" {
		if _, _, err := ParseBackoff(s.RestartBackoff); err != nil {
			bad(key+".stdio.restart_backoff", "%v", err)
		}
	}
}

// validatePerSession checks the keys of one child per session: set
// without per_session they would do nothing, which is said rather than
// ignored.
func validatePerSession(key string, s Stdio, bad func(string, string, ...any)) {
	if !s.PerSession {
		for k, set := range map[string]bool{"max_sessions": s.MaxSessions != 0, "warm": s.Warm != nil, "idle_timeout": s.IdleTimeout != 0} {
			if set {
				bad(key+".stdio."+k, "applies to one child per session only: set per_session: true, or remove it")
			}
		}
		return
	}
	d := s.WithDefaults()
	if d.WarmChildren() > d.MaxSessions {
		bad(key+".stdio.warm", "want at most max_sessions (%d) children kept warm, got %d", d.MaxSessions, d.WarmChildren())
	}
	if s.IdleTimeout != 0 && s.IdleTimeout < Duration(100*time.Millisecond) {
		bad(key+".stdio.idle_timeout", "want at least 100ms (or 0 for the default, 10m), got %s", s.IdleTimeout)
	}
}

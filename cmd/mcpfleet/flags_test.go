package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
)

// flagEntries splits a command's help into one entry per flag: the line
// naming it ("  --name placeholder") and the lines of its text under it.
func flagEntries(help string) map[string]string {
	entries := map[string]string{}
	var name string
	for _, line := range strings.Split(help, "\n") {
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			name, _, _ = strings.Cut(strings.TrimPrefix(rest, "-"), " ")
			entries[name] = line
			continue
		}
		if name != "" && strings.HasPrefix(line, "      ") {
			entries[name] += "\n" + line
			continue
		}
		name = ""
	}
	return entries
}

// TestFlagUsageDefaults runs every command's -h: each flag's default is
// printed once at most, and no sentinel that stands for "not given" (a
// negative duration) is printed as one.
func TestFlagUsageDefaults(t *testing.T) {
	tests := []struct {
		args []string
	}{
		{args: []string{"serve"}},
		{args: []string{"load"}},
		{args: []string{"probe"}},
		{args: []string{"sim"}},
		{args: []string{"chaos"}},
		{args: []string{"testserver"}},
		{args: []string{"lbconfig"}},
		{args: []string{"fleet"}},
		{args: []string{"health"}},
		{args: []string{"lab"}},
		{args: []string{"demo"}},
		{args: []string{"tools", "lock"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, _ := runCmd(t, context.Background(), append(tt.args, "-h")...)
			entries := flagEntries(stdout)
			if code != 0 || len(entries) == 0 {
				t.Fatalf("-h: exit %d, no flags in:\n%s", code, stdout)
			}
			for name, e := range entries {
				if n := strings.Count(e, "(default"); n > 1 {
					t.Errorf("-%s prints its default %d times:\n%s", name, n, e)
				}
				if strings.Contains(e, "(default -") || strings.Contains(e, "-1ns") {
					t.Errorf("-%s prints a sentinel as its default:\n%s", name, e)
				}
			}
		})
	}
}

// TestServeFlagUsage: serve's help states config.Default's values, each
// once, and the server flag says how it is chosen when left out.
func TestServeFlagUsage(t *testing.T) {
	_, stdout, _ := runCmd(t, context.Background(), "serve", "-h")
	entries := flagEntries(stdout)
	def := config.Default()
	for name, want := range map[string]string{
		"listen":                "(default " + def.Listen + ")",
		"balance":               "(default " + def.Balance + ")",
		"log-level":             "(default " + def.LogLevel + ")",
		"keepalive":             "(default " + time.Duration(def.KeepAlive).String() + ")",
		"health-check-interval": "(default " + time.Duration(def.HealthCheck.Interval).String() + ")",
		"grace":                 "(default " + time.Duration(def.Grace).String() + ")",
		"server":                "(default std with TLS, else h1)",
	} {
		if !strings.Contains(entries[name], want) {
			t.Errorf("-%s: %q, want it to say %q", name, entries[name], want)
		}
	}
	// 0s, drain_delay's default, is the duration flag's zero: not printed.
	if e := entries["drain-delay"]; e == "" || strings.Contains(e, "(default") {
		t.Errorf("-drain-delay: %q, want its text without a default", e)
	}
}

// TestServeFlagsGivenOnly: a duration flag applies when given, whatever its
// value, so a negative one is refused rather than taken for "not given";
// left out, the file's key stands (TestUsageErrors: a file's keepalive:
// -5s is refused).
func TestServeFlagsGivenOnly(t *testing.T) {
	for flag, key := range map[string]string{
		"--keepalive":             "keepalive",
		"--health-check-interval": "health_check.interval",
		"--drain-delay":           "drain_delay",
		"--grace":                 "grace",
	} {
		code, _, stderr := runCmd(t, context.Background(), "serve", "--upstream", "http://127.0.0.1:1/mcp", flag, "-1ns")
		if code != 2 || !strings.Contains(stderr, key+":") {
			t.Errorf("%s -1ns: exit %d, stderr %q; want exit 2 naming %s", flag, code, stderr, key)
		}
	}
}

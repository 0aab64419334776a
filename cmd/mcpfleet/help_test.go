package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"
)

// goTypeNames are words of Go's, not of a user's: no help or error may
// show one.
var goTypeNames = []string{"config.Config", "[]string", "[]config", "time.Duration", "map[", "struct", "yaml:", "float64", "int64", "!!seq", "!!str", "!!map", "Usage of"}

// helpNames are the flag sets whose help is shown: every command, and
// the subcommands of tools.
func helpNames() [][]string {
	var names [][]string
	for _, c := range commands {
		names = append(names, []string{c.name})
	}
	return append(names, []string{"tools", "lock"})
}

// helpFlagSet returns the flag set of the command (and subcommand) in
// args, as its -h hands it over.
func helpFlagSet(t *testing.T, args []string) *flag.FlagSet {
	t.Helper()
	cmd := findCommand(args[0])
	if cmd == nil {
		t.Fatalf("no command %q", args[0])
	}
	err := cmd.run(context.Background(), append(args[1:len(args):len(args)], "-h"), io.Discard, io.Discard)
	var h helpRequest
	if !errors.As(err, &h) {
		t.Fatalf("%s -h returned %v, want a help request", strings.Join(args, " "), err)
	}
	return h.fs
}

// TestHelpOnStdout: help, help CMD, CMD -h and CMD --help print the same
// help on stdout and exit 0, with a purpose, usage, examples and no Go
// type name; stderr stays empty.
func TestHelpOnStdout(t *testing.T) {
	code, stdout, stderr := runCmd(t, context.Background(), "help")
	if code != 0 || stderr != "" || !strings.Contains(stdout, "\n  serve ") {
		t.Errorf("help: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, args := range helpNames() {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			code, want, stderr := runCmd(t, context.Background(), append([]string{"help"}, args...)...)
			if code != 0 || stderr != "" {
				t.Fatalf("help %s: exit %d, stderr %q", name, code, stderr)
			}
			for _, flagName := range []string{"-h", "--help"} {
				code, got, stderr := runCmd(t, context.Background(), append(args[:len(args):len(args)], flagName)...)
				if code != 0 || stderr != "" || got != want {
					t.Errorf("%s %s: exit %d, stderr %q, stdout differs from help %s: %v", name, flagName, code, stderr, name, got != want)
				}
			}
			if !strings.HasPrefix(want, "mcpfleet "+name+": ") || !strings.Contains(want, "\nusage: mcpfleet "+name) {
				t.Errorf("help %s lacks its purpose line or usage:\n%s", name, want)
			}
			if _, ok := helpTopics[name]; ok && !strings.Contains(want, "\nexamples:\n  mcpfleet ") && !strings.Contains(want, "\nexamples:\n  mkdir") {
				t.Errorf("help %s shows no examples:\n%s", name, want)
			}
			for _, word := range goTypeNames {
				if strings.Contains(want, word) {
					t.Errorf("help %s shows %q:\n%s", name, word, want)
				}
			}
		})
	}
}

// TestEveryFlagHasATopic: every flag of every command is in one of its
// help's topics, and every flag a topic names exists, so that a flag
// added without a topic (or renamed) fails here by name.
func TestEveryFlagHasATopic(t *testing.T) {
	for _, args := range helpNames() {
		name := strings.Join(args, " ")
		fs := helpFlagSet(t, args)
		topic := map[string]string{}
		for _, g := range helpTopics[name].groups {
			for _, f := range g.flags {
				if prev, ok := topic[f]; ok {
					t.Errorf("%s: flag --%s is in two topics, %q and %q", name, f, prev, g.topic)
				}
				topic[f] = g.topic
				if fs.Lookup(f) == nil {
					t.Errorf("%s: topic %q names --%s, which the command does not have", name, g.topic, f)
				}
			}
		}
		fs.VisitAll(func(f *flag.Flag) {
			if _, ok := topic[f.Name]; !ok {
				t.Errorf("%s: flag --%s is in no topic: add it to a group of helpTopics[%q] in helptext.go", name, f.Name, name)
			}
		})
	}
}

// TestPlaceholdersAreNotValues: the word after a flag's name says what
// it takes, never one value it may take (chaos --era once read "--era
// 2025 ... (default 2026)": its text's back-quoted 2025 was taken for the
// placeholder).
func TestPlaceholdersAreNotValues(t *testing.T) {
	for _, args := range helpNames() {
		fs := helpFlagSet(t, args)
		fs.VisitAll(func(f *flag.Flag) {
			p := placeholder(f)
			if _, err := strconv.ParseFloat(p, 64); err == nil || (p != "" && p == f.DefValue) {
				t.Errorf("%s --%s: placeholder %q is a value (default %q)", strings.Join(args, " "), f.Name, p, f.DefValue)
			}
		})
	}
	_, stdout, _ := runCmd(t, context.Background(), "chaos", "-h")
	if e := flagEntries(stdout)["era"]; !strings.Contains(e, "--era era") || !strings.Contains(e, "(default 2026)") {
		t.Errorf("chaos --era: %q", e)
	}
}

// TestUsageErrorsHint: a bad flag, value or command goes to stderr with
// exit 2, in words, and says where the help is; stdout stays empty.
func TestUsageErrorsHint(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--bogus"}, []string{"unknown flag --bogus", "mcpfleet help serve"}},
		{[]string{"demo", "--replicas", "many"}, []string{`--replicas "many": want a whole number`, "mcpfleet help demo"}},
		{[]string{"serve", "--grace", "5"}, []string{`--grace "5": want a duration such as 500ms, 30s or 2m`}},
		{[]string{"sim", "--traffic", "soon"}, []string{`--traffic "soon": want seconds (30) or a duration`}},
		{[]string{"probe", "--url"}, []string{"--url: needs a value"}},
		{[]string{"help", "frobnicate"}, []string{`unknown command "frobnicate"`, "mcpfleet help"}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`, "mcpfleet help"}},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCmd(t, context.Background(), tt.args...)
		if code != 2 || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q; want exit 2 and nothing on stdout", tt.args, code, stdout)
		}
		for _, w := range tt.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", tt.args, stderr, w)
			}
		}
		if strings.Count(stderr, "\n") > 2 {
			t.Errorf("%v: stderr is more than a short hint:\n%s", tt.args, stderr)
		}
	}
}

package main

import (
	"bytes"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// TestEveryScenarioFieldHasAFlag checks that each JSON key of sim.Scenario
// has its flag: the key without a trailing "_s", dashes for underscores.
func TestEveryScenarioFieldHasAFlag(t *testing.T) {
	s := sim.Default()
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	defineScenarioFlags(fs, &s)
	typ := reflect.TypeFor[sim.Scenario]()
	for i := range typ.NumField() {
		key, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		name := strings.ReplaceAll(strings.TrimSuffix(key, "_s"), "_", "-")
		if fs.Lookup(name) == nil {
			t.Errorf("scenario field %s (%q) has no flag --%s", typ.Field(i).Name, key, name)
		}
	}
}

func TestSimLimitFlags(t *testing.T) {
	var out bytes.Buffer
	args := []string{"--mission", "7", "--limit-store", "shared", "--gateways", "2", "--traffic", "60"}
	if err := runSim(t.Context(), args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mission 7: The runaway agent", "2 gateways", "(shared)", "runaway admitted per s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := runSim(t.Context(), []string{"--limit-store", "redis"}, io.Discard, io.Discard); err == nil {
		t.Error("--limit-store redis was accepted")
	}
}

// TestSimNewToolFlags plays mission 8 from the command line: the broken
// fleet (round-robin) fails calls with unknown tool, mcpfleet's tool-aware
// routing earns three stars, and the watcher turned off (--tools-refresh 0)
// loses them again; the overloaded replica is mission 9.
func TestSimNewToolFlags(t *testing.T) {
	row := func(out, name string) string {
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, name) {
				return strings.TrimSpace(strings.TrimPrefix(line, name))
			}
		}
		t.Fatalf("no row %q in:\n%s", name, out)
		return ""
	}
	tests := []struct {
		args           []string
		stars, unknown string
	}{
		{[]string{"--mission", "8"}, "☆☆☆ (0/3)", ""},
		{[]string{"--mission", "8", "--routing", "mcpfleet"}, "★★★ (3/3)", "0"},
		{[]string{"--mission", "8", "--routing", "mcpfleet", "--tools-refresh", "0"}, "☆☆☆ (0/3)", ""},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		if err := runSim(t.Context(), tt.args, &out, io.Discard); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		s := out.String()
		if !strings.Contains(s, "mission 8: The half-finished deploy") || !strings.Contains(s, "stars: "+tt.stars) || !strings.Contains(s, "new tool 30% of calls") {
			t.Errorf("%v: want mission 8 with %s:\n%s", tt.args, tt.stars, s)
		}
		got := row(s, "unknown tool (failed)")
		if tt.unknown != "" && got != tt.unknown || tt.unknown == "" && got == "0" {
			t.Errorf("%v: unknown tool %s, want %q (non-zero when empty)", tt.args, got, tt.unknown)
		}
	}
	var out bytes.Buffer
	if err := runSim(t.Context(), []string{"--mission", "9", "--traffic", "60"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "mission 9: The overloaded replica") {
		t.Errorf("mission 9 is not the overloaded replica:\n%s", out.String())
	}
	for _, args := range [][]string{{"--new-tool-share", "1.5"}, {"--tools-refresh", "-1"}, {"--mission", "10"}} {
		if err := runSim(t.Context(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("%v was accepted", args)
		}
	}
}

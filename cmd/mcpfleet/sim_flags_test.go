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

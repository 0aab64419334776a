package load

import (
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

func TestOptionsRefuse(t *testing.T) {
	ok := func() Options { return Options{Scenario: sim.Default(), URL: "http://127.0.0.1:8080/mcp"} }
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"not loopback", func(o *Options) { o.URL = "http://10.0.0.1:8080/mcp" }, "loopback only"},
		{"a name", func(o *Options) { o.URL = "http://example.com/mcp" }, "loopback only"},
		{"no scheme", func(o *Options) { o.URL = "127.0.0.1:8080" }, "want http"},
		{"both", func(o *Options) { o.Fleet, o.Binary = true, "/bin/true" }, "give one"},
		{"neither", func(o *Options) { o.URL = "" }, "give one"},
		{"fleet without binary", func(o *Options) { o.URL, o.Fleet = "", true }, "binary"},
		{"slow", func(o *Options) { o.Speed = 0.5 }, "speed"},
		{"fast", func(o *Options) { o.Speed = 1000 }, "speed"},
		{"long", func(o *Options) { o.Speed = 1; o.Scenario.TrafficSeconds = 3600 }, "over the limit"},
		{"many calls", func(o *Options) { o.Scenario.ArrivalRate = 1000 }, "over the limit"},
		{"bad scenario", func(o *Options) { o.Scenario.Replicas = 0 }, "replicas"},
		{"burn", func(o *Options) { o.Burn = 20_000 }, "burn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok()
			tc.edit(&o)
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error naming %q", err, tc.want)
			}
		})
	}
	for _, u := range []string{"http://127.0.0.1:8080/mcp", "http://[::1]:8080/mcp", "http://localhost:1/mcp", "https://127.9.9.9/x"} {
		o := ok()
		o.URL = u
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%s) = %v, want nil", u, err)
		}
	}
}

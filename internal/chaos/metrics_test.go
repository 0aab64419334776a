package chaos

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseText reads a gateway's /metrics as the text format writes it:
// labels with escapes, histogram lines, a timestamp, comments.
func TestParseText(t *testing.T) {
	in := `# HELP mcpfleet_retries_total Requests moved to another replica.
# TYPE mcpfleet_retries_total counter
mcpfleet_retries_total{reason="not_delivered"} 3
mcpfleet_retries_total{reason="draining"} 2 1700000000000
mcpfleet_requests_total{era="2026-07-28",method="tools/call",outcome="ok",replica="a \"b\"\\c"} 7
mcpfleet_request_duration_seconds_bucket{era="2025-11-25",method="tools/call",le="+Inf"} 4
mcpfleet_open_streams 1.5e+01
`
	ss, err := parseText(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{
		"retries":        ss.sum("mcpfleet_retries_total", nil),
		"not_delivered":  ss.sum("mcpfleet_retries_total", map[string]string{"reason": "not_delivered"}),
		"calls":          ss.sum("mcpfleet_requests_total", map[string]string{"method": "tools/call"}),
		"escaped":        ss.sum("mcpfleet_requests_total", map[string]string{"replica": `a "b"\c`}),
		"buckets":        ss.sum("mcpfleet_request_duration_seconds_bucket", map[string]string{"le": "+Inf"}),
		"streams":        ss.sum("mcpfleet_open_streams", nil),
		"unknown metric": ss.sum("mcpfleet_nothing_total", nil),
	}
	want := map[string]float64{"retries": 5, "not_delivered": 3, "calls": 7, "escaped": 7, "buckets": 4, "streams": 15, "unknown metric": 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sums (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"nameonly", `m{l="v} 1`, `m{l=v} 1`, "m one", "m 1 2 3"} {
		if _, err := parseText(strings.NewReader(bad)); err == nil {
			t.Errorf("parseText(%q): no error", bad)
		}
	}
}

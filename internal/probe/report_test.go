package probe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fixedResult is a run of four identities, two requests each, through a
// balancer that split one identity and failed one request.
func fixedResult() *Result {
	return &Result{
		URL: "http://127.0.0.1:8080/mcp", Identities: 4, Requests: 2, Concurrency: 8,
		TokenPrefix: DefaultTokenPrefix,
		Started:     time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC),
		Elapsed:     1500 * time.Millisecond,
		Done:        8,
		Observations: []Observation{
			obs(0, "r1", "r1"), obs(0, "r2", "r2"), obs(0, "r1", "r3"), obs(1, "r3"),
		},
		Failures: []Failure{{Kind: "http 502", Count: 1, Example: "http status 502 Bad Gateway"}},
	}
}

func TestReportText(t *testing.T) {
	moved := Movement{Compared: 4, Moved: 1, Share: 0.25, From: map[string]int{"r2": 1}}
	var out bytes.Buffer
	if err := NewReport(fixedResult(), &moved).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	want := `probe http://127.0.0.1:8080/mcp
  identities  4 x 2 requests, 8 in flight, 1.50s
  errors      1 of 8 requests failed, across 1 of 4 identities
    http 502  1  e.g. http status 502 Bad Gateway
  stickiness  66.7% (2 of 3 identities without errors met one replica)
  spread      3 replicas, mean 1.3 identities; min 0.75x, max 1.50x the mean
  moved       25.0% (1 of 4 identities in both runs changed replica; from r2: 1)

  replica  identities  share  requests
  r1       2           50.0%  3
  r2       1           25.0%  2
  r3       1           25.0%  2

verdict: not sticky: stickiness 66.7% < 100%
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("WriteText mismatch (-want +got):\n%s", diff)
	}
}

func TestReportAllFailed(t *testing.T) {
	res := &Result{URL: "http://127.0.0.1:1/mcp", Identities: 2, Requests: 1, Concurrency: 8, Done: 2,
		Observations: []Observation{obs(1), obs(1)},
		Failures:     []Failure{{Kind: "connect", Count: 2, Example: "dial tcp 127.0.0.1:1: connect: connection refused"}}}
	var out bytes.Buffer
	if err := NewReport(res, nil).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"errors      2 of 2 requests failed, across 2 of 2 identities",
		"connect   2  e.g. dial tcp 127.0.0.1:1: connect: connection refused",
		"stickiness  n/a (no identity answered without errors)",
		"verdict: no answers: all 2 requests failed, so nothing is known about affinity",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestReportJSON(t *testing.T) {
	var out bytes.Buffer
	if err := NewReport(fixedResult(), nil).WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	want := map[string]any{
		"url": "http://127.0.0.1:8080/mcp", "identities": 4.0, "requests": 8.0, "errors": 1.0,
		"sticky_identities": 2.0, "clean_identities": 3.0, "moved": nil,
		"verdict": "not sticky: stickiness 66.7% < 100%",
	}
	for k, v := range want {
		if diff := cmp.Diff(v, got[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
}

func TestBaselineRoundTrip(t *testing.T) {
	res := fixedResult()
	var buf bytes.Buffer
	if _, err := res.Baseline().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	b, err := ReadBaseline(&buf)
	if err != nil {
		t.Fatalf("ReadBaseline: %v", err)
	}
	if diff := cmp.Diff(res.Baseline(), b); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	m, err := b.Compare(res)
	if err != nil || m.Moved != 0 || m.Compared != 4 {
		t.Errorf("Compare with itself = %+v, %v; want 4 compared, none moved", m, err)
	}
	other := fixedResult()
	other.TokenPrefix = "other-"
	if _, err := b.Compare(other); err == nil {
		t.Error("Compare across token prefixes succeeded, want error")
	}
}

func TestReadBaselineRejects(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"not json", "nope", "decoding baseline"},
		{"other version", `{"version":2,"token_prefix":"p","replicas":{}}`, "version 2"},
		{"no prefix", `{"version":1,"replicas":{}}`, "no token prefix"},
		{"negative index", `{"version":1,"token_prefix":"p","replicas":{"-1":"r1"}}`, "bad entry"},
		{"empty name", `{"version":1,"token_prefix":"p","replicas":{"3":""}}`, "bad entry"},
		{"index not a number", `{"version":1,"token_prefix":"p","replicas":{"x":"r1"}}`, "decoding baseline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadBaseline(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadBaseline() = %v, want error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestReportInterrupted(t *testing.T) {
	res := fixedResult()
	res.Requests = 3 // 8 of 12 requests made
	r := NewReport(res, nil)
	if !r.Interrupted || !strings.HasPrefix(r.Verdict, "interrupted; so far not sticky") {
		t.Errorf("interrupted %v, verdict %q; want an interrupted verdict", r.Interrupted, r.Verdict)
	}
	var out bytes.Buffer
	if err := r.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "interrupted  after 8 of 12 requests\n") {
		t.Errorf("report lacks the interruption:\n%s", out.String())
	}
}

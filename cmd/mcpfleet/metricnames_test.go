package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The alert rules and the dashboard name metrics by their exposed names;
// these helpers read both, pull the metric names out of their PromQL, and
// compare them with what a gateway's /metrics exposes, so that renaming or
// removing a metric that a rule or a panel uses fails a test.

var (
	alertsFile    = filepath.Join("..", "..", "deploy", "prometheus", "alerts.yaml")
	dashboardFile = filepath.Join("..", "..", "deploy", "grafana", "mcpfleet.json")
)

var (
	// promqlStrings are string literals (label values, regexps).
	promqlStrings = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	// promqlMatchers are label matchers: {job="x", state=~"up"} (their
	// strings already taken out).
	promqlMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	// promqlLabelLists are the label lists of aggregations and vector
	// matching: by (le, replica), ignoring (state), group_left (x).
	promqlLabelLists = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	// promqlMetricName is a name of this project's metrics: mcpfleet_...,
	// or the MCP semantic conventions' mcp_server_... and mcp_client_....
	promqlMetricName = regexp.MustCompile(`\b(?:mcpfleet|mcp_server|mcp_client)_[a-z0-9_]+\b`)
)

// promqlMetricNames returns the metric names expr selects, sorted and
// without repeats: label names and values are left out.
func promqlMetricNames(expr string) []string {
	s := promqlStrings.ReplaceAllString(expr, `""`)
	s = promqlMatchers.ReplaceAllString(s, "{}")
	s = promqlLabelLists.ReplaceAllString(s, "")
	names := promqlMetricName.FindAllString(s, -1)
	slices.Sort(names)
	return slices.Compact(names)
}

// alertExprs returns each alert's expression, by alert name.
func alertExprs(t testing.TB, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert] = r.Expr
		}
	}
	return out
}

// dashboardExprs returns every query of the dashboard (panel targets and
// the template variables' queries), by panel title and refId.
func dashboardExprs(t testing.TB, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out[fmt.Sprintf("panel %q %s", p.Title, tg.RefID)] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			out["variable "+v.Name] = v.Definition
		}
	}
	return out
}

// exposedNames reads a /metrics page in the text format and returns the
// names a query can select: a counter's or gauge's name, a histogram's
// _bucket, _sum and _count, a summary's name, _sum and _count. A family is
// exposed only when it has a sample (promhttp writes no TYPE line for a
// vector without children).
func exposedNames(r io.Reader) (map[string]bool, error) {
	out := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" {
			continue
		}
		name := f[2]
		switch f[3] {
		case "histogram":
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case "summary":
			out[name], out[name+"_sum"], out[name+"_count"] = true, true, true
		default:
			out[name] = true
		}
	}
	return out, sc.Err()
}

// missingMetrics returns, sorted, each metric name a query of uses selects
// that exposed lacks, with the queries that use it.
func missingMetrics(uses map[string]string, exposed map[string]bool) []string {
	by := map[string][]string{}
	for where, expr := range uses {
		for _, n := range promqlMetricNames(expr) {
			if !exposed[n] {
				by[n] = append(by[n], where)
			}
		}
	}
	var out []string
	for n, wheres := range by {
		slices.Sort(wheres)
		out = append(out, n+" (used by "+strings.Join(wheres, "; ")+")")
	}
	slices.Sort(out)
	return out
}

// ruleAndPanelQueries are the queries of the alert rules and of the
// dashboard together; it fails when either names no metric at all.
func ruleAndPanelQueries(t testing.TB) map[string]string {
	t.Helper()
	uses := alertExprs(t, alertsFile)
	if len(uses) == 0 {
		t.Fatalf("%s: no alert", alertsFile)
	}
	d := dashboardExprs(t, dashboardFile)
	if len(d) == 0 {
		t.Fatalf("%s: no query", dashboardFile)
	}
	for k, v := range d {
		uses[k] = v
	}
	for where, expr := range uses {
		if len(promqlMetricNames(expr)) == 0 {
			t.Errorf("%s names no mcpfleet metric: %s", where, expr)
		}
	}
	return uses
}

// TestPromQLMetricNames: names come out of selectors, functions and
// binary operations; label names and values, aggregation label lists and
// vector matching lists do not.
func TestPromQLMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`mcpfleet_open_streams`, []string{"mcpfleet_open_streams"}},
		{`sum without (replica, state) (mcpfleet_replica_state{state="up"} * ignoring (state) (1 - mcpfleet_replica_quarantined)) == 0`,
			[]string{"mcpfleet_replica_quarantined", "mcpfleet_replica_state"}},
		{`histogram_quantile(0.99, sum by (le, gen_ai_tool_name) (rate(mcp_server_operation_duration_seconds_bucket{job=~"$job", mcp_method_name="tools/call"}[$__rate_interval])))`,
			[]string{"mcp_server_operation_duration_seconds_bucket"}},
		{`rate(mcpfleet_requests_total{outcome=~"mcpfleet_not_a_metric|x"}[5m]) / on (mcp_method_name) group_left (mcpfleet_label) mcpfleet_tasks`,
			[]string{"mcpfleet_requests_total", "mcpfleet_tasks"}},
		{`label_values(mcpfleet_replica_state{job=~"$job"}, replica)`, []string{"mcpfleet_replica_state"}},
		{`count(max by (replica) (mcpfleet_replica_state{state="down"}) == 1) or vector(0)`, []string{"mcpfleet_replica_state"}},
		{`vector(1)`, nil},
	} {
		if got := promqlMetricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("promqlMetricNames(%s) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// TestMissingMetricFailsTheCheck holds the live-metrics check to what it
// promises on a fixture, a gateway's /metrics page saved after a short
// load: the page as it is lacks nothing the rules and panels use, and the
// page without any one family they use is reported as lacking exactly
// that family's names (a histogram's _bucket for a quantile).
func TestMissingMetricFailsTheCheck(t *testing.T) {
	uses := ruleAndPanelQueries(t)
	page, err := os.ReadFile(filepath.Join("testdata", "metrics.prom"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := exposedNames(strings.NewReader(string(page)))
	if err != nil {
		t.Fatal(err)
	}
	if m := missingMetrics(uses, all); len(m) > 0 {
		t.Fatalf("the fixture lacks metrics the rules and panels use (save a new one from a gateway's /metrics):\n%s", strings.Join(m, "\n"))
	}
	used := map[string]bool{}
	for _, expr := range uses {
		for _, n := range promqlMetricNames(expr) {
			used[n] = true
		}
	}
	for name := range used {
		family := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := strings.CutSuffix(name, suffix); ok && strings.Contains(string(page), "# TYPE "+f+" histogram\n") {
				family = f
			}
		}
		exposed, err := exposedNames(strings.NewReader(withoutFamily(string(page), family)))
		if err != nil {
			t.Fatal(err)
		}
		m := missingMetrics(uses, exposed)
		if len(m) == 0 || !strings.HasPrefix(m[0], name+" (used by ") {
			t.Errorf("without %s the check reports %q, want %s first", family, m, name)
		}
		for _, line := range m {
			if n, _, _ := strings.Cut(line, " "); !strings.HasPrefix(n, family) {
				t.Errorf("without %s the check also reports %s", family, line)
			}
		}
	}
}

// withoutFamily returns the page without the lines of family (its HELP
// and TYPE lines and its samples).
func withoutFamily(page, family string) string {
	var b strings.Builder
	for line := range strings.Lines(page) {
		name := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
		name, _, _ = strings.Cut(name, " ")
		name, _, _ = strings.Cut(name, "{")
		if name == family || name == family+"_bucket" || name == family+"_sum" || name == family+"_count" {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

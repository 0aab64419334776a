package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WriteJSON writes v as compact JSON on one line (the timeline is long;
// pipe it through jq to read it). Results hold no maps and rounded floats,
// so the same run writes the same bytes.
func WriteJSON(w io.Writer, v any) error {
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return fmt.Errorf("writing json: %w", err)
	}
	return nil
}

// Describe is a one-line summary of a scenario's settings.
func (s *Scenario) Describe() string {
	parts := []string{
		fmt.Sprintf("seed %d", s.Seed), s.Protocol, s.Routing,
		fmt.Sprintf("%d replicas x %d slots", s.Replicas, s.Slots),
		"idle timeout " + secs(s.IdleTimeout, "none"),
		"keep-alive " + secs(s.KeepAlive, "off"),
	}
	if s.SlowTools {
		parts = append(parts, "slow tools")
	}
	if s.HotClient {
		parts = append(parts, fmt.Sprintf("hot client x%g", s.HotFactor))
	}
	if s.Runaway {
		parts = append(parts, fmt.Sprintf("runaway agent +%g/s", s.RunawayRate))
	}
	if s.NewTool {
		t := fmt.Sprintf("new tool %g%% of calls", round(100*s.NewToolShare, 100))
		if s.Routing == Fleet && s.ToolsRefresh == 0 {
			t += " (tool watcher off)"
		}
		parts = append(parts, t)
	}
	if s.Gateways > 1 {
		parts = append(parts, fmt.Sprintf("%d gateways", s.Gateways))
	}
	if l := s.describeLimits(); l != "" {
		parts = append(parts, l)
	}
	if s.Deploy {
		parts = append(parts, "deploy, drain "+secs(s.DrainWindow, "0 s"))
	}
	if s.Idempotency {
		parts = append(parts, "idempotency")
	}
	return strings.Join(parts, ", ")
}

// describeLimits is the limits in a few words, "" when off.
func (s *Scenario) describeLimits() string {
	var ls []string
	if s.LimitRate > 0 {
		c := limitCheck(s)
		ls = append(ls, fmt.Sprintf("%g/s burst %g", c.Rate, c.Burst))
	}
	if s.LimitConcurrency > 0 {
		ls = append(ls, fmt.Sprintf("%d in flight", s.LimitConcurrency))
	}
	if len(ls) == 0 {
		return ""
	}
	return "limits " + strings.Join(ls, ", ") + " per caller (" + s.LimitStore + ")"
}

func secs(v float64, zero string) string {
	if v == 0 {
		return zero
	}
	return strconv.FormatFloat(v, 'g', -1, 64) + " s"
}

// row is one line of the figures table.
type row struct {
	name string
	get  func(*Result) string
}

func itoa(f func(*Result) int) func(*Result) string {
	return func(r *Result) string { return strconv.Itoa(f(r)) }
}

func fixed(f func(*Result) float64, digits int) func(*Result) string {
	return func(r *Result) string { return strconv.FormatFloat(f(r), 'f', digits, 64) }
}

var rows = []row{
	{"calls issued", itoa(func(r *Result) int { return r.Issued })},
	{"completed", itoa(func(r *Result) int { return r.Completed })},
	{"failed (given up)", itoa(func(r *Result) int { return r.Failed })},
	{"duplicate mutations", itoa(func(r *Result) int { return r.DuplicateMutations })},
	{"executions", itoa(func(r *Result) int { return r.Executions })},
	{"executions killed", itoa(func(r *Result) int { return r.Killed })},
	{"executions cancelled", itoa(func(r *Result) int { return r.Cancelled })},
	{"streams cut (idle)", itoa(func(r *Result) int { return r.IdleCuts })},
	{"resumes", itoa(func(r *Result) int { return r.Resumes })},
	{"404s", itoa(func(r *Result) int { return r.NotFound })},
	{"calls that saw a 404", itoa(func(r *Result) int { return r.CallsWith404 })},
	{"re-initializations", itoa(func(r *Result) int { return r.Reinitializations })},
	{"re-issues", itoa(func(r *Result) int { return r.Reissues })},
	{"503s (no replica)", itoa(func(r *Result) int { return r.Unroutable })},
	{"429s (limits)", itoa(func(r *Result) int { return r.Refused })},
	{"429s to other clients", itoa(func(r *Result) int { return r.RefusedOthers })},
	{"waits for a place", itoa(func(r *Result) int { return r.CapacityWaits })},
	{"503s (replicas full)", itoa(func(r *Result) int { return r.CapacityRefused })},
	{"unknown tool (failed)", itoa(func(r *Result) int { return r.UnknownTool })},
	{"longest replica queue", itoa(func(r *Result) int {
		n := 0
		for _, rep := range r.Replicas {
			n = max(n, rep.LongestQueue)
		}
		return n
	})},
	{"runaway agent admitted", itoa(func(r *Result) int { return r.RunawayAdmitted })},
	{"runaway admitted per s", fixed(func(r *Result) float64 { return r.RunawayAdmittedRate }, 3)},
	{"latency p50 (s)", fixed(func(r *Result) float64 { return r.P50 }, 3)},
	{"latency p95 (s)", fixed(func(r *Result) float64 { return r.P95 }, 3)},
	{"latency p99 (s)", fixed(func(r *Result) float64 { return r.P99 }, 3)},
	{"utilization", percent(func(r *Result) float64 { return r.Utilization })},
	{"replica-seconds (cost)", fixed(func(r *Result) float64 { return r.ReplicaSeconds }, 0)},
}

func percent(f func(*Result) float64) func(*Result) string {
	return func(r *Result) string { return strconv.FormatFloat(100*f(r), 'f', 1, 64) + "%" }
}

// WriteTable writes the figures of results side by side, one column each
// headed by its label, then each replica's utilization and longest queue.
func WriteTable(w io.Writer, labels []string, results []*Result) error {
	table := [][]string{append([]string{""}, labels...)}
	for _, rw := range rows {
		line := []string{rw.name}
		for _, r := range results {
			line = append(line, rw.get(r))
		}
		table = append(table, line)
	}
	most := 0
	for _, r := range results {
		most = max(most, len(r.Replicas))
	}
	for k := range most {
		line := []string{replicaName(k) + " util, longest queue"}
		for _, r := range results {
			cell := "-"
			if k < len(r.Replicas) {
				f := r.Replicas[k]
				cell = fmt.Sprintf("%.1f%%, %d", 100*f.Utilization, f.LongestQueue)
			}
			line = append(line, cell)
		}
		table = append(table, line)
	}
	return writeAligned(w, table)
}

// writeAligned writes table with its first column left-aligned and the
// others right-aligned, two spaces apart.
func writeAligned(w io.Writer, table [][]string) error {
	width := make([]int, len(table[0]))
	for _, line := range table {
		for i, cell := range line {
			width[i] = max(width[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	for _, line := range table {
		b.WriteString(line[0] + strings.Repeat(" ", width[0]-utf8.RuneCountInString(line[0])))
		for i, cell := range line[1:] {
			b.WriteString(strings.Repeat(" ", 2+width[i+1]-utf8.RuneCountInString(cell)) + cell)
		}
		b.WriteByte('\n')
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	return nil
}

// WriteSummary writes one run: its settings, its figures and a pointer to
// the assumptions.
func WriteSummary(w io.Writer, r *Result) error {
	if _, err := fmt.Fprintf(w, "%s\n\n", r.Scenario.Describe()); err != nil {
		return fmt.Errorf("writing summary: %w", err)
	}
	if err := WriteTable(w, []string{"value"}, []*Result{r}); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n(%d modelling assumptions: see --json or docs/SIM.md)\n", len(r.Assumptions))
	return err
}

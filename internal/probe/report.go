package probe

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// Report is what the probe command prints: a run's parameters, its
// summary, its failures and, given a baseline, the movement since.
type Report struct {
	// URL is the endpoint probed.
	URL string `json:"url"`
	// RequestsPerIdentity and Concurrency are the run's parameters.
	RequestsPerIdentity int `json:"requests_per_identity"`
	Concurrency         int `json:"concurrency"`
	// ElapsedSeconds is how long the run took.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Interrupted is set when the run stopped before its last request.
	Interrupted bool `json:"interrupted"`
	// Summary holds the aggregates; its fields are inlined in JSON.
	Summary
	// Failures groups the failed requests by kind, most frequent first.
	Failures []Failure `json:"failures"`
	// Moved compares with the baseline; nil without one.
	Moved *Movement `json:"moved"`
	// Verdict is "sticky" when the run proves affinity, or says what fell
	// short ([Summary.ExpectSticky]); an interrupted run's verdict starts
	// with "interrupted".
	Verdict string `json:"verdict"`
}

// NewReport returns the report of res; moved may be nil.
func NewReport(res *Result, moved *Movement) Report {
	r := Report{
		URL:                 res.URL,
		RequestsPerIdentity: res.Requests,
		Concurrency:         res.Concurrency,
		ElapsedSeconds:      res.Elapsed.Seconds(),
		Interrupted:         res.Interrupted(),
		Summary:             Summarize(res.Observations),
		Failures:            res.Failures,
		Moved:               moved,
		Verdict:             "sticky",
	}
	if r.Failures == nil {
		r.Failures = []Failure{}
	}
	if err := r.ExpectSticky(); err != nil {
		r.Verdict = "not sticky: " + err.Error()
	}
	if r.Errors > 0 && r.Errors == r.Requests {
		r.Verdict = fmt.Sprintf("no answers: all %d requests failed, so nothing is known about affinity", r.Requests)
	}
	if r.Interrupted {
		r.Verdict = "interrupted; so far " + r.Verdict
	}
	return r
}

// WriteJSON writes r as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes r as a plain-text report for people: key lines, the
// failures, the spread table and a verdict line.
func (r Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "probe %s\n", r.URL)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  identities\t%d x %d requests, %d in flight, %.2fs\n",
		r.Identities, r.RequestsPerIdentity, r.Concurrency, r.ElapsedSeconds)
	if r.Interrupted {
		fmt.Fprintf(tw, "  interrupted\tafter %d of %d requests\n", r.Requests, r.Identities*r.RequestsPerIdentity)
	}
	if r.Errors == 0 {
		fmt.Fprintf(tw, "  errors\t0 of %d requests\n", r.Requests)
	} else {
		fmt.Fprintf(tw, "  errors\t%d of %d requests failed, across %d of %d identities\n", r.Errors, r.Requests, r.ErrorIdentities, r.Identities)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(tw, "    %s\t%d  e.g. %s\n", f.Kind, f.Count, f.Example)
	}
	if r.CleanIdentities > 0 {
		fmt.Fprintf(tw, "  stickiness\t%s (%d of %d identities without errors met one replica)\n",
			Percent(r.Stickiness), r.StickyIdentities, r.CleanIdentities)
	} else {
		fmt.Fprintf(tw, "  stickiness\tn/a (no identity answered without errors)\n")
	}
	if len(r.Replicas) > 0 {
		fmt.Fprintf(tw, "  spread\t%d replicas, mean %.1f identities; min %.2fx, max %.2fx the mean\n",
			len(r.Replicas), r.MeanIdentities, r.MinOverMean, r.MaxOverMean)
	}
	if m := r.Moved; m != nil {
		fmt.Fprintf(tw, "  moved\t%s (%d of %d identities in both runs changed replica%s)\n",
			Percent(m.Share), m.Moved, m.Compared, fromList(m.From))
	}
	tw.Flush()
	if len(r.Replicas) > 0 {
		fmt.Fprintln(ew)
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  replica\tidentities\tshare\trequests\n")
		for _, s := range r.Replicas {
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\n", s.Name, s.Identities,
				Percent(float64(s.Identities)/float64(r.Identities)), s.Requests)
		}
		tw.Flush()
	}
	fmt.Fprintf(ew, "\nverdict: %s\n", r.Verdict)
	return ew.err
}

// fromList formats the replicas moved identities came from, most first.
func fromList(from map[string]int) string {
	if len(from) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(from))
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(from[b], from[a]) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s: %d", n, from[n])
	}
	return "; from " + strings.Join(parts, ", ")
}

// errWriter keeps the first write error, so a report's many writes need
// one check.
type errWriter struct {
	w   io.Writer
	err error
}

// Write writes p unless an earlier write failed.
func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/probe"
)

// probeFlags are the parsed flags of the probe command.
type probeFlags struct {
	opts     probe.Options
	baseline string // file of an earlier run to compare with; "" for none
	save     string // file to save this run's baseline to; "" for none
	sticky   bool   // --expect sticky
	json     bool
}

// runProbe runs the probe command (its help: helptext.go).
func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	pf, err := parseProbeFlags(args)
	if err != nil {
		return err
	}
	var base *probe.Baseline
	if pf.baseline != "" {
		if base, err = readBaseline(pf.baseline, pf.opts.TokenPrefix); err != nil {
			return usageError{err}
		}
	}
	progress := newProgressLine(stderr)
	pf.opts.Progress = progress.update
	res, runErr := probe.Run(ctx, &pf.opts)
	progress.finish()
	if res == nil {
		return runErr
	}
	var moved *probe.Movement
	if base != nil {
		m, err := base.Compare(res)
		if err != nil {
			return err
		}
		moved = &m
	}
	if err := writeReport(stdout, probe.NewReport(res, moved), pf.json); err != nil {
		return err
	}
	if runErr != nil {
		return runErr // interrupted: report printed, nothing saved
	}
	if pf.save != "" {
		if err := saveBaseline(pf.save, res.Baseline()); err != nil {
			return err
		}
	}
	if pf.sticky {
		return probe.Summarize(res.Observations).ExpectSticky()
	}
	return nil
}

// parseProbeFlags parses and checks the probe command's flags.
func parseProbeFlags(args []string) (*probeFlags, error) {
	fs := newFlagSet("probe")
	var pf probeFlags
	o := &pf.opts
	fs.StringVar(&o.URL, "url", "", "the MCP `endpoint` behind the balancer, e.g. http://127.0.0.1:8080/mcp (required)")
	fs.StringVar(&o.Host, "host", "", "`name` sent as the Host of every request instead of the URL's (a service of the gateway chosen by host)")
	fs.IntVar(&o.Identities, "identities", probe.DefaultIdentities, fmt.Sprintf("synthetic identities, 1 to %d", probe.MaxIdentities))
	fs.IntVar(&o.Requests, "requests", probe.DefaultRequests, fmt.Sprintf("whoami calls per identity, 1 to %d (identities x requests at most %d)", probe.MaxRequests, probe.MaxTotal))
	fs.IntVar(&o.Concurrency, "concurrency", probe.DefaultConcurrency, fmt.Sprintf("requests in flight, 1 to %d", probe.MaxConcurrency))
	fs.StringVar(&o.TokenPrefix, "token-prefix", probe.DefaultTokenPrefix, "start of every identity's bearer token; the index follows")
	fs.DurationVar(&o.Timeout, "timeout", probe.DefaultTimeout, "bound on each request")
	fs.StringVar(&pf.baseline, "baseline", "", "compare with the run saved in `file` by --save: the share of identities that moved")
	fs.StringVar(&pf.save, "save", "", "save this run's identity -> replica map and parameters to `file`, for --baseline")
	expect := fs.String("expect", "", "'sticky': fail unless every identity met one replica and no request failed")
	fs.BoolVar(&pf.json, "json", false, "print the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if o.URL == "" {
		return nil, usageError{errors.New("--url: required")}
	}
	if !strings.HasPrefix(o.URL, "http://") && !strings.HasPrefix(o.URL, "https://") {
		return nil, usageError{fmt.Errorf("--url %q: want the http or https endpoint of a balancer; a stdio server has none of its own: run its fleet with mcpfleet itself (serve --stdio \"COMMAND\") and probe that", o.URL)}
	}
	for name, v := range map[string]int{"identities": o.Identities, "requests": o.Requests, "concurrency": o.Concurrency} {
		if v < 1 {
			return nil, usageError{fmt.Errorf("--%s %d: must be at least 1", name, v)}
		}
	}
	switch {
	case o.Timeout <= 0:
		return nil, usageError{errors.New("--timeout: must be positive")}
	case o.TokenPrefix == "":
		return nil, usageError{errors.New("--token-prefix: must not be empty")}
	case *expect != "" && *expect != "sticky":
		return nil, usageError{fmt.Errorf("--expect %q: the only expectation is \"sticky\"", *expect)}
	}
	pf.sticky = *expect == "sticky"
	if err := o.Validate(); err != nil {
		return nil, usageError{err}
	}
	return &pf, nil
}

// readBaseline reads the baseline in file and checks that its identities
// are the ones this run will use.
func readBaseline(file, prefix string) (*probe.Baseline, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading baseline: %w", err)
	}
	defer f.Close()
	b, err := probe.ReadBaseline(f)
	if err != nil {
		return nil, fmt.Errorf("reading baseline %s: %w", file, err)
	}
	if b.TokenPrefix != prefix {
		return nil, fmt.Errorf("baseline %s used --token-prefix %q, this run %q: the identities differ", file, b.TokenPrefix, prefix)
	}
	return b, nil
}

// saveBaseline writes b to file, through a temporary file renamed into
// place so a reader never sees half a baseline.
func saveBaseline(file string, b *probe.Baseline) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".probe-baseline-*")
	if err != nil {
		return fmt.Errorf("saving baseline: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := b.WriteTo(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("saving baseline: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("saving baseline: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving baseline: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("saving baseline: %w", err)
	}
	return nil
}

// writeReport prints the report as text or JSON.
func writeReport(w io.Writer, r probe.Report, asJSON bool) error {
	if asJSON {
		return r.WriteJSON(w)
	}
	return r.WriteText(w)
}

// progressLine shows a run's progress on stderr once it has lasted a
// second: on a terminal one line rewritten in place (at most every
// probe.ProgressInterval), elsewhere, such as in a log, a whole line every
// ten seconds.
type progressLine struct {
	w       io.Writer
	tty     bool
	start   time.Time
	last    time.Time // when a line was last written
	done    int       // the latest count, for finish
	total   int
	printed bool
}

func newProgressLine(w io.Writer) *progressLine {
	return &progressLine{w: w, tty: isTerminal(w), start: time.Now()}
}

// update is the probe.Options.Progress callback.
func (p *progressLine) update(done, total int) {
	p.done, p.total = done, total
	now := time.Now()
	switch {
	case now.Sub(p.start) < time.Second:
	case p.tty:
		fmt.Fprintf(p.w, "\rprobe: %d/%d requests", done, total)
		p.printed = true
	case now.Sub(p.last) >= 10*time.Second:
		fmt.Fprintf(p.w, "probe: %d/%d requests\n", done, total)
		p.last, p.printed = now, true
	}
}

// finish ends the progress output with the final count, if any was shown.
func (p *progressLine) finish() {
	switch {
	case !p.printed:
	case p.tty:
		fmt.Fprintf(p.w, "\rprobe: %d/%d requests in %.1fs\n", p.done, p.total, time.Since(p.start).Seconds())
	default:
		fmt.Fprintf(p.w, "probe: %d/%d requests in %.1fs\n", p.done, p.total, time.Since(p.start).Seconds())
	}
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

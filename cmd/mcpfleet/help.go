package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// This file renders every command's help from one shape (helpTopic, in
// helptext.go) and the command's own flag set, so that a flag's text,
// placeholder and default are written once, where the flag is defined.

// helpRequest is what parsing returns for -h or --help: the command's
// flag set, for run to render its help on stdout. It unwraps to
// flag.ErrHelp.
type helpRequest struct{ fs *flag.FlagSet }

func (h helpRequest) Error() string { return flag.ErrHelp.Error() }
func (h helpRequest) Unwrap() error { return flag.ErrHelp }

// newFlagSet returns a flag set that prints nothing itself: parseFlags
// turns -h into a helpRequest and a bad flag into a usageError, and run
// writes each where it belongs (help to stdout, errors to stderr).
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses args, leaving any arguments after the flags to the
// caller: -h is a helpRequest, a bad flag a usageError in words.
func parseArgs(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return helpRequest{fs}
	}
	return usageError{flagError(fs, err)}
}

// flagError rewords the flag package's errors: "invalid value "x" for
// flag -n: parse error" says what the flag wants instead.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s", strings.TrimPrefix(name, "-"))
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		value, rest, _ := strings.Cut(rest, " for flag -")
		name, _, _ := strings.Cut(rest, ":")
		if f := fs.Lookup(name); f != nil {
			return fmt.Errorf("--%s %s: want %s", name, value, flagWant(f))
		}
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		if f := fs.Lookup(strings.TrimPrefix(name, "-")); f != nil {
			return fmt.Errorf("--%s: needs a value: %s", f.Name, flagWant(f))
		}
	}
	return err
}

// flagWant says in words what a flag takes.
func flagWant(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		if _, secs := f.Value.(*secondsFlag); secs {
			return "seconds (30) or a duration (30s, 2m)"
		}
		return "a value: " + f.Usage
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 500ms, 30s or 2m"
	case int, int64:
		return "a whole number"
	case uint, uint64:
		return "a whole number, 0 or more"
	case float64:
		return "a number such as 2 or 0.5"
	case bool:
		return "true or false (--" + f.Name + "=false)"
	}
	return "a value: " + f.Usage
}

// writeHelp writes the help of the command whose flag set fs is: its
// purpose, usage, what it does, its flags by topic (those in no topic
// under "other flags", so that none is ever left out) and examples.
func writeHelp(w io.Writer, fs *flag.FlagSet) {
	name := fs.Name()
	t := helpTopics[name]
	purpose := t.purpose
	if purpose == "" {
		purpose = commandPurpose(name)
	}
	fmt.Fprintf(w, "mcpfleet %s: %s\n\nusage: mcpfleet %s\n", name, purpose, cmp.Or(t.usage, name+" [flags]"))
	if t.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(t.about))
	}
	grouped := map[string]bool{}
	for _, g := range t.groups {
		var fl []*flag.Flag
		for _, n := range g.flags {
			if f := fs.Lookup(n); f != nil && !grouped[n] {
				fl = append(fl, f)
				grouped[n] = true
			}
		}
		writeFlagGroup(w, g.topic, fl)
	}
	var rest []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !grouped[f.Name] {
			rest = append(rest, f)
		}
	})
	title := "other flags"
	if len(t.groups) == 0 {
		title = "flags"
	}
	writeFlagGroup(w, title, rest)
	if len(t.examples) > 0 {
		fmt.Fprint(w, "\nexamples:\n")
		for _, e := range t.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// writeFlagGroup writes one topic's flags, nothing for none.
func writeFlagGroup(w io.Writer, topic string, fl []*flag.Flag) {
	if len(fl) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", topic)
	for _, f := range fl {
		dashes := "--"
		if len(f.Name) == 1 {
			dashes = "-" // -q, -v
		}
		fmt.Fprintf(w, "  %s%s", dashes, f.Name)
		if p := placeholder(f); p != "" {
			fmt.Fprintf(w, " %s", p)
		}
		_, text := flag.UnquoteUsage(f)
		if d := flagDefault(f); d != "" {
			text += " (default " + d + ")"
		}
		for _, line := range wrap(text, 72) {
			fmt.Fprintf(w, "\n      %s", line)
		}
		fmt.Fprintln(w)
	}
}

// placeholder is the word after a flag's name: the back-quoted word of
// its text, else its kind in words; none for a boolean.
func placeholder(f *flag.Flag) string {
	name, _ := flag.UnquoteUsage(f)
	switch name {
	case "int", "uint":
		return "n"
	case "float":
		return "number"
	case "string":
		return "text"
	case "value":
		if _, ok := f.Value.(*secondsFlag); ok {
			return "seconds"
		}
		return "text"
	}
	return name
}

// flagDefault is a flag's default as help shows it: "" when it is the
// zero of its kind (the flag package's rule), so that "not given" is
// never shown as a value.
func flagDefault(f *flag.Flag) string {
	t := reflect.TypeOf(f.Value)
	var zero flag.Value
	if t.Kind() == reflect.Pointer {
		zero, _ = reflect.New(t.Elem()).Interface().(flag.Value)
	}
	if f.DefValue == "" || (zero != nil && f.DefValue == zero.String()) {
		return ""
	}
	return f.DefValue
}

// wrap splits text into lines of at most width bytes, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

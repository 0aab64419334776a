package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// instruction is one Dockerfile instruction, its continuation lines joined.
type instruction struct {
	line int    // where it starts, from 1
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// stage is one FROM and the instructions after it.
type stage struct {
	from string // the image, without --platform
	ins  []instruction
}

// parseDockerfile reads instructions as Docker's parser does, as far as this
// file needs: blank lines and comment lines (the parser directive too) are
// dropped, inside a continued instruction as well, and a line ending in a
// backslash goes on on the next. Heredocs and a changed escape character are
// refused rather than misread.
func parseDockerfile(text string) ([]instruction, error) {
	var out []instruction
	var cur *instruction
	for i, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			if strings.HasPrefix(strings.ReplaceAll(t, " ", ""), "#escape=") {
				return nil, fmt.Errorf("line %d: an escape directive is not supported", i+1)
			}
			continue
		}
		if strings.Contains(t, "<<") {
			return nil, fmt.Errorf("line %d: heredocs are not supported", i+1)
		}
		more := strings.HasSuffix(t, `\`)
		t = strings.TrimSpace(strings.TrimSuffix(t, `\`))
		if cur == nil {
			cmd, args, _ := strings.Cut(t, " ")
			cur = &instruction{line: i + 1, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		} else {
			cur.args += " " + t
		}
		if !more {
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: the file ends inside a continued instruction", cur.line)
	}
	return out, nil
}

// stages splits instructions at each FROM; what comes before the first
// (ARG) is dropped.
func stages(ins []instruction) []stage {
	var out []stage
	for _, in := range ins {
		if in.cmd == "FROM" {
			var from []string
			for _, f := range strings.Fields(in.args) {
				if !strings.HasPrefix(f, "--") {
					from = append(from, f)
				}
			}
			out = append(out, stage{from: from[0]})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].ins = append(out[len(out)-1].ins, in)
		}
	}
	return out
}

// fields splits s at spaces outside double quotes and drops the quotes.
func fields(s string) []string {
	var out []string
	var b strings.Builder
	quoted, started := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, started = !quoted, true
		case r == ' ' && !quoted:
			if started {
				out = append(out, b.String())
			}
			b.Reset()
			started = false
		default:
			b.WriteRune(r)
			started = true
		}
	}
	if started {
		out = append(out, b.String())
	}
	return out
}

// execForm reads a JSON array argument (ENTRYPOINT ["/x"]): the shell form
// would need /bin/sh, which an image FROM scratch does not have.
func execForm(args string) ([]string, error) {
	var v []string
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return nil, fmt.Errorf("%s is not the exec (JSON) form: %w", args, err)
	}
	return v, nil
}

func TestParseDockerfile(t *testing.T) {
	text := "# syntax=docker/dockerfile:1\nFROM a AS b\nRUN x \\\n  # a comment\n\n  && y\ncmd [\"z\"]\n"
	got, err := parseDockerfile(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []instruction{{2, "FROM", "a AS b"}, {3, "RUN", "x && y"}, {7, "CMD", `["z"]`}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(instruction{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"RUN a \\\n", "RUN <<EOF\nx\nEOF\n", "# escape=`\nFROM a\n"} {
		if _, err := parseDockerfile(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if diff := cmp.Diff([]string{"a=b c", "d=e"}, fields(`a="b c"  d=e`)); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

// readDockerfile parses the root Dockerfile into its stages.
func readDockerfile(t *testing.T) []stage {
	t.Helper()
	root, err := findRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ins, err := parseDockerfile(string(text))
	if err != nil {
		t.Fatal(err)
	}
	st := stages(ins)
	if len(st) < 2 {
		t.Fatalf("%d stages, want a build stage and the image", len(st))
	}
	return st
}

// TestDockerfileFinalStage holds the Dockerfile's image to the contract the
// Go builder writes (spec.go): it is how 'docker build .' keeps building the
// image the tests inspect, where no Docker daemon can build it.
func TestDockerfileFinalStage(t *testing.T) {
	st := readDockerfile(t)
	final := st[len(st)-1]
	if final.from != "scratch" {
		t.Errorf("the image is FROM %s, want scratch", final.from)
	}
	var ports, copies []string
	seen := map[string]int{}
	for _, in := range final.ins {
		seen[in.cmd]++
		switch in.cmd {
		case "USER":
			if in.args != imageUser {
				t.Errorf("line %d: USER %s, want %s", in.line, in.args, imageUser)
			}
		case "ENTRYPOINT", "CMD":
			want := map[string][]string{"ENTRYPOINT": entrypoint, "CMD": cmd}[in.cmd]
			got, err := execForm(in.args)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("line %d: %s %s (%v), want %q", in.line, in.cmd, in.args, err, want)
			}
		case "EXPOSE":
			ports = append(ports, strings.Fields(in.args)...)
		case "HEALTHCHECK":
			checkHealthcheck(t, in)
		case "LABEL":
			checkLabels(t, in)
		case "COPY":
			f := strings.Fields(in.args)
			if !strings.HasPrefix(f[0], "--from=") {
				t.Errorf("line %d: COPY %s takes from the build context, not from a build stage", in.line, in.args)
			}
			copies = append(copies, f[len(f)-1])
		case "RUN", "ADD", "ENV", "VOLUME", "SHELL", "ONBUILD", "WORKDIR":
			t.Errorf("line %d: %s in the image stage (no shell to run, nothing to add)", in.line, in.cmd)
		}
	}
	for _, c := range []string{"USER", "ENTRYPOINT", "CMD", "HEALTHCHECK"} {
		if seen[c] != 1 {
			t.Errorf("%d %s instructions in the image stage, want 1", seen[c], c)
		}
	}
	slices.Sort(ports)
	if diff := cmp.Diff(exposedPorts, ports); diff != "" {
		t.Errorf("EXPOSE (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/etc/", binaryPath}, copies); diff != "" {
		t.Errorf("what the image stage copies (-want +got):\n%s", diff)
	}
}

// checkHealthcheck compares HEALTHCHECK --interval=D --timeout=D CMD [...]
// with the builder's.
func checkHealthcheck(t *testing.T, in instruction) {
	t.Helper()
	rest := in.args
	var interval, timeout time.Duration
	for strings.HasPrefix(rest, "--") {
		opt, after, _ := strings.Cut(rest, " ")
		rest = strings.TrimSpace(after)
		k, v, _ := strings.Cut(opt, "=")
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			t.Errorf("line %d: HEALTHCHECK %s: %v", in.line, opt, err)
		case k == "--interval":
			interval = d
		case k == "--timeout":
			timeout = d
		default:
			t.Errorf("line %d: HEALTHCHECK %s is not in the builder's check", in.line, opt)
		}
	}
	form, args, _ := strings.Cut(rest, " ")
	test, err := execForm(args)
	if err != nil || form != "CMD" || interval != healthcheck.Interval || timeout != healthcheck.Timeout ||
		!slices.Equal(append([]string{form}, test...), healthcheck.Test) {
		t.Errorf("line %d: HEALTHCHECK %s (%v); want %q every %v, timeout %v",
			in.line, in.args, err, healthcheck.Test, healthcheck.Interval, healthcheck.Timeout)
	}
}

// checkLabels compares the Dockerfile's fixed labels with the builder's.
func checkLabels(t *testing.T, in instruction) {
	t.Helper()
	want := labels(source{})
	for _, kv := range fields(in.args) {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(v, "$") {
			continue // given at build time, like the builder's version
		}
		if want[k] != v {
			t.Errorf("line %d: LABEL %s=%q, the builder's is %q", in.line, k, v, want[k])
		}
	}
}

// TestDockerfileBuildStage checks how the binary is made: statically, with
// the builder's flags, after downloading the modules of go.mod alone.
func TestDockerfileBuildStage(t *testing.T) {
	st := readDockerfile(t)
	var build *instruction
	for i, in := range st[0].ins {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			build = &st[0].ins[i]
		}
	}
	if build == nil {
		t.Fatal("no RUN go build in the first stage")
	}
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=", "-trimpath", "-buildvcs=false", "-s -w", "./cmd/mcpfleet", "chmod 0555 /out" + binaryPath} {
		if !strings.Contains(build.args, want) {
			t.Errorf("line %d: the go build lacks %q", build.line, want)
		}
	}
	var order []string
	for _, in := range st[0].ins {
		order = append(order, in.cmd+" "+in.args)
	}
	download := slices.Index(order, "RUN go mod download")
	if download < 1 || order[download-1] != "COPY go.mod go.sum ./" || slices.Index(order, "COPY . .") < download {
		t.Errorf("the build stage does not download modules from go.mod and go.sum alone before copying the source:\n%s",
			strings.Join(order, "\n"))
	}
}

// TestDockerfileEtcFiles runs the Dockerfile's RUN that makes the /etc files,
// with /out moved to a temporary directory, and compares what it made with
// the builder's /etc layer: names, modes and bytes.
func TestDockerfileEtcFiles(t *testing.T) {
	st := readDockerfile(t)
	var step string
	for _, in := range st[0].ins {
		if in.cmd == "RUN" && strings.Contains(in.args, "/out/etc/passwd") {
			step = in.args
		}
	}
	if step == "" {
		t.Fatal("no RUN in the build stage writes /out/etc/passwd")
	}
	out := t.TempDir()
	if b, err := exec.Command("sh", "-ec", strings.ReplaceAll(step, "/out/", out+"/")).CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's step: %v\n%s", err, b)
	}
	got := map[string]entry{}
	err := filepath.WalkDir(filepath.Join(out, "etc"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		e := entry{name: filepath.ToSlash(rel), mode: int64(info.Mode().Perm())}
		if d.IsDir() {
			e.name += "/"
		} else if e.data, err = os.ReadFile(p); err != nil {
			return err
		}
		got[e.name] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(caBundlePath)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]entry{}
	for _, e := range etcEntries(ca) {
		want[e.name] = e
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(entry{})); diff != "" {
		t.Errorf("the Dockerfile's /etc and the builder's (-builder +Dockerfile):\n%s", diff)
	}
}

// TestDockerfileCarriesNoSecret checks every stage: no ENV or ARG named like
// a secret, no ADD, and no COPY of a configuration or secret file; the
// build context itself is kept clean by .dockerignore.
func TestDockerfileCarriesNoSecret(t *testing.T) {
	st := readDockerfile(t)
	for _, s := range st {
		for _, in := range s.ins {
			switch in.cmd {
			case "ENV", "ARG":
				for _, kv := range fields(in.args) {
					if k, _, _ := strings.Cut(kv, "="); secretName.MatchString(k) {
						t.Errorf("line %d: %s %s looks like a secret", in.line, in.cmd, k)
					}
				}
			case "ADD":
				t.Errorf("line %d: ADD (it fetches URLs and unpacks archives); use COPY", in.line)
			case "COPY":
				for _, f := range strings.Fields(in.args) {
					if !strings.HasPrefix(f, "--") && (secretName.MatchString(f) || strings.Contains(f, ".yaml") || strings.Contains(f, ".yml")) {
						t.Errorf("line %d: COPY %s copies configuration or a secret", in.line, f)
					}
				}
			}
		}
	}
	root, err := findRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if errors.Is(err, os.ErrNotExist) {
		t.Fatal("no .dockerignore: COPY . . would take everything")
	}
	for _, want := range []string{".git", "**/secret*.yaml", "**/*.pem", "**/*.key"} {
		if !slices.Contains(strings.Fields(string(ignore)), want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
}

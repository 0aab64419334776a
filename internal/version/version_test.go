package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const sha = "27e760e1a2b3c4d5e6f708192a3b4c5d6e7f8091"

func vcs(version string, modified bool) *debug.BuildInfo {
	m := "false"
	if modified {
		m = "true"
	}
	return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/mcpfleet/mcpfleet", Version: version},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: sha},
			{Key: "vcs.time", Value: "2026-12-05T10:05:18Z"}, {Key: "vcs.modified", Value: m}}}
}

func TestFromBuild(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 5, 18, 0, time.UTC)
	noVCS := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		s    Stamps
		want Info
	}{
		{"a plain go build: devel and the recorded commit", vcs("v0.0.0-20261205100518-27e760e1a2b3", false), Stamps{},
			Info{Version: Devel, Commit: sha, CommitTime: at, GoVersion: "go1.26.8", Platform: "linux/amd64"}},
		{"a plain go build of a changed tree", vcs("v0.0.0-20261205100518-27e760e1a2b3+dirty", true), Stamps{},
			Info{Version: Devel, Commit: sha, CommitTime: at, Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64"}},
		{"after a tag, a pseudo-version is still devel", vcs("v0.2.1-0.20261205100518-27e760e1a2b3", false), Stamps{},
			Info{Version: Devel, Commit: sha, CommitTime: at, GoVersion: "go1.26.8", Platform: "linux/amd64"}},
		{"a build at a tag", vcs("v0.2.0", false), Stamps{},
			Info{Version: "0.2.0", Commit: sha, CommitTime: at, GoVersion: "go1.26.8", Platform: "linux/amd64"}},
		{"-buildvcs=false says so", noVCS, Stamps{},
			Info{Version: Devel, Commit: NoVCS, GoVersion: "go1.26.8", Platform: "linux/amd64"}},
		{"a release build's stamps win", noVCS, Stamps{Version: "0.2.0", Commit: sha, CommitTime: "2026-12-05T11:05:18+01:00"},
			Info{Version: "0.2.0", Commit: sha, CommitTime: at, GoVersion: "go1.26.8", Platform: "linux/amd64"}},
		{"stamps over a changed tree's build info", vcs("v0.0.0-20261205100518-27e760e1a2b3+dirty", true), Stamps{Version: "v1.0.0-rc.1", Commit: "abc"},
			Info{Version: "1.0.0-rc.1", Commit: "abc", CommitTime: at, GoVersion: "go1.26.8", Platform: "linux/amd64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FromBuild(tc.bi, tc.s, "linux/amd64")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("FromBuild (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTagVersion(t *testing.T) {
	for v, want := range map[string]string{
		"v0.2.0": "0.2.0", "v1.0.0-rc.1": "1.0.0-rc.1", "(devel)": "", "": "", "v0.2.0+dirty": "",
		"v0.0.0-20261205100518-36d2fe540fe4": "", "v1.2.4-0.20261205100518-36d2fe540fe4": "",
		"v1.2.3-pre.0.20261205100518-36d2fe540fe4": "", "v1.2": "", "vx.y.z": "",
	} {
		got, ok := tagVersion(v)
		if got != want || ok != (want != "") {
			t.Errorf("tagVersion(%q) = %q, %v; want %q", v, got, ok, want)
		}
	}
}

func TestShortAndString(t *testing.T) {
	in := Info{Version: "0.2.0", Commit: sha, CommitTime: time.Date(2026, 12, 5, 10, 5, 18, 0, time.UTC), GoVersion: "go1.26.8", Platform: "linux/arm64"}
	if got, want := in.Short(), "0.2.0 (27e760e1a2b3)"; got != want {
		t.Errorf("Short = %q, want %q", got, want)
	}
	want := "mcpfleet 0.2.0\ncommit:      " + sha + "\ncommit time: 2026-12-05T10:05:18Z\ngo:          go1.26.8\nplatform:    linux/arm64\n"
	if got := in.String(); got != want {
		t.Errorf("String:\n%s\nwant:\n%s", got, want)
	}
	in.Modified = true
	if got, want := in.Short(), "0.2.0 (27e760e1a2b3, modified)"; got != want {
		t.Errorf("Short = %q, want %q", got, want)
	}
	none := Info{Version: Devel, Commit: NoVCS, GoVersion: "go1.26.8", Platform: "linux/amd64"}
	if got, want := none.Short(), "devel (commit not recorded)"; got != want {
		t.Errorf("Short = %q, want %q", got, want)
	}
	if s := none.String(); !strings.Contains(s, "-buildvcs=false") || strings.Contains(s, "commit time") {
		t.Errorf("String of a build without VCS stamps:\n%s", s)
	}
}

// TestBuiltBinary builds a program that prints Get() three ways: a plain
// build in a git checkout, one with -buildvcs=false, and a release build
// with -ldflags -X.
func TestBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three binaries")
	}
	for _, tool := range []string{"go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on PATH", tool)
		}
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The package's own source, copied into a module of its own: a
	// package under internal/ cannot be imported from another module.
	src, err := os.ReadFile("version.go")
	if err != nil {
		t.Fatal(err)
	}
	write("internal/version/version.go", string(src))
	write("go.mod", "module example.com/v\n\ngo 1.26\n")
	write("main.go", "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/v/internal/version\"\n)\n\nfunc main() { fmt.Print(version.Get()) }\n")
	write(".gitignore", "bin\n")
	run := func(env []string, name string, args ...string) string {
		t.Helper()
		c := exec.Command(name, args...)
		c.Dir = dir
		c.Env = append(os.Environ(), env...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gitEnv := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2026-12-05T10:05:18Z", "GIT_COMMITTER_DATE=2026-12-05T10:05:18Z", "GIT_CONFIG_GLOBAL=/dev/null"}
	run(gitEnv, "git", "init", "-q", ".")
	run(gitEnv, "git", "add", ".")
	run(gitEnv, "git", "commit", "-qm", "x")
	head := strings.TrimSpace(run(gitEnv, "git", "rev-parse", "HEAD"))
	build := func(out string, args ...string) string {
		t.Helper()
		run([]string{"GOFLAGS=", "GOWORK=off", "GOPROXY=off"}, "go", append(append([]string{"build", "-o", "bin/" + out}, args...), ".")...)
		return run(nil, filepath.Join(dir, "bin", out))
	}

	plain := build("plain", "-buildvcs=true")
	if !strings.HasPrefix(plain, "mcpfleet devel\ncommit:      "+head+"\ncommit time: 2026-12-05T10:05:18Z\n") {
		t.Errorf("a plain build says:\n%s\nwant devel, commit %s and its time", plain, head)
	}
	novcs := build("novcs", "-buildvcs=false")
	if !strings.HasPrefix(novcs, "mcpfleet devel\ncommit:      "+NoVCS+"\n") {
		t.Errorf("a -buildvcs=false build says:\n%s", novcs)
	}
	const pkg = "example.com/v/internal/version."
	release := build("release", "-buildvcs=false", "-ldflags=-X "+pkg+"version=0.2.0 -X "+pkg+"commit="+head+" -X "+pkg+"commitTime=2026-12-05T10:05:18Z")
	if !strings.HasPrefix(release, "mcpfleet 0.2.0\ncommit:      "+head+"\ncommit time: 2026-12-05T10:05:18Z\n") {
		t.Errorf("a release build says:\n%s", release)
	}
}

// Package version says which build of mcpfleet is running: its version,
// the commit it was built from and when that commit was made, the Go
// toolchain and the platform. A release build sets them with
// -ldflags -X (scripts/release.sh); any other build reads what the go
// command recorded in the binary (runtime/debug.BuildInfo and its vcs.*
// settings), and says "devel" rather than guess a version.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Set by a release build, e.g.
//
//	go build -ldflags "-X github.com/mcpfleet/mcpfleet/internal/version.version=0.2.0
//	  -X github.com/mcpfleet/mcpfleet/internal/version.commit=<sha>
//	  -X github.com/mcpfleet/mcpfleet/internal/version.commitTime=<RFC 3339>"
//
// Empty in any other build.
var (
	version    string
	commit     string
	commitTime string
)

// Devel is the version of a build that no release stamped.
const Devel = "devel"

// NoVCS is the Commit of a build whose go command recorded no VCS stamp:
// one made with -buildvcs=false (some machines set it in GOFLAGS), or
// outside a git checkout. The two cannot be told apart from the binary.
const NoVCS = "not recorded (built with -buildvcs=false or outside a git checkout)"

// Info is one build's identity.
type Info struct {
	// Version is the release's version (0.2.0), the module's tag when the
	// go command recorded one (go install ...@v0.2.0), or Devel.
	Version string `json:"version"`
	// Commit is the full commit hash, NoVCS when none was recorded.
	Commit string `json:"commit"`
	// CommitTime is the commit's time, zero when none was recorded.
	CommitTime time.Time `json:"commit_time,omitzero"`
	// Modified says the work tree had changes the commit does not hold.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary (go1.26.8).
	GoVersion string `json:"go_version"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get is the running binary's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return FromBuild(bi, Stamps{Version: version, Commit: commit, CommitTime: commitTime}, runtime.GOOS+"/"+runtime.GOARCH)
}

// Stamps are the values a release build sets with -ldflags -X; each one
// set wins over what the build info says.
type Stamps struct {
	Version, Commit, CommitTime string
}

// FromBuild is the Info of a binary whose go command recorded bi (nil
// when it recorded nothing) and whose release build set s, running on
// platform.
func FromBuild(bi *debug.BuildInfo, s Stamps, platform string) Info {
	in := Info{Version: Devel, Commit: NoVCS, GoVersion: runtime.Version(), Platform: platform}
	if bi != nil {
		in.GoVersion = bi.GoVersion
		if v, ok := tagVersion(bi.Main.Version); ok {
			in.Version = v
		}
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				in.Commit = kv.Value
			case "vcs.time":
				in.CommitTime, _ = time.Parse(time.RFC3339, kv.Value)
			case "vcs.modified":
				in.Modified = kv.Value == "true"
			}
		}
	}
	if s.Version != "" {
		in.Version = strings.TrimPrefix(s.Version, "v")
	}
	if s.Commit != "" {
		in.Commit, in.Modified = s.Commit, false
	}
	if s.CommitTime != "" {
		if t, err := time.Parse(time.RFC3339, s.CommitTime); err == nil {
			in.CommitTime = t
		}
	}
	in.CommitTime = in.CommitTime.UTC()
	return in
}

// tagVersion is v without its "v" when v is a tag's version (v0.2.0,
// v1.0.0-rc.1): not "(devel)", not a pseudo-version the go command makes
// up for an untagged commit (v0.0.0-20261205100518-36d2fe540fe4), and not
// a tag with changes on top (+dirty).
func tagVersion(v string) (string, bool) {
	if !strings.HasPrefix(v, "v") || strings.Contains(v, "+") || isPseudo(v) {
		return "", false
	}
	core, _, _ := strings.Cut(v[1:], "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return "", false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return "", false
		}
	}
	return v[1:], true
}

// isPseudo reports a Go pseudo-version: its last two dash- or
// dot-separated fields are a 14-digit UTC time and a 12-digit commit
// prefix (go.dev/ref/mod#pseudo-versions).
func isPseudo(v string) bool {
	i := strings.LastIndexByte(v, '-')
	if i < 15 || len(v)-i-1 != 12 {
		return false
	}
	ts := v[i-14 : i]
	sep := v[i-15]
	return (sep == '-' || sep == '.') && strings.Trim(ts, "0123456789") == ""
}

// Short is one line: the version and, when recorded, the commit's first
// 12 digits ("0.2.0 (27e760e1a2b3)", "devel (27e760e1a2b3, modified)",
// "devel (commit not recorded)").
func (in Info) Short() string {
	c := "commit not recorded"
	if in.Commit != NoVCS {
		c = in.Commit[:min(12, len(in.Commit))]
		if in.Modified {
			c += ", modified"
		}
	}
	return in.Version + " (" + c + ")"
}

// String is what mcpfleet version prints: one "name: value" line each.
func (in Info) String() string {
	var b strings.Builder
	b.WriteString("mcpfleet " + in.Version + "\n")
	c := in.Commit
	if in.Modified {
		c += " (modified: the work tree had changes)"
	}
	b.WriteString("commit:      " + c + "\n")
	if !in.CommitTime.IsZero() {
		b.WriteString("commit time: " + in.CommitTime.Format(time.RFC3339) + "\n")
	}
	b.WriteString("go:          " + in.GoVersion + "\n")
	b.WriteString("platform:    " + in.Platform + "\n")
	return b.String()
}

package license

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// self is mcpfleet's module.
const self = "github.com/mcpfleet/mcpfleet"

// needGo skips a test that runs go list when there is no go tool.
func needGo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool on PATH")
	}
}

// TestBinaryModulesAllowed: every module linked into mcpfleet, its own
// included, carries only licenses from Allowed, read from the module
// cache.
func TestBinaryModulesAllowed(t *testing.T) {
	needGo(t)
	mods, err := BuildList(context.Background(), "../..", "./cmd/mcpfleet")
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) < 10 || !slices.ContainsFunc(mods, func(m Module) bool { return m.Path == self }) {
		t.Fatalf("build list %v: want mcpfleet's module and its dependencies'", mods)
	}
	probs, err := Audit(mods, Allowed, Exceptions)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Errorf("%s %s (%s): %v", p.Module.Path, p.Module.Version, p.Module.Dir, p.Err)
	}
	own, err := Detect("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(own) != 1 || own[0].Name != "LICENSE" || strings.Join(own[0].IDs, ",") != "Apache-2.0" || own[0].Coverage < 99 {
		t.Errorf("mcpfleet's own license files: %+v; want LICENSE, the whole Apache-2.0 text", own)
	}
}

// TestAddedGPLModuleFails: a binary that links a module under the GPL
// (testdata/gpl, beside an MIT one) fails the audit, and only for it.
func TestAddedGPLModuleFails(t *testing.T) {
	needGo(t)
	mods, err := BuildList(context.Background(), "testdata/app", ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 3 {
		t.Fatalf("build list %+v: want app, gpl and mit", mods)
	}
	probs, err := Audit(mods, Allowed, Exceptions)
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || probs[0].Module.Path != "example.com/gpl" || !strings.Contains(probs[0].Err.Error(), "GPL-3.0 is not an allowed license") {
		t.Fatalf("problems %v: want example.com/gpl's GPL-3.0 alone", probs)
	}
}

// TestNoticeCarriesDependencies: the NOTICE file reproduces the NOTICE of
// every module in the binary that has one (Apache License 2.0, 4(d)).
func TestNoticeCarriesDependencies(t *testing.T) {
	needGo(t)
	mods, err := BuildList(context.Background(), "../..", "./cmd/mcpfleet")
	if err != nil {
		t.Fatal(err)
	}
	notice, err := os.ReadFile("../../NOTICE")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		if m.Path == self {
			continue
		}
		found, _ := filepath.Glob(filepath.Join(m.Dir, "NOTICE*"))
		if len(found) > 0 && !strings.Contains(string(notice), "\n"+m.Path+"\n") {
			t.Errorf("NOTICE lacks %s, whose %s asks to be carried", m.Path, filepath.Base(found[0]))
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []File
		want  string // "" for allowed, else a part of the error
	}{
		{"one allowed", []File{{Name: "LICENSE", IDs: []string{"MIT"}, Coverage: 100}}, ""},
		{"two allowed files", []File{{Name: "LICENSE", IDs: []string{"Apache-2.0"}, Coverage: 100}, {Name: "LICENSE-MIT", IDs: []string{"MIT"}, Coverage: 98}}, ""},
		{"none", nil, "no license file"},
		{"not allowed", []File{{Name: "COPYING", IDs: []string{"GPL-2.0"}, Coverage: 100}}, "GPL-2.0 is not an allowed license"},
		{"an allowed one beside one that is not", []File{{Name: "LICENSE", IDs: []string{"MIT", "AGPL-3.0"}, Coverage: 100}}, "AGPL-3.0"},
		{"a second file not allowed", []File{{Name: "LICENSE", IDs: []string{"MIT"}, Coverage: 100}, {Name: "LICENSE.docs", IDs: []string{"CC-BY-NC-4.0"}, Coverage: 100}}, "CC-BY-NC-4.0"},
		{"unknown text", []File{{Name: "LICENSE", Coverage: 0}}, "no known license"},
		{"known license with terms added", []File{{Name: "LICENSE", IDs: []string{"MIT"}, Coverage: 40}}, "only 40%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.files, Allowed)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestClassify: the classifier names whole texts by their SPDX id.
func TestClassify(t *testing.T) {
	for file, want := range map[string]string{"testdata/mit/LICENSE": "MIT", "testdata/gpl/LICENSE": "GPL-3.0", "../../LICENSE": "Apache-2.0"} {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if f := Classify("LICENSE", text); strings.Join(f.IDs, ",") != want || f.Coverage < 90 {
			t.Errorf("%s: %v at %.0f%%, want %s", file, f.IDs, f.Coverage, want)
		}
	}
	if f := Classify("LICENSE", []byte("All rights reserved. You may not copy this.")); len(f.IDs) != 0 {
		t.Errorf("a proprietary notice classified as %v", f.IDs)
	}
}

// TestExceptionIsNarrow: an exception lets its one license through for its
// one module, and nothing else.
func TestExceptionIsNarrow(t *testing.T) {
	ex := []Exception{{Module: "example.com/docs", ID: "CC-BY-4.0", Why: "documentation"}}
	files := []File{{Name: "LICENSE", IDs: []string{"Apache-2.0", "CC-BY-4.0"}, Coverage: 100}}
	if err := Check(files, allowedFor("example.com/docs", Allowed, ex)); err != nil {
		t.Errorf("excepted module: %v", err)
	}
	if err := Check(files, allowedFor("example.com/other", Allowed, ex)); err == nil {
		t.Error("another module with the same license passed")
	}
	gpl := []File{{Name: "LICENSE", IDs: []string{"GPL-3.0"}, Coverage: 100}}
	if err := Check(gpl, allowedFor("example.com/docs", Allowed, ex)); err == nil {
		t.Error("the excepted module passed with another license")
	}
	if len(Allowed) != 6 {
		t.Errorf("Allowed grew to %v: allowedFor must not append to it", Allowed)
	}
}

func TestIsLicenseFile(t *testing.T) {
	for name, want := range map[string]bool{
		"LICENSE": true, "LICENSE.txt": true, "license.md": true, "LICENCE": true, "COPYING": true,
		"LICENSE-MIT": true, "UNLICENSE": true, "LICENSES": false, "license.go": false, "NOTICE": false, "README.md": false,
	} {
		if got := isLicenseFile(name); got != want {
			t.Errorf("isLicenseFile(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestParseList(t *testing.T) {
	mods, err := parseList("a\tv1\t/m/a\n\na\tv1\t/m/a\nb\tv2\t/m/b\n")
	if err != nil || len(mods) != 2 || mods[1] != (Module{"b", "v2", "/m/b"}) {
		t.Errorf("parseList = %v, %v", mods, err)
	}
	if _, err := parseList("c\tv3\t\n"); err == nil || !strings.Contains(err.Error(), "no source directory") {
		t.Errorf("a module without source: %v", err)
	}
}

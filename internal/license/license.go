// Package license says which licenses the Go modules in a binary carry,
// and whether each is one the project may ship. The texts are classified
// by github.com/google/licensecheck, the Go team's classifier (the one
// pkg.go.dev uses to decide whether a module's source may be shown), so
// that a license is named by its SPDX identifier from its whole text, not
// guessed from its first line.
package license

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/licensecheck"
)

// Allowed are the SPDX identifiers of the licenses a module in mcpfleet's
// binary may carry: permissive ones, and MPL-2.0, whose copyleft covers
// only the files it licenses (a Go module's own, unchanged).
var Allowed = []string{"Apache-2.0", "MIT", "BSD-2-Clause", "BSD-3-Clause", "ISC", "MPL-2.0"}

// Exception lets one module's license file name a license outside
// Allowed, for a reason a person read in that file.
type Exception struct {
	// Module is the module's path; ID the SPDX identifier let through.
	Module, ID string
	// Why says what the license covers, and why that is not the code
	// linked into the binary.
	Why string
}

// Exceptions are the reviewed ones. Each names one module and one license:
// a new module, or a new license in a known one, is checked afresh.
var Exceptions = []Exception{
	{Module: "github.com/modelcontextprotocol/go-sdk", ID: "CC-BY-4.0",
		Why: "its LICENSE gives the code under Apache-2.0 (and MIT for contributions not yet relicensed) and the documentation, which no binary carries, under CC-BY-4.0"},
}

// allowedFor is Allowed and the licenses excepted for module path.
func allowedFor(path string, allowed []string, exceptions []Exception) []string {
	out := allowed
	for _, e := range exceptions {
		if e.Module == path {
			out = append(slices.Clip(out), e.ID)
		}
	}
	return out
}

// minCoverage is the share of a license file's words, in percent, that
// must be known license text: below it, the file adds terms the
// classifier does not know, and a person must read it. pkg.go.dev uses the
// same threshold.
const minCoverage = 75

// Module is one module of a build list.
type Module struct {
	Path, Version string
	// Dir is its source: the module cache's copy, or a replacement's
	// directory.
	Dir string
}

// File is one license file at a module's root and what it was found to be.
type File struct {
	// Name is the file's name in the module (LICENSE, COPYING.md).
	Name string
	// IDs are the SPDX identifiers found in it, in order.
	IDs []string
	// Coverage is the share of its words that are known license text, in
	// percent.
	Coverage float64
}

// ErrNoLicense is the verdict on a module without a license file at its
// root.
var ErrNoLicense = errors.New("no license file at the module's root")

// isLicenseFile reports whether a file at a module's root is one of its
// license files: LICENSE, LICENCE, COPYING, UNLICENSE, with or without an
// extension or suffix (LICENSE.txt, LICENSE-MIT, COPYING.md), but not
// Go source (license.go).
func isLicenseFile(name string) bool {
	if strings.HasSuffix(name, ".go") {
		return false
	}
	upper := strings.ToUpper(name)
	for _, p := range []string{"LICENSE", "LICENCE", "COPYING", "UNLICENSE"} {
		if rest, ok := strings.CutPrefix(upper, p); ok && (rest == "" || rest[0] == '.' || rest[0] == '-' || rest[0] == '_') {
			return true
		}
	}
	return false
}

// Detect reads and classifies the license files at dir's root.
func Detect(dir string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the module's directory: %w", err)
	}
	var files []File
	for _, e := range entries {
		if !e.Type().IsRegular() || !isLicenseFile(e.Name()) {
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", e.Name(), err)
		}
		files = append(files, Classify(e.Name(), text))
	}
	return files, nil
}

// Classify names the licenses in one file's text.
func Classify(name string, text []byte) File {
	cov := licensecheck.Scan(text)
	f := File{Name: name, Coverage: cov.Percent}
	for _, m := range cov.Match {
		if !slices.Contains(f.IDs, m.ID) {
			f.IDs = append(f.IDs, m.ID)
		}
	}
	return f
}

// Check is the verdict on one module's license files: nil when there is at
// least one, each is known text for the most part, and every license in
// each is allowed.
func Check(files []File, allowed []string) error {
	if len(files) == 0 {
		return ErrNoLicense
	}
	var errs []error
	for _, f := range files {
		switch {
		case len(f.IDs) == 0:
			errs = append(errs, fmt.Errorf("%s: no known license in it", f.Name))
		case f.Coverage < minCoverage:
			errs = append(errs, fmt.Errorf("%s: %s, but only %.0f%% of it is known license text (at least %d%%): read the rest", f.Name, strings.Join(f.IDs, ", "), f.Coverage, minCoverage))
		}
		for _, id := range f.IDs {
			if !slices.Contains(allowed, id) {
				errs = append(errs, fmt.Errorf("%s: %s is not an allowed license (%s)", f.Name, id, strings.Join(allowed, ", ")))
			}
		}
	}
	return errors.Join(errs...)
}

// Problem is a module whose licenses Check refused.
type Problem struct {
	Module Module
	Err    error
}

// Audit detects and checks every module of mods against allowed and the
// exceptions, and returns the problems sorted by module path.
func Audit(mods []Module, allowed []string, exceptions []Exception) ([]Problem, error) {
	var probs []Problem
	for _, m := range mods {
		files, err := Detect(m.Dir)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", m.Path, m.Version, err)
		}
		if err := Check(files, allowedFor(m.Path, allowed, exceptions)); err != nil {
			probs = append(probs, Problem{m, err})
		}
	}
	slices.SortFunc(probs, func(a, b Problem) int { return cmp.Compare(a.Module.Path, b.Module.Path) })
	return probs, nil
}

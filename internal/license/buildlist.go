package license

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// BuildList is the modules whose packages the main package pkg links,
// pkg's own module included, as go list sees them from dir: the binary's
// build list, what go version -m of the built binary prints. Every
// module's source must be in the module cache or replaced by a directory;
// nothing is downloaded (GOFLAGS=-mod=mod is not set, GOPROXY=off).
func BuildList(ctx context.Context, dir, pkg string) ([]Module, error) {
	c := exec.CommandContext(ctx, "go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}", pkg)
	c.Dir = dir
	c.Env = append(c.Environ(), "GOPROXY=off", "GOWORK=off")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %w: %s", pkg, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return parseList(string(out))
}

// parseList reads go list's lines of path, version and directory, one
// per package, into one Module per path.
func parseList(out string) ([]Module, error) {
	var mods []Module
	for line := range strings.Lines(out) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue // a standard library package
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[0] == "" {
			return nil, fmt.Errorf("go list line %q: want path, version and directory", line)
		}
		if f[2] == "" {
			return nil, fmt.Errorf("module %s %s: no source directory (not in the module cache?)", f[0], f[1])
		}
		m := Module{Path: f[0], Version: f[1], Dir: f[2]}
		if !slices.Contains(mods, m) {
			mods = append(mods, m)
		}
	}
	return mods, nil
}

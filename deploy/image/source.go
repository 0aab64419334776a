package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// rootModule is the module whose cmd/mcpfleet the image carries.
const rootModule = "github.com/mcpfleet/mcpfleet"

// source is what the image says about the tree it was built from.
type source struct {
	// dir is the root module's directory.
	dir string
	// version is 'git describe --tags --always', with "-dirty" when the
	// work tree has changes; "dev" without git.
	version string
	// revision is the commit, "" without git.
	revision string
	// created is SOURCE_DATE_EPOCH if set, else the commit's time, else the
	// Unix epoch: never the clock, so that a tree builds the same image.
	created time.Time
	// licenses is the SPDX id of the root's LICENSE, "" if none is known.
	licenses string
}

// findRoot walks up from dir to the directory of the root module's go.mod.
func findRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if modulePath(filepath.Join(dir, "go.mod")) == rootModule {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory; pass --src", rootModule)
		}
		dir = parent
	}
}

// modulePath returns the module path a go.mod declares, "" if it cannot be
// read.
func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`)
		}
	}
	return ""
}

// readSource describes the tree at dir. Git is asked read-only (no optional
// locks), so a build never competes with a commit for the index.
func readSource(ctx context.Context, dir string) (source, error) {
	s := source{dir: dir, version: "dev", created: time.Unix(0, 0).UTC()}
	if out, err := git(ctx, dir, "describe", "--tags", "--always"); err == nil {
		s.version = out
		if status, err := git(ctx, dir, "status", "--porcelain"); err == nil && status != "" {
			s.version += "-dirty"
		}
		s.revision, _ = git(ctx, dir, "rev-parse", "HEAD")
		if ct, err := git(ctx, dir, "log", "-1", "--format=%ct"); err == nil {
			if sec, err := strconv.ParseInt(ct, 10, 64); err == nil {
				s.created = time.Unix(sec, 0).UTC()
			}
		}
	}
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		sec, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return source{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: not a number of seconds", epoch)
		}
		s.created = time.Unix(sec, 0).UTC()
	}
	if text, err := os.ReadFile(filepath.Join(dir, "LICENSE")); err == nil {
		s.licenses = spdxID(string(text))
	}
	return s, nil
}

// git runs a read-only git command in dir and returns its trimmed output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	c := exec.CommandContext(ctx, "git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := c.Output()
	return strings.TrimSpace(string(out)), err
}

// spdxID recognises the licenses whose text names them in its first lines;
// any other text gets "", and no label is better than a wrong one.
func spdxID(text string) string {
	head := text[:min(len(text), 400)]
	switch {
	case strings.Contains(head, "Apache License") && strings.Contains(head, "Version 2.0"):
		return "Apache-2.0"
	case strings.Contains(head, "MIT License"):
		return "MIT"
	}
	return ""
}

// versionPkg is the package whose variables a release build sets with
// -ldflags -X (mcpfleet version).
const versionPkg = rootModule + "/internal/version"

// stamps are the -X flags that tell the binary its commit and the commit's
// time, and with release its version too (else it says devel); none
// without git. scripts/release.sh gives its binaries the same, in the
// same order, so that its linux binaries and the image's are alike.
func (s source) stamps(release bool) []string {
	var x []string
	if release {
		x = append(x, "-X", versionPkg+".version="+s.version)
	}
	if s.revision != "" {
		x = append(x, "-X", versionPkg+".commit="+s.revision,
			"-X", versionPkg+".commitTime="+s.created.Format(time.RFC3339))
	}
	return x
}

// compile builds cmd/mcpfleet of src for linux/arch into dir and returns
// the binary's path: static (no cgo), without symbols or local paths, and
// without VCS stamps (the commit comes in stamps, -X flags), so the same
// tree gives the same bytes.
func compile(ctx context.Context, src, arch, dir string, stamps []string) (string, error) {
	bin := filepath.Join(dir, "mcpfleet")
	ldflags := strings.Join(append([]string{"-s", "-w"}, stamps...), " ")
	c := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags="+ldflags, "-o", bin, "./cmd/mcpfleet")
	c.Dir = src
	// Later entries win: these override the caller's environment.
	c.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOWORK=off")
	if out, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cmd/mcpfleet for linux/%s: %w\n%s", arch, err, bytes.TrimSpace(out))
	}
	return bin, nil
}

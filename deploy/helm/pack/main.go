// Command pack packages the mcpfleet Helm chart for a release, as
// helm package --version V --app-version V does, but byte for byte the
// same for the same chart, version and time: Helm's own packager
// (chartutil.Save) stamps every file with the clock, so its archive is
// rewritten here with one fixed time, owner root and sorted-by-Helm order.
// See docs/RELEASING.md.
//
//	cd deploy/helm && go run ./pack --version 0.2.0 --mtime 1764930318 --out DIR
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run packages the chart and returns the exit code: 0, 2 for bad usage, 1
// for a failure.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	chart := fs.String("chart", "mcpfleet", "the chart's `directory`")
	version := fs.String("version", "", "the chart's version and appVersion (required), e.g. 0.2.0")
	mtime := fs.String("mtime", "", "every file's time, in Unix `seconds` (default SOURCE_DATE_EPOCH, else 0)")
	out := fs.String("out", ".", "the `directory` to write NAME-VERSION.tgz to")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *mtime == "" {
		*mtime = os.Getenv("SOURCE_DATE_EPOCH")
	}
	at, err := parseEpoch(*mtime)
	if err != nil || *version == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pack: --version V is required, --mtime is Unix seconds, no arguments (%v)\n", err)
		return 2
	}
	path, err := Pack(*chart, *version, at, *out)
	if err != nil {
		fmt.Fprintf(stderr, "pack: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, path)
	return 0
}

// parseEpoch reads Unix seconds; "" is the epoch itself.
func parseEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: not a number of seconds", s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// Pack loads the chart at dir (its .helmignore applied), sets its version
// and appVersion to version (the image tag defaults to appVersion), and
// writes NAME-VERSION.tgz to out with every file's time at, returning its
// path.
func Pack(dir, version string, at time.Time, out string) (string, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return "", fmt.Errorf("loading the chart: %w", err)
	}
	ch.Metadata.Version = version
	ch.Metadata.AppVersion = version
	tmp, err := os.MkdirTemp("", "mcpfleet-pack-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	helmTgz, err := chartutil.Save(ch, tmp)
	if err != nil {
		return "", fmt.Errorf("packaging the chart: %w", err)
	}
	data, err := os.ReadFile(helmTgz)
	if err != nil {
		return "", err
	}
	fixed, err := normalize(data, at)
	if err != nil {
		return "", fmt.Errorf("rewriting %s: %w", filepath.Base(helmTgz), err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(out, filepath.Base(helmTgz))
	return path, os.WriteFile(path, fixed, 0o644)
}

// normalize rewrites a chart archive of Helm's with every file's time at,
// owned by uid and gid 0 without names, mode 0644, in Helm's order, and
// the gzip header Helm writes (its Extra and Comment, no name, no time).
func normalize(tgz []byte, at time.Time) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	zw.Header = gzip.Header{Extra: zr.Header.Extra, Comment: zr.Header.Comment, OS: 255}
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%s: not a regular file", h.Name)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: h.Name, Mode: 0o644, Size: int64(len(body)),
			ModTime: at, Format: tar.FormatUSTAR}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

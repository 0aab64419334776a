package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// TestPackIsReproducible: the same chart, version and time give the same
// bytes, whatever the clock says, and every entry has the fixed time and
// root as its owner.
func TestPackIsReproducible(t *testing.T) {
	at := time.Unix(1764930318, 0).UTC()
	a, err := Pack("../mcpfleet", "9.8.7", at, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // Helm's own packager would stamp a later second
	b, err := Pack("../mcpfleet", "9.8.7", at, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(a) != "mcpfleet-9.8.7.tgz" {
		t.Errorf("archive named %s, want mcpfleet-9.8.7.tgz", filepath.Base(a))
	}
	da, db := must(os.ReadFile(a)), must(os.ReadFile(b))
	if !bytes.Equal(da, db) {
		t.Fatal("two packs of one chart differ")
	}
	zr := must(gzip.NewReader(bytes.NewReader(da)))
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header has time %v, name %q", zr.ModTime, zr.Name)
	}
	tr := tar.NewReader(zr)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !h.ModTime.Equal(at) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Mode != 0o644 || !strings.HasPrefix(h.Name, "mcpfleet/") {
			t.Errorf("entry %s: time %v, owner %d:%d %q, mode %o", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Mode)
		}
	}
	if n < 10 {
		t.Errorf("%d entries: want the chart's every file", n)
	}
}

// TestPackedChartRunsItsVersion: the packed chart's version and appVersion
// are the release's, and its pods run the image tagged appVersion.
func TestPackedChartRunsItsVersion(t *testing.T) {
	path, err := Pack("../mcpfleet", "9.8.7", time.Unix(0, 0), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != "9.8.7" || ch.Metadata.AppVersion != "9.8.7" {
		t.Errorf("version %q, appVersion %q; want 9.8.7 both", ch.Metadata.Version, ch.Metadata.AppVersion)
	}
	top, err := chartutil.ToRenderValues(ch, map[string]any{}, chartutil.ReleaseOptions{Name: "mcpfleet", Namespace: "default", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		t.Fatal(err)
	}
	deploy := files["mcpfleet/templates/deployment.yaml"]
	if !strings.Contains(deploy, "image: ghcr.io/mcpfleet/mcpfleet:9.8.7\n") {
		t.Errorf("the gateway's deployment does not run image ghcr.io/mcpfleet/mcpfleet:9.8.7:\n%s", deploy)
	}
}

func TestParseEpoch(t *testing.T) {
	if at, err := parseEpoch("1764930318"); err != nil || at.Unix() != 1764930318 {
		t.Errorf("parseEpoch = %v, %v", at, err)
	}
	if at, err := parseEpoch(""); err != nil || at.Unix() != 0 {
		t.Errorf("parseEpoch(\"\") = %v, %v", at, err)
	}
	if _, err := parseEpoch("yesterday"); err == nil {
		t.Error("parseEpoch(yesterday) passed")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

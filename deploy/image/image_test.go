package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// maxImageBytes bounds the image unpacked (its layers' tar streams, what
// 'docker images' shows). Measured: 23.3 MiB, nearly all of it the binary.
const maxImageBytes = 40 << 20

// secretName is what a file, ENV or ARG that carries a secret tends to be
// called.
var secretName = regexp.MustCompile(`(?i)(key|secret|token|password|credential|\.pem$|id_rsa)`)

// scratch is the tests' directory, removed after them.
var scratch string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpfleet-image-test-")
	if err != nil {
		panic(err)
	}
	scratch = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildOnce holds the image every test inspects, built once.
var buildOnce struct {
	sync.Once
	layout, archive, stdout string
	err                     error
}

// builtImage builds the image as 'go run . --out DIR --tar FILE' does
// (compiling cmd/mcpfleet takes a while the first time) and opens it from
// the layout.
func builtImage(t *testing.T) v1.Image {
	t.Helper()
	b := &buildOnce
	b.Do(func() {
		b.layout, b.archive = filepath.Join(scratch, "layout"), filepath.Join(scratch, "image.tar")
		b.stdout, b.err = buildImage(b.layout, "--tar", b.archive)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return openLayout(t, b.layout)
}

// buildImage runs the builder with --out dir and more flags.
func buildImage(dir string, more ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append([]string{"--out", dir}, more...), &stdout, &stderr); code != 0 {
		return "", fmt.Errorf("the builder exited %d: %s", code, stderr.String())
	}
	return stdout.String(), nil
}

// openLayout returns the one image of the OCI layout at dir.
func openLayout(t *testing.T, dir string) v1.Image {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("the layout holds %d manifests, want 1", len(m.Manifests))
	}
	img, err := p.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// file is one entry of a layer, with its bytes.
type file struct {
	hdr  *tar.Header
	data []byte
}

// imageFiles lists every entry of every layer, in order.
func imageFiles(t *testing.T, img v1.Image) []file {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var files []file
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, file{h, data})
		}
		rc.Close()
	}
	return files
}

// TestImageConfig checks what a runtime reads from the image: who runs,
// what, on which ports, with which health check.
func TestImageConfig(t *testing.T) {
	cf, err := builtImage(t).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if c.User != "65532:65532" {
		t.Errorf("User %q, want 65532:65532", c.User)
	}
	if diff := cmp.Diff([]string{"/mcpfleet"}, c.Entrypoint); diff != "" {
		t.Errorf("Entrypoint (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"serve", "--config", "/etc/mcpfleet/mcpfleet.yaml"}, c.Cmd); diff != "" {
		t.Errorf("Cmd (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}}, c.ExposedPorts); diff != "" {
		t.Errorf("ExposedPorts (-want +got):\n%s", diff)
	}
	if c.Healthcheck == nil || !slices.Equal(c.Healthcheck.Test, []string{"CMD", "/mcpfleet", "health"}) ||
		c.Healthcheck.Interval.String() != "10s" || c.Healthcheck.Timeout.String() != "3s" {
		t.Errorf("Healthcheck %+v, want CMD /mcpfleet health every 10s, timeout 3s", c.Healthcheck)
	}
	for _, e := range c.Env {
		if k, _, _ := strings.Cut(e, "="); secretName.MatchString(k) {
			t.Errorf("Env %s looks like a secret", k)
		}
	}
	if len(c.Env) != 0 || len(c.Volumes) != 0 || len(c.Shell) != 0 || len(c.OnBuild) != 0 {
		t.Errorf("Env %q, Volumes %v, Shell %q, OnBuild %q: want none", c.Env, c.Volumes, c.Shell, c.OnBuild)
	}
	for _, k := range []string{"title", "source", "version", "created", "description"} {
		if c.Labels["org.opencontainers.image."+k] == "" {
			t.Errorf("label org.opencontainers.image.%s missing: %v", k, c.Labels)
		}
	}
}

// TestImageFiles lists every file of every layer and checks it against the
// layout the image promises: root owns everything, nothing is setuid or
// writable by anyone else, nothing looks like a secret, and nothing is there
// that was not meant to be.
func TestImageFiles(t *testing.T) {
	files := imageFiles(t, builtImage(t))
	want := map[string]int64{
		"etc/": 0o755, "etc/mcpfleet/": 0o755, "etc/ssl/": 0o755, "etc/ssl/certs/": 0o755,
		"etc/passwd": 0o444, "etc/group": 0o444, "etc/ssl/certs/ca-certificates.crt": 0o444,
		"mcpfleet": 0o555,
	}
	got := map[string]int64{}
	for _, f := range files {
		h := f.hdr
		t.Logf("%s %4o %d:%d %9d %s", map[byte]string{tar.TypeDir: "d", tar.TypeReg: "-"}[h.Typeflag], h.Mode, h.Uid, h.Gid, h.Size, h.Name)
		got[h.Name] = h.Mode
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir {
			t.Errorf("%s: type %q, want only regular files and directories", h.Name, h.Typeflag)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: owned by %d:%d, want root", h.Name, h.Uid, h.Gid)
		}
		if h.Mode&0o7000 != 0 {
			t.Errorf("%s: mode %o has setuid, setgid or sticky", h.Name, h.Mode)
		}
		if h.Mode&0o022 != 0 {
			t.Errorf("%s: mode %o is writable by group or others", h.Name, h.Mode)
		}
		if h.Name != caBundlePath[1:] && secretName.MatchString(h.Name) {
			t.Errorf("%s looks like a secret", h.Name)
		}
		if strings.HasPrefix(filepath.Base(h.Name), ".wh.") {
			t.Errorf("%s: a whiteout", h.Name)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files and modes (-want +got):\n%s", diff)
	}
	byName := map[string][]byte{}
	for _, f := range files {
		byName[f.hdr.Name] = f.data
	}
	if !strings.Contains(string(byName["etc/passwd"]), "\nnonroot:x:65532:65532:") ||
		!strings.Contains(string(byName["etc/group"]), "\nnonroot:x:65532:") {
		t.Errorf("passwd %q, group %q: want nonroot as 65532:65532", byName["etc/passwd"], byName["etc/group"])
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(byName[caBundlePath[1:]]) || len(byName[caBundlePath[1:]]) < 50_000 {
		t.Errorf("%s (%d bytes) is not a CA bundle", caBundlePath, len(byName[caBundlePath[1:]]))
	}
}

// TestImageSize bounds the image and reports what it weighs.
func TestImageSize(t *testing.T) {
	img := builtImage(t)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 2 {
		t.Errorf("%d layers, want 2 (/etc files, the binary)", len(layers))
	}
	var unpacked, compressed int64
	for _, f := range imageFiles(t, img) {
		unpacked += f.hdr.Size
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		compressed += n
	}
	t.Logf("files %.1f MiB, layers %.1f MiB compressed; the builder said: %s",
		float64(unpacked)/(1<<20), float64(compressed)/(1<<20), strings.TrimSpace(buildOnce.stdout))
	if unpacked > maxImageBytes {
		t.Errorf("files weigh %d bytes, more than the bound %d", unpacked, maxImageBytes)
	}
}

// extractBinary writes the image's /mcpfleet to a temporary file.
func extractBinary(t *testing.T) string {
	t.Helper()
	for _, f := range imageFiles(t, builtImage(t)) {
		if f.hdr.Name == binaryPath[1:] {
			bin := filepath.Join(t.TempDir(), "mcpfleet")
			if err := os.WriteFile(bin, f.data, 0o555); err != nil {
				t.Fatal(err)
			}
			return bin
		}
	}
	t.Fatal("no /mcpfleet in the image")
	return ""
}

// TestImageBinaryStatic checks that the binary in the layer needs nothing
// from the image: an ELF with no interpreter and no dynamic section, which
// FROM scratch requires.
func TestImageBinaryStatic(t *testing.T) {
	f, err := elf.Open(extractBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		t.Errorf("ELF type %v, want ET_EXEC (static, not position-independent)", f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("program header %v: the binary is dynamically linked", p.Type)
		}
	}
	if s := f.Section(".dynamic"); s != nil {
		t.Error("a .dynamic section: the binary is dynamically linked")
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("imports libraries %q", libs)
	}
}

// TestImageBinaryRuns runs the binary taken out of the layer: its help, and
// the health check the image's HEALTHCHECK runs.
func TestImageBinaryRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary runs on linux only")
	}
	bin := extractBinary(t)
	out, err := exec.Command(bin, "help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "serve") || !strings.Contains(string(out), "health") {
		t.Errorf("mcpfleet help: %v\n%s", err, out)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	if out, err := exec.Command(bin, "health", srv.URL+"/healthz").CombinedOutput(); err != nil {
		t.Errorf("mcpfleet health on a 200: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "health", srv.URL+"/nothing").CombinedOutput(); err == nil {
		t.Errorf("mcpfleet health on a 404 passed:\n%s", out)
	}
}

// TestImageReproducible builds the image a second time from the same tree:
// same digest. The archive written with the first build holds the same
// image, under its tag.
func TestImageReproducible(t *testing.T) {
	first, err := builtImage(t).Digest()
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(scratch, "again")
	if _, err := buildImage(again); err != nil {
		t.Fatal(err)
	}
	second, err := openLayout(t, again).Digest()
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Errorf("two builds of one tree: %s and %s", first, second)
	}
	archived, err := tarball.ImageFromPath(buildOnce.archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := archived.Digest(); err != nil || d != first {
		t.Errorf("the archive's image is %s (%v), the layout's %s", d, err, first)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(buildOnce.archive) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 || !strings.HasPrefix(m[0].RepoTags[0], "mcpfleet:") {
		t.Errorf("archive manifest %+v: want one image tagged mcpfleet:VERSION", m)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/mcpfleet/mcpfleet/internal/version"
)

// TestVersionCommand: mcpfleet version and mcpfleet --version print the
// build's identity to stdout and exit 0.
func TestVersionCommand(t *testing.T) {
	want := version.Get().String()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 0 || out.String() != want || errb.Len() != 0 {
			t.Errorf("mcpfleet %s: exit %d, stdout %q, stderr %q; want 0 and %q", args[0], code, out.String(), errb.String(), want)
		}
	}
	var errb bytes.Buffer
	if code := run(context.Background(), []string{"version", "extra"}, io.Discard, &errb); code != 2 {
		t.Errorf("mcpfleet version extra: exit %d (%s), want 2", code, errb.String())
	}
}

// TestBuildShownAlike: the serve start line, /api/fleet and
// mcpfleet_build_info name the build as mcpfleet version does.
func TestBuildShownAlike(t *testing.T) {
	in := version.Get()
	backend := testproc.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	backendDone := make(chan int)
	go func() {
		backendDone <- run(ctx, []string{"testserver", "--listen", backend, "--name", "a"}, io.Discard, io.Discard)
	}()
	defer func() { cancel(); <-backendDone }()
	addr, adm := testproc.FreeAddr(t), testproc.FreeAddr(t)
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	var errb lockedBuffer
	served := make(chan int)
	go func() {
		served <- run(sctx, []string{"serve", "--listen", addr, "--admin", adm, "--upstream", "http://" + backend + "/mcp"}, io.Discard, &errb)
	}()
	testproc.WaitReady(t, "http://"+addr+"/readyz")

	var fleet admin.Fleet
	if err := json.Unmarshal(getOK(t, "http://"+adm+"/api/fleet"), &fleet); err != nil {
		t.Fatal(err)
	}
	if fleet.Gateway.Version != in.Short() {
		t.Errorf("/api/fleet gateway.version %q, want %q", fleet.Gateway.Version, in.Short())
	}
	if diff := cmp.Diff(&in, fleet.Gateway.Build); diff != "" {
		t.Errorf("/api/fleet gateway.build (-want +got):\n%s", diff)
	}
	metric := `mcpfleet_build_info{commit="` + in.Commit + `",goversion="` + in.GoVersion + `",version="` + in.Version + `"} 1` + "\n"
	if m := getOK(t, "http://"+adm+"/metrics"); !bytes.Contains(m, []byte(metric)) {
		t.Errorf("/metrics lacks %s", metric)
	}
	stop()
	if code := <-served; code != 0 {
		t.Fatalf("serve exit %d: %s", code, errb.String())
	}
	for l := range strings.Lines(errb.String()) {
		var m struct{ Msg, Version, Commit string }
		if json.Unmarshal([]byte(l), &m) == nil && m.Msg == "gateway listening" {
			if m.Version != in.Version || m.Commit != in.Commit {
				t.Errorf("start line names version %q commit %q, want %q %q", m.Version, m.Commit, in.Version, in.Commit)
			}
			return
		}
	}
	t.Errorf("no start line in:\n%s", errb.String())
}

// getOK returns the body of a GET of u that must answer 200.
func getOK(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", u, resp.StatusCode, err, b)
	}
	return b
}

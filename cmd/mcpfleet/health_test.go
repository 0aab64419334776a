package main

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// TestHealthCommand runs 'mcpfleet health' against a live server: only a
// 200 passes, every failure is exit 1 with one line that says why, and
// anything but an http(s) URL is a usage error.
func TestHealthCommand(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("health sent %s, want GET", r.Method)
		}
		w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("/draining", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("{\"status\":\"draining\"}\n"))
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/healthz", http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	refused := "http://" + testproc.RefusedAddr(t) + "/healthz"

	tests := []struct {
		name string
		args []string
		code int
		want string // in stdout when code is 0, else in stderr
	}{
		{"200 is healthy", []string{srv.URL + "/healthz"}, 0, "200 OK"},
		{"flag before the URL", []string{"--timeout", "1s", srv.URL + "/healthz"}, 0, "200 OK"},
		{"503 fails with the body", []string{srv.URL + "/draining"}, 1, `503 Service Unavailable "{\"status\":\"draining\"}"`},
		{"404 fails", []string{srv.URL + "/nothing"}, 1, "404 Not Found"},
		{"a redirect is not followed", []string{srv.URL + "/moved"}, 1, "302 Found"},
		{"connection refused fails", []string{refused}, 1, "connection refused"},
		{"timeout fails", []string{"--timeout", "100ms", srv.URL + "/slow"}, 1, "deadline exceeded"},
		{"ftp URL", []string{"ftp://127.0.0.1/healthz"}, 2, "scheme must be http or https"},
		{"no scheme", []string{"127.0.0.1:8080/healthz"}, 2, "health URL"},
		{"no host", []string{"http:///healthz"}, 2, "has no host"},
		{"two URLs", []string{srv.URL, srv.URL}, 2, "unexpected argument"},
		{"zero timeout", []string{"--timeout", "0s", srv.URL + "/healthz"}, 2, "--timeout"},
		{"unknown flag", []string{"--cacert", "ca.pem", srv.URL}, 2, "unknown flag --cacert"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, context.Background(), append([]string{"health"}, tt.args...)...)
			got := stderr
			if tt.code == 0 {
				got = stdout
			}
			if code != tt.code || !strings.Contains(got, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d mentioning %q", code, stdout, stderr, tt.code, tt.want)
			}
			if code == 1 && strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") != 0 {
				t.Errorf("stderr %q is more than one line", stderr)
			}
		})
	}
}

// TestHealthTLS checks an https URL: verified against --ca-file's
// certificates alone, for the URL's host, or not at all with --insecure;
// without either, against the system's roots, which do not hold the test
// server's certificate. Flags for TLS with an http URL, and CA files that
// give no certificate, are usage errors.
func TestHealthTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// httptest's certificate names 127.0.0.1 and example.com, not localhost.
	ca := write("ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	other := newTestCert(t, 1)
	otherCA := write("other.pem", other.certPEM)
	keyOnly := write("key.pem", other.keyPEM)
	missing := filepath.Join(dir, "none.pem")
	healthz := srv.URL + "/healthz"
	byName := strings.Replace(healthz, "127.0.0.1", "localhost", 1)

	tests := []struct {
		name string
		args []string
		code int
		want string // in stdout when code is 0, else in stderr
	}{
		{"ca-file", []string{"--ca-file", ca, healthz}, 0, "200 OK"},
		{"system roots", []string{healthz}, 1, "certificate"},
		{"another ca-file", []string{"--ca-file", otherCA, healthz}, 1, "certificate"},
		{"a name the certificate lacks", []string{"--ca-file", ca, byName}, 1, "not localhost"},
		{"insecure", []string{"--insecure", healthz}, 0, "200 OK"},
		{"insecure, a name the certificate lacks", []string{"--insecure", byName}, 0, "200 OK"},
		{"ca-file with http", []string{"--ca-file", ca, "http://127.0.0.1:8080/healthz"}, 2, `--ca-file is for an https URL, not "http://127.0.0.1:8080/healthz"`},
		{"ca-file with the default URL", []string{"--ca-file", ca}, 2, "--ca-file is for an https URL"},
		{"insecure with http", []string{"--insecure", "http://127.0.0.1:8080/healthz"}, 2, "--insecure is for an https URL"},
		{"both", []string{"--ca-file", ca, "--insecure", healthz}, 2, "give one, not both"},
		{"missing ca-file", []string{"--ca-file", missing, healthz}, 2, "--ca-file: open " + missing},
		{"ca-file without a certificate", []string{"--ca-file", keyOnly, healthz}, 2, "--ca-file " + keyOnly + ": no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, context.Background(), append([]string{"health"}, tt.args...)...)
			got := stderr
			if tt.code == 0 {
				got = stdout
			}
			if code != tt.code || !strings.Contains(got, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d mentioning %q", code, stdout, stderr, tt.code, tt.want)
			}
			if code == 0 && stdout != tt.args[len(tt.args)-1]+": 200 OK\n" {
				t.Errorf("stdout %q, want the URL and the status alone", stdout)
			}
			if code == 1 && strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") != 0 {
				t.Errorf("stderr %q is more than one line", stderr)
			}
		})
	}
}

// TestHealthUsage shows the command in mcpfleet's usage and its own help.
func TestHealthUsage(t *testing.T) {
	if _, stdout, _ := runCmd(t, context.Background(), "help"); !strings.Contains(stdout, "\n  health ") {
		t.Errorf("usage lacks the health command:\n%s", stdout)
	}
	code, stdout, _ := runCmd(t, context.Background(), "health", "-h")
	if code != 0 || !strings.Contains(stdout, defaultHealthURL) || !strings.Contains(stdout, "--timeout") ||
		!strings.Contains(stdout, "--ca-file") || !strings.Contains(stdout, "--insecure") {
		t.Errorf("health -h: exit %d, stdout %q", code, stdout)
	}
}

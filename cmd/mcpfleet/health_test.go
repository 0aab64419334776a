package main

import (
	"context"
	"net/http"
	"net/http/httptest"
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
	refused := "http://" + testproc.FreeAddr(t) + "/healthz"

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
		{"unknown flag", []string{"--insecure", srv.URL}, 2, "flag provided but not defined"},
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

// TestHealthUsage shows the command in mcpfleet's usage and its own help.
func TestHealthUsage(t *testing.T) {
	if _, stdout, _ := runCmd(t, context.Background(), "help"); !strings.Contains(stdout, "\n  health ") {
		t.Errorf("usage lacks the health command:\n%s", stdout)
	}
	code, _, stderr := runCmd(t, context.Background(), "health", "-h")
	if code != 0 || !strings.Contains(stderr, defaultHealthURL) || !strings.Contains(stderr, "-timeout") {
		t.Errorf("health -h: exit %d, stderr %q", code, stderr)
	}
}

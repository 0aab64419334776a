package testserver

import (
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// healthReply is what a /health or other non-MCP response said.
type healthReply struct {
	Status       int
	ContentType  string
	CacheControl string
	Body         string
}

// get sends a request with method to url and returns the reply.
func get(t *testing.T, method, url string) healthReply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s %s: %v", method, url, err)
	}
	return healthReply{
		Status:       resp.StatusCode,
		ContentType:  resp.Header.Get("Content-Type"),
		CacheControl: resp.Header.Get("Cache-Control"),
		Body:         string(body),
	}
}

var (
	healthOK       = healthReply{http.StatusOK, "application/json", "no-store", "{\"status\":\"ok\",\"running\":0,\"queued\":0}\n"}
	healthDraining = healthReply{http.StatusServiceUnavailable, "application/json", "no-store", "{\"status\":\"draining\",\"running\":0,\"queued\":0}\n"}
)

// TestHealthTurnsDraining checks /health before and after SetDraining.
func TestHealthTurnsDraining(t *testing.T) {
	s, base := startServer(t, "replica-i", EraBoth)
	if diff := cmp.Diff(healthOK, get(t, http.MethodGet, base+"/health")); diff != "" {
		t.Errorf("/health before draining (-want +got):\n%s", diff)
	}
	s.SetDraining()
	for range 2 { // and it stays draining
		if diff := cmp.Diff(healthDraining, get(t, http.MethodGet, base+"/health")); diff != "" {
			t.Errorf("/health after SetDraining (-want +got):\n%s", diff)
		}
	}
}

// TestHealthMethodsAndPaths checks methods on /health and that paths other
// than /mcp and /health are 404.
func TestHealthMethodsAndPaths(t *testing.T) {
	_, base := startServer(t, "replica-j", EraBoth)
	tests := []struct {
		method, path string
		wantStatus   int
	}{
		{http.MethodGet, "/health", http.StatusOK},
		{http.MethodHead, "/health", http.StatusOK},
		{http.MethodPost, "/health", http.StatusMethodNotAllowed},
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodGet, "/healthz", http.StatusNotFound},
		{http.MethodGet, "/health/x", http.StatusNotFound},
		{http.MethodPost, "/mcp/", http.StatusNotFound},
		{http.MethodPost, "/other", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			if got := get(t, tt.method, base+tt.path).Status; got != tt.wantStatus {
				t.Errorf("status %d, want %d", got, tt.wantStatus)
			}
		})
	}
}

package testserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestResourceMetadata: with ResourceMetadata the root and path-suffixed
// protected-resource documents name the suffix as the resource and this
// replica; without it they are 404.
func TestResourceMetadata(t *testing.T) {
	get := func(s *Server, path string) (int, map[string]any) {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "gw.test"
		s.Handler().ServeHTTP(rec, req)
		var doc map[string]any
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		return rec.Code, doc
	}
	on, err := New("replica-x", &Options{ResourceMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	for path, resource := range map[string]string{
		"/.well-known/oauth-protected-resource":            "http://gw.test",
		"/.well-known/oauth-protected-resource/github/mcp": "http://gw.test/github/mcp",
	} {
		code, doc := get(on, path)
		if code != http.StatusOK || doc["resource"] != resource || doc["mcpfleet_replica"] != "replica-x" {
			t.Errorf("%s: %d %v, want the resource %s of replica-x", path, code, doc, resource)
		}
	}
	off, err := New("replica-y", nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(off, "/.well-known/oauth-protected-resource/mcp"); code != http.StatusNotFound {
		t.Errorf("without ResourceMetadata: %d, want 404", code)
	}
}

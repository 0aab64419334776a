package upstream

import (
	"strings"
	"testing"
)

// TestParseURL: one plain http(s) URL passes; two in one string, a
// fragment or credentials are refused with the repeated-flag form, and no
// error shows a password.
func TestParseURL(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:9001/mcp", "https://mcp.example.com", "http://[::1]:8080/a/b"} {
		if _, err := ParseURL(ok); err != nil {
			t.Errorf("ParseURL(%q): %v", ok, err)
		}
	}
	for _, tt := range []struct{ raw, want string }{
		{"http://a/mcp,http://b/mcp", "--upstream http://a/mcp --upstream http://b/mcp"},
		{"http://a/mcp, http://b/mcp", "--upstream http://a/mcp --upstream http://b/mcp"},
		{"http://a/mcp http://b/mcp", "--upstream http://a/mcp --upstream http://b/mcp"},
		{"http://a/mcp\thttp://b/mcp\n", "--upstream http://a/mcp --upstream http://b/mcp"},
		{"http://a/mcp ", "--upstream http://a/mcp --upstream http://b/mcp"},
		{"http://a:3101/mcp#sse", "--upstream http://a/mcp --upstream http://b/mcp"},
		{"http://a:3101/mcp#", "--upstream http://a/mcp --upstream http://b/mcp"},
		{"http://user:hunter2@a/mcp", "--upstream http://a/mcp --upstream http://b/mcp"},
		{"http://user:hunter2@a/mcp,http://b/mcp", "--upstream http://a/mcp --upstream http://b/mcp"},
		{"http://user:hunter2@a b/mcp", "--upstream http://a/mcp --upstream http://b/mcp"},
		{"ftp://user:hunter2@a/mcp", "scheme"},
		{"http://user:hunter2@a:x/mcp", "parsing url"},
		{"http://a/mcp?x=1", "no query"},
	} {
		_, err := ParseURL(tt.raw)
		if err == nil {
			t.Errorf("ParseURL(%q) passed", tt.raw)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseURL(%q) = %v, want it to say %q", tt.raw, err, tt.want)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q) shows the password: %v", tt.raw, err)
		}
	}
}

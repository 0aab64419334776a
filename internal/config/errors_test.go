package config

import (
	"os"
	"strings"
	"testing"
)

// goWords are words of Go's, not of a configuration's reader: no error
// may show one.
var goWords = []string{"config.", "[]string", "[]config", "time.Duration", "map[", "struct", "yaml:", "float64", "int64", "!!", "unmarshal", "not found in type"}

// TestConfigErrorsInWords: each bad file's error names the line and the
// key path, says what was found and what is wanted, and names no Go
// type.
func TestConfigErrorsInWords(t *testing.T) {
	const up = "upstreams:\n  - url: http://127.0.0.1:1/mcp\n"
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"a list for a URL", "upstreams:\n  - name: a\n    url: [a, b]\n",
			[]string{"line 3: upstreams[0].url: got a list, want a URL such as http://10.0.0.11:8080/mcp"}},
		{"an unknown key near a known one", "upstream:\n  - url: http://x/mcp\n",
			[]string{`line 1: unknown key "upstream" (did you mean "upstreams"?)`}},
		{"an unknown key further down", up + "health_check:\n  intervall: 5s\n",
			[]string{`line 4: health_check: unknown key "intervall" (did you mean "interval"?)`}},
		{"a key at the wrong level", up + "fall: 3\n",
			[]string{`line 3: unknown key "fall" (it is a key of health_check: indent it under that key)`}},
		{"a nested key at the top", "url: http://x/mcp\n",
			[]string{`line 1: unknown key "url" (it is a key of `, "upstreams[]"}},
		{"a scalar for a list", "upstreams: http://x/mcp\n",
			[]string{`line 1: upstreams: got "http://x/mcp", want a list of mappings, each with name, url`}},
		{"a mapping for a list", "upstreams:\n  url: http://x/mcp\n",
			[]string{"line 2: upstreams: got a mapping", `(start each entry with "- ")`}},
		{"a list for a mapping", up + "health_check: [1]\n",
			[]string{"line 3: health_check: got a list, want a mapping of its keys: interval, timeout"}},
		{"a bare number for a duration", up + "keepalive: 5\n",
			[]string{"line 3: keepalive: got 5, want a duration such as 15s", "(a number needs its unit: 5s, not 5)"}},
		{"a bad duration", up + "health_check:\n  timeout: soon\n",
			[]string{`line 4: health_check.timeout: got "soon", want a duration such as 15s`}},
		{"a bad size", up + "sse_send_buffer: 5MB\n",
			[]string{`line 3: sse_send_buffer: got "5MB", want a size such as 262144, 256KiB or 64MiB`}},
		{"a unit on a byte count", up + "resume:\n  max_stream_bytes: 5MiB\n",
			[]string{`line 4: resume.max_stream_bytes: got "5MiB", want a whole number of bytes`}},
		{"a word for a number", up + "retries: many\n",
			[]string{`line 3: retries: got "many", want a whole number`}},
		{"a word for a float", up + "hash_epsilon: wide\n",
			[]string{`line 3: hash_epsilon: got "wide", want a number`}},
		{"a word for a boolean", up + "allow_any_host: maybe\n",
			[]string{`line 3: allow_any_host: got "maybe", want true or false`}},
		{"a list for a map", up + "limits:\n  tools: [a]\n",
			[]string{"line 4: limits.tools: got a list, want a mapping of names to values, each a whole number"}},
		{"a map value", up + "limits:\n  tools:\n    search: lots\n",
			[]string{`line 5: limits.tools.search: got "lots", want a whole number`}},
		{"a list for a file path", up + "secret_file: [a]\n",
			[]string{"line 3: secret_file: got a list, want the path of a file"}},
		{"a list at the top", "- a\n",
			[]string{"line 1: got a list, want a mapping of its keys: listen, admin"}},
		{"a service's unknown key", up + "services:\n  - name: a\n    pathh: /a\n",
			[]string{`line 5: services[0]: unknown key "pathh" (did you mean "path"?)`}},
		{"a process key in a service", up + "services:\n  - name: a\n    listen: 127.0.0.1:1\n",
			[]string{"line 5: services[0].listen: not a key of a service"}},
		{"a service's bad value", up + "services:\n  - name: a\n    retries: [1]\n",
			[]string{"line 5: services[0].retries: got a list, want a whole number"}},
		{"every error at once", "upstream: x\nkeepalive: 5\n",
			[]string{`line 1: unknown key "upstream"`, "\nline 2: keepalive: got 5"}},
		{"a syntax error", "upstreams:\n  - url: x\n bad: [\n",
			[]string{"line 2: did not find expected key (the YAML around it does not parse"}},
		{"a validation error", up + "balance: random\n",
			[]string{"balance:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("accepted:\n%s", tt.yaml)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			for _, w := range goWords {
				if strings.Contains(msg, w) {
					t.Errorf("error %q shows %q", msg, w)
				}
			}
		})
	}
}

// TestSchemaCheckAcceptsGoodFiles: the example file, anchors, merge keys,
// services and empty values pass the schema check (a false alarm there would
// refuse a good configuration).
func TestSchemaCheckAcceptsGoodFiles(t *testing.T) {
	good := []string{
		"upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    max_inflight: 4\nkeepalive: 15s\nhash_epsilon: 1\nsse_send_buffer: 256KiB\n",
		"upstreams:\n  - url: http://127.0.0.1:1/mcp\nlimits:\n  rate: 2.5\n  tools: {search: 3}\ncache:\n  mode: local\n  tools: [a, b]\n",
		"upstreams:\n  - &a {name: a, url: http://127.0.0.1:1/mcp}\n  - <<: *a\n    name: b\n",
		"upstreams:\n  - url: http://127.0.0.1:1/mcp\nservices:\n  - name: a\n    path: /a\n    hosts: [a.example.com]\n    default: true\n    retries: 2\n",
		"",
		"upstreams:\n  - url: http://127.0.0.1:1/mcp\nadmin:\n",
	}
	example, err := os.ReadFile("../../docs/mcpfleet.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range append(good, string(example)) {
		if err := checkFile([]byte(g)); err != nil {
			t.Errorf("%q: %v", g, err)
		}
	}
}

// TestValidationErrorsHaveLines: a value of the right kind that does not
// validate is named with the line of its key, or of the nearest key above
// it that the file writes; a key the file does not write has no line.
func TestValidationErrorsHaveLines(t *testing.T) {
	tests := []struct {
		yaml string
		want string
	}{
		{"upstreams:\n  - url: http://127.0.0.1:1/mcp\nbalance: random\n", "line 3: balance: "},
		{"listen: 127.0.0.1:1\nupstreams:\n  - name: a\n    url: ftp://x/\n", "line 4: upstreams[0].url: "},
		{"upstreams:\n  - url: http://127.0.0.1:1/mcp\nlimits:\n  rate: 1\n  store: redis\n", "line 5: limits.store: redis needs secret_file"},
		{"listen: 127.0.0.1:1\n", "\nupstreams: at least one upstream"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.yaml))
		if err == nil || !strings.Contains("\n"+err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.yaml, err, tt.want)
		}
	}
	path := t.TempDir() + "/bad.yaml"
	os.WriteFile(path, []byte(tests[0].yaml), 0o600)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "line 3: balance: ") {
		t.Errorf("Load: %v, want the line of balance", err)
	}
}

package config

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	good := map[string]Size{"0": 0, "4096": 4096, "256KiB": 256 << 10, "64MiB": 64 << 20, "1GiB": 1 << 30, "2TiB": 2 << 40}
	for in, want := range good {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "1.5MiB", "-1", "+1", "1 MiB", "1MB", "1mib", "01KiB", "9223372036854775807KiB", "1KiBKiB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseMemoryLimit(t *testing.T) {
	const cg = 1 << 30
	tests := []struct {
		in      string
		bytes   int64 // resolved against a 1 GiB cgroup
		without int64 // resolved without a cgroup limit
	}{
		{"", cg * 9 / 10, 0},
		{"off", 0, 0},
		{"256MiB", 256 << 20, 256 << 20},
		{"60%", 644245094, 0},
		{"100%", cg, 0},
	}
	for _, tt := range tests {
		m, err := ParseMemoryLimit(tt.in)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if got := m.Resolve(cg); got != tt.bytes {
			t.Errorf("%q in a 1 GiB cgroup: %d, want %d", tt.in, got, tt.bytes)
		}
		if got := m.Resolve(0); got != tt.without {
			t.Errorf("%q without a cgroup limit: %d, want %d", tt.in, got, tt.without)
		}
	}
	for _, in := range []string{"0%", "101%", "60.5%", "060%", "%", "1MiB", "lots", "0"} {
		if _, err := ParseMemoryLimit(in); err == nil {
			t.Errorf("ParseMemoryLimit(%q): no error", in)
		}
	}
	up := "upstreams: [{url: 'http://127.0.0.1:9001/mcp'}]\n"
	for yaml, want := range map[string]string{
		up + "memory_limit: 10%%%":   "memory_limit: want a whole percentage",
		up + "memory_limit: 8MiB":    "memory_limit: 8MiB is under 16MiB",
		up + "sse_send_buffer: 1KiB": "sse_send_buffer: want 0",
		up + "sse_send_buffer: 1MB":  "want a size such as",
	} {
		if _, err := Parse([]byte(yaml)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
	c, err := Parse([]byte(up + "memory_limit: 256MiB\nsse_send_buffer: 128KiB\n"))
	if err != nil || c.MemoryLimit != "256MiB" || c.SSESendBuffer != 128<<10 {
		t.Errorf("%+v %v", c.SSESendBuffer, err)
	}
}

package config

import (
	"strings"
	"testing"
)

// TestAuditKeys: the audit log is off unless set; off, stderr or a file;
// include_subject only with a log; a process key that no service sets.
func TestAuditKeys(t *testing.T) {
	const base = "upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\n"
	if d := Default().Audit; d.Log != AuditOff || d.IncludeSubject {
		t.Errorf("audit defaults to %+v, want off without the subject", d)
	}
	tests := []struct {
		name, yaml, want string // want "" means valid; else text the error holds
	}{
		{"stderr", "audit: {log: stderr}\n", ""},
		{"off unquoted", "audit: {log: off}\n", ""},
		{"a file with the subject", "audit: {log: /var/log/mcpfleet/audit.log, include_subject: true}\n", ""},
		{"empty", "audit: {log: ''}\n", "audit.log"},
		{"the subject without a log", "audit: {include_subject: true}\n", "audit.include_subject"},
		{"a service's own", "services:\n  - {name: a, path: /a/mcp, audit: {log: stderr}, upstreams: [{url: 'http://127.0.0.1:1/mcp'}]}\n", "audit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := tt.yaml
			if !strings.Contains(y, "services:") {
				y = base + y
			}
			c, err := Parse([]byte(y))
			if err == nil && strings.Contains(y, "services:") {
				_, err = c.ResolveServices()
			}
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error = %v, want one holding %q", err, tt.want)
			}
		})
	}
}

package config

import (
	"strings"
	"testing"
)

func TestResumeStore(t *testing.T) {
	base := "upstreams: [{url: 'http://127.0.0.1:1/mcp'}]\n"
	tests := []struct {
		name, yaml, want string // want "" means valid
	}{
		{"memory by default", base, ""},
		{"redis", base + "secret_file: s.yaml\nredis_url: redis://127.0.0.1:6379\nresume: {store: redis}\n", ""},
		{"redis without url", base + "secret_file: s.yaml\nresume: {store: redis}\n", "required when resume.store is redis"},
		{"redis without a shared keyring", base + "redis_url: redis://127.0.0.1:6379\nresume: {store: redis}\n", "resume.store: redis needs secret_file"},
		{"unknown", base + "resume: {store: etcd}\n", "resume.store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tt.want == "" && c.Resume.Store == "":
				t.Errorf("resume.store is empty, want a default")
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Parse error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

package testserver

import (
	"testing"
	"time"
)

// TestNewValidatesOptions checks which names and options New accepts.
func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name    string
		server  string
		opts    *Options
		wantErr bool
	}{
		{"nil options", "r", nil, false},
		{"zero options", "r", &Options{}, false},
		{"era both", "r", &Options{Era: EraBoth}, false},
		{"era 2025", "r", &Options{Era: Era2025}, false},
		{"era 2026", "r", &Options{Era: Era2026, ShutdownGrace: time.Second}, false},
		{"empty name", "", nil, true},
		{"unknown era", "r", &Options{Era: "2024"}, true},
		{"negative grace", "r", &Options{ShutdownGrace: -time.Second}, true},
		{"cache TTL", "r", &Options{CacheTTL: 1500 * time.Millisecond}, false},
		{"negative cache TTL", "r", &Options{CacheTTL: -time.Second}, true},
		{"cache TTL below a millisecond", "r", &Options{CacheTTL: time.Microsecond}, true},
		{"cache TTL not whole milliseconds", "r", &Options{CacheTTL: 1500 * time.Microsecond}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.server, tt.opts)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("New(%q, %+v) error = %v, want error %v", tt.server, tt.opts, err, tt.wantErr)
			}
			if err == nil && s.Name() != tt.server {
				t.Errorf("Name() = %q, want %q", s.Name(), tt.server)
			}
		})
	}
}

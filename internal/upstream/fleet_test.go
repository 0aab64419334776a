package upstream

import "testing"

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name  string
		specs []Spec
		ok    bool
	}{
		{"good", []Spec{{Name: "a", URL: "http://127.0.0.1:1/mcp"}, {URL: "https://h:2/mcp"}}, true},
		{"none", nil, false},
		{"duplicate name", []Spec{{Name: "a", URL: "http://h:1/"}, {Name: "a", URL: "http://h:2/"}}, false},
		{"duplicate default name", []Spec{{URL: "http://h:1/a"}, {URL: "http://h:1/b"}}, false},
		{"bad scheme", []Spec{{URL: "ftp://h/"}}, false},
		{"no host", []Spec{{URL: "http:///mcp"}}, false},
		{"credentials", []Spec{{URL: "http://u:p@h/"}}, false},
		{"query", []Spec{{URL: "http://h/?a=1"}}, false},
		{"sse url", []Spec{{URL: "http://h:1/mcp", SSEURL: "http://h:2/v1/sse"}}, true},
		{"sse url with a query", []Spec{{URL: "http://h:1/mcp", SSEURL: "http://h:1/sse?key=1"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.specs)
			if (err == nil) != tt.ok {
				t.Errorf("New = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestSnapshotLookupAndCounts(t *testing.T) {
	f, err := New([]Spec{{Name: "a", URL: "http://h:1/mcp"}, {URL: "http://h:2"}})
	if err != nil {
		t.Fatal(err)
	}
	s := f.Snapshot()
	b := s.Lookup("h:2")
	if b == nil || b.URL().Path != "/" {
		t.Fatalf("Lookup(h:2) = %v", b)
	}
	if s.Lookup("zz") != nil {
		t.Error("Lookup of an unknown name found a replica")
	}
	b.Acquire()
	b.Acquire()
	b.Release()
	if s.InFlight(1) != 1 {
		t.Errorf("InFlight = %d, want 1", s.InFlight(1))
	}
}

// TestSSEURL: a replica's 2024-11-05 SSE endpoint is its own, or its MCP
// endpoint's origin with /sse; a change of it alone makes a new replica.
func TestSSEURL(t *testing.T) {
	f, err := New([]Spec{{Name: "a", URL: "https://h:1/v1/mcp"}, {Name: "b", URL: "http://h:2/mcp", SSEURL: "http://h:3/events"}})
	if err != nil {
		t.Fatal(err)
	}
	s := f.Snapshot()
	if got := s.Lookup("a").SSEURL().String(); got != "https://h:1/sse" {
		t.Errorf("default SSE URL = %s", got)
	}
	if got := s.Lookup("b").SSEURL().String(); got != "http://h:3/events" {
		t.Errorf("named SSE URL = %s", got)
	}
	ch, err := f.Update([]Spec{{Name: "a", URL: "https://h:1/v1/mcp"}, {Name: "b", URL: "http://h:2/mcp", SSEURL: "http://h:3/sse"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Added) != 1 || ch.Added[0] != "b" {
		t.Errorf("changing b's SSE URL: %+v, want b replaced", ch)
	}
}

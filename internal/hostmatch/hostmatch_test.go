package hostmatch

import "testing"

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, host string
		want          bool
	}{
		{"a.example", "a.example", true},
		{"a.example", "b.example", false},
		{"*.example", "a.example", true},
		{"*.example", "a.b.example", false},
		{"*.example", "example", false},
		{"*.example", ".example", false},
		{"*.example", "*.example", true}, // equal
		{"*.b.example", "x.b.example", true},
		{"*example", "aexample", false}, // the star is a whole label
		{"a.example", "*.example", false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.host); got != tt.want {
			t.Errorf("Match(%q, %q) = %v", tt.pattern, tt.host, got)
		}
	}
	if !Takes(nil, "any.example") || Takes([]string{"a.example"}, "b.example") || !Takes([]string{"b.example", "*.c.example"}, "x.c.example") {
		t.Error("Takes")
	}
	for _, tt := range []struct {
		a, b []string
		host string
		ok   bool
	}{
		{nil, []string{"a.example"}, "", true},
		{[]string{"*.example"}, []string{"x.example"}, "x.example", true},
		{[]string{"x.example"}, []string{"*.example"}, "x.example", true},
		{[]string{"a.example"}, []string{"b.example", "*.c.example"}, "", false},
	} {
		if h, ok := Meet(tt.a, tt.b); h != tt.host || ok != tt.ok {
			t.Errorf("Meet(%v, %v) = %q, %v", tt.a, tt.b, h, ok)
		}
	}
}

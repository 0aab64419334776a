package sse

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSetID(t *testing.T) {
	tests := []struct {
		block, want, own string
		hadOwn           bool
	}{
		{"event: message\ndata: {}\n\n", "event: message\ndata: {}\nid: X\n\n", "", false},
		{"id: 7\ndata: a\r\n\r\n", "data: a\r\nid: X\n\n", "7", true},
		{"data: a\r\r\n\n", "data: a\r\r\nid: X\n\n", "", false}, // "\r\r\n" is no blank line
		{"\n\nid: 1\nretry: 500\nid: 2\ndata:\n\n", "retry: 500\ndata:\nid: X\n\n", "2", true},
		{"id\ndata: b\n\n", "data: b\nid: X\n\n", "", true},
		{"id: a\x00b\ndata: c\n\n", "data: c\nid: X\n\n", "", false},
		{": note\nidx: 3\ndata: d\n\n", ": note\nidx: 3\ndata: d\nid: X\n\n", "", false},
	}
	for _, tt := range tests {
		got, own, had := SetID(nil, []byte(tt.block), "X")
		if string(got) != tt.want || own != tt.own || had != tt.hadOwn {
			t.Errorf("SetID(%q) = %q, %q, %v; want %q, %q, %v", tt.block, got, own, had, tt.want, tt.own, tt.hadOwn)
		}
	}
}

func TestIsComment(t *testing.T) {
	for block, want := range map[string]bool{
		": keep-alive\n\n": true, "\n: a\r\n: b\n\n": true, "data: x\n\n": false, "id: 1\n\n": false, "retry: 9\n\n": false,
	} {
		if got := IsComment([]byte(block)); got != want {
			t.Errorf("IsComment(%q) = %v", block, got)
		}
	}
}

// FuzzSetID: the event a client reads from SetID's block is the one it would
// read from the original block, with the new ID; the block is one event.
func FuzzSetID(f *testing.F) {
	f.Add([]byte("id: 1\nevent: message\ndata: a\ndata: b\r\n\r\n"))
	f.Add([]byte("\n\nretry: 10\nid\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in), 1<<20)
		for {
			block, err := r.Next()
			if err != nil {
				return
			}
			if IsComment(block) {
				continue
			}
			out, own, had := SetID(nil, block, "new")
			if n, own2, had2 := StrippedLen(block); n != len(out)-len("id: new\n\n") || own2 != own || had2 != had {
				t.Fatalf("StrippedLen(%q) = %d, %q, %v; SetID gave %d bytes before its id line, %q, %v", block, n, own2, had2, len(out)-len("id: new\n\n"), own, had)
			}
			want, got := Parse(block), Parse(out)
			if had != want.HasID || own != want.ID {
				t.Fatalf("own id %q %v, Parse says %q %v", own, had, want.ID, want.HasID)
			}
			want.ID, want.HasID = "new", true
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("SetID(%q) = %q (-want +got):\n%s", block, out, diff)
			}
			if r2 := NewReader(bytes.NewReader(out), 0); true {
				if b, err := r2.Next(); err != nil || !bytes.Equal(b, out) {
					t.Fatalf("SetID(%q) = %q, not one event", block, out)
				}
			}
		}
	})
}

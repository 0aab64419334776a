package proc

import (
	"strings"
	"testing"
)

// The tests of the exported API are in package proc_test: they use
// testproc and redistest, which are built on this package.

// TestTailKeepsTheEnd: the output kept is its last tailBytes.
func TestTailKeepsTheEnd(t *testing.T) {
	var tl tail
	tl.Write([]byte(strings.Repeat("a", tailBytes)))
	tl.Write([]byte("\nthe end\n"))
	if got := tl.String(); len(got) != tailBytes || !strings.HasSuffix(got, "a\nthe end\n") {
		t.Errorf("kept %d bytes ending %q, want %d ending with the last write", len(got), got[max(0, len(got)-10):], tailBytes)
	}
	if got := LastLines("one\ntwo\nthree\n", 2); got != "two\nthree" {
		t.Errorf("LastLines = %q", got)
	}
}

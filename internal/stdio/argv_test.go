package stdio

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitCommand(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"npx -y @modelcontextprotocol/server-memory", []string{"npx", "-y", "@modelcontextprotocol/server-memory"}},
		{"  a\tb\n c  ", []string{"a", "b", "c"}},
		{`sh -c 'exec server --flag "x y"'`, []string{"sh", "-c", `exec server --flag "x y"`}},
		{`a "b c" d`, []string{"a", "b c", "d"}},
		{`a "q\"uote\\" 'it'\''s'`, []string{"a", `q"uote\`, "it's"}},
		{`a "back\slash"`, []string{"a", `back\slash`}},
		{`a '' ""`, []string{"a", "", ""}},
		{`a\ b`, []string{"a b"}},
		{`a 'x|y;z$HOME'`, []string{"a", "x|y;z$HOME"}},
		{`a "\$HOME"`, []string{"a", "$HOME"}},
		{"a=b c", []string{"a=b", "c"}},
	} {
		got, err := SplitCommand(tt.in)
		if err != nil {
			t.Errorf("SplitCommand(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("SplitCommand(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestSplitCommandRefuses(t *testing.T) {
	for _, in := range []string{
		"", "   ", "a 'b", `a "b`, `a\`, "a | b", "a; b", "a && b", "a > f", "echo $HOME",
		"echo `id`", `echo "$HOME"`, "ls *", "a #comment", "~/bin/x",
	} {
		if argv, err := SplitCommand(in); !errors.Is(err, ErrCommand) {
			t.Errorf("SplitCommand(%q) = %q, %v; want an ErrCommand", in, argv, err)
		}
	}
}

// TestSplitCommandAgreesWithSh: what SplitCommand accepts, sh splits the
// same way.
func TestSplitCommandAgreesWithSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	for _, in := range []string{`a "b c" d`, `x 'y z' "q\"\\" a\ b '' "\$"`, `"back\slash" 'it'\''s'`} {
		want, err := SplitCommand(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(sh, "-c", `set -- `+in+`; for a in "$@"; do printf '%s\0' "$a"; done`).Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q: SplitCommand and sh differ (-ours +sh):\n%s", in, diff)
		}
	}
}

// FuzzSplitCommand: whatever splits, quoted back splits into the same argv.
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"a b", `a "b c"`, `'x'\''y'`, `a\ b`, `"\\\""`, "", "a |"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		argv, err := SplitCommand(s)
		if err != nil {
			return
		}
		again, err := SplitCommand(QuoteCommand(argv))
		if err != nil {
			t.Fatalf("QuoteCommand(%q) = %q does not split: %v", argv, QuoteCommand(argv), err)
		}
		if diff := cmp.Diff(argv, again); diff != "" {
			t.Fatalf("round trip of %q (-first +again):\n%s", s, diff)
		}
	})
}

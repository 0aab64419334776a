package stdio

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEnvironIsConfiguredOnly(t *testing.T) {
	gw := map[string]string{"PATH": "/usr/bin", "HOME": "/home/gw", "AWS_SECRET_ACCESS_KEY": "s3cr3t", "MCPFLEET_SECRET": "x"}
	files := map[string]string{"/run/secrets/c-1.token": "tok\n"}
	readFile := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return []byte(b), nil
		}
		return nil, fs.ErrNotExist
	}
	got, err := Environ("c-1", map[string]string{"MEMORY_FILE_PATH": "/var/mem/{child}.jsonl", "HOME": "/srv/{child}"},
		map[string]string{"TOKEN": "/run/secrets/{child}.token"}, func(k string) string { return gw[k] }, readFile)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"HOME=/srv/c-1", "MEMORY_FILE_PATH=/var/mem/c-1.jsonl", "PATH=/usr/bin", "TOKEN=tok"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
	_, err = Environ("c-2", nil, map[string]string{"TOKEN": "/run/secrets/{child}.token"}, func(string) string { return "" }, readFile)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "/run/secrets/c-2.token") {
		t.Errorf("a missing env file: %v, want ErrNotExist naming the path", err)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Min: time.Second, Max: 30 * time.Second}
	failures := 0
	var got []time.Duration
	for range 7 {
		var d time.Duration
		d, failures = b.Next(failures, 100*time.Millisecond)
		got = append(got, d)
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i := range want {
		want[i] *= time.Second
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays of a crash loop (-want +got):\n%s", diff)
	}
	if d, n := b.Next(failures, time.Minute); d != time.Second || n != 1 {
		t.Errorf("after a minute up: %v, %d failures; want 1s, 1", d, n)
	}
	if d, _ := (Backoff{}).Next(0, 0); d != time.Second {
		t.Errorf("zero Backoff's first delay %v, want 1s", d)
	}
}

func TestLineRing(t *testing.T) {
	r := newLineRing(3)
	for _, l := range []string{"a", "b", "c", "d", strings.Repeat("x", 3*maxStderrLine)} {
		r.add(l)
	}
	got, total := r.last()
	if total != 5 || len(got) != 3 || got[0] != "c" || got[1] != "d" || len(got[2]) > maxStderrLine+len("…") {
		t.Errorf("last = %q (%d written), want c, d and a cut line of 5", got, total)
	}
}

func TestLineReader(t *testing.T) {
	in := "one\r\n" + strings.Repeat("y", 100) + "\nlast"
	l := newLineReader(strings.NewReader(in), 100)
	var got []string
	for {
		b, err := l.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		got = append(got, string(b))
	}
	if len(got) != 3 || got[0] != "one" || len(got[1]) != 100 || got[2] != "last" {
		t.Errorf("lines %q", got)
	}
	l = newLineReader(strings.NewReader("ok\n"+strings.Repeat("z", 200<<10)+"\nafter\n"), 100<<10)
	if b, err := l.next(); err != nil || string(b) != "ok" {
		t.Fatalf("first line %q, %v", b, err)
	}
	if _, err := l.next(); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("a 200 KiB line under a 100 KiB bound: %v, want ErrLineTooLong", err)
	}
	// A line longer than the reader's buffer comes whole, in its chunks,
	// and the short one after it from the buffer alone.
	l = newLineReader(strings.NewReader(strings.Repeat("w", 200<<10)+"\r\nafter\n"), 300<<10)
	if b, err := l.next(); err != nil || len(b) != 200<<10 || strings.Trim(string(b), "w") != "" {
		t.Fatalf("a 200 KiB line under a 300 KiB bound: %d bytes, %v", len(b), err)
	}
	if b, err := l.next(); err != nil || string(b) != "after" {
		t.Errorf("the line after it: %q, %v", b, err)
	}
}

// TestDrained: a replaced child stops once it holds no session, or when
// its grace is over, whichever comes first.
func TestDrained(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		sessions int
		end      time.Time
		want     bool
	}{
		{0, now.Add(time.Minute), true},
		{2, now.Add(time.Minute), false},
		{2, now, true},
		{1, now.Add(-time.Second), true},
		{1, time.Time{}, true}, // Close: at once
	} {
		if got := drained(tt.sessions, now, tt.end); got != tt.want {
			t.Errorf("drained(%d sessions, grace ends %v) = %v, want %v", tt.sessions, tt.end.Sub(now), got, tt.want)
		}
	}
}

package sse

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

type buffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	flushes int
	fail    bool
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail {
		return 0, errors.New("client gone")
	}
	return b.b.Write(p)
}

func (b *buffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushes++
	return nil
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestKeepAliveFillsSilences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out buffer
		w := NewWriter(&out, &out, time.Second)
		defer w.Close()
		time.Sleep(3500 * time.Millisecond) // silent: three comments
		if err := w.WriteEvent([]byte("data: a\n\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(900 * time.Millisecond) // the event reset the timer: none yet
		if got := w.KeepAlives(); got != 3 {
			t.Errorf("keep-alives = %d, want 3", got)
		}
		time.Sleep(200 * time.Millisecond)
		want := strings.Repeat(string(KeepAliveComment), 3) + "data: a\n\n" + string(KeepAliveComment)
		if out.String() != want {
			t.Errorf("stream = %q, want %q", out.String(), want)
		}
	})
}

func TestKeepAliveOffAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out buffer
		w := NewWriter(&out, &out, 0)
		time.Sleep(time.Minute)
		if out.String() != "" {
			t.Errorf("keep-alive off wrote %q", out.String())
		}
		w.Close()

		w = NewWriter(&out, &out, time.Second)
		w.Close()
		w.Close() // idempotent
		time.Sleep(time.Minute)
		if out.String() != "" {
			t.Errorf("closed writer wrote %q", out.String())
		}
	})
}

func TestWriteErrorSticks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &buffer{fail: true}
		w := NewWriter(out, out, time.Second)
		defer w.Close()
		if err := w.WriteEvent([]byte("data: a\n\n")); err == nil {
			t.Fatal("write to a gone client succeeded")
		}
		out.mu.Lock()
		out.fail = false
		out.mu.Unlock()
		if err := w.WriteEvent([]byte("data: b\n\n")); err == nil {
			t.Error("a dead stream accepted a later write")
		}
		time.Sleep(5 * time.Second)
		if w.KeepAlives() != 0 {
			t.Error("keep-alives went on after the stream died")
		}
	})
}

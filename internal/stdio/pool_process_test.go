package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newTestPool starts a pool of test servers.
func newTestPool(t *testing.T, max, warm int) *Pool {
	t.Helper()
	p := NewPool(PoolOptions{
		Name: "p", MaxSessions: max, Warm: warm, Backoff: Backoff{Min: 50 * time.Millisecond, Max: time.Second},
		Child: func(name string) (Options, error) {
			env, err := Environ(name, nil, nil, os.Getenv, os.ReadFile)
			return Options{Name: name, Argv: testserverArgv(name), Env: env, Grace: 2 * time.Second}, err
		},
	})
	t.Cleanup(p.Close)
	return p
}

func takeLease(t *testing.T, p *Pool) *Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := p.Take(ctx)
	if err != nil {
		t.Fatalf("take: %v", err)
	}
	return l
}

// alive reports whether process pid runs (and is no zombie).
func alive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(st), ") Z ")
}

// answerHolds reports whether answer m, as JSON, holds s.
func answerHolds(m map[string]any, s string) bool {
	b, _ := json.Marshal(m)
	return strings.Contains(string(b), s)
}

// TestPoolLeases: a pool of 2 with 1 warm child: each lease has a child of
// its own, answering on its session; a third lease is refused with
// ErrPoolFull; closing a lease stops its process and makes room, and the
// warm child comes back; Close stops them all.
func TestPoolLeases(t *testing.T) {
	needBin(t)
	p := newTestPool(t, 2, 1)
	a, b := takeLease(t, p), takeLease(t, p)
	if a.Child() == b.Child() || a.Child().Info().PID == b.Child().Info().PID {
		t.Fatalf("two leases on one child %s", a.Child().Name())
	}
	for _, l := range []*Lease{a, b} {
		if got := callTool(t, l.Session(), "1", "whoami", "{}", 5*time.Second); !answerHolds(got, l.Child().Name()) {
			t.Errorf("whoami on %s: %v", l.Child().Name(), got)
		}
	}
	if w := p.Warm(); len(w) != 0 {
		t.Errorf("warm children beside 2 leases of 2: %v", w)
	}
	if _, err := p.Take(context.Background()); !errors.Is(err, ErrPoolFull) {
		t.Errorf("a third lease: %v, want ErrPoolFull", err)
	}
	pid := a.Child().Info().PID
	a.Close()
	if alive(pid) {
		t.Errorf("the closed lease's child %d still runs", pid)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(p.Warm()) != 1 || !p.Warm()[0].Ready {
		if time.Now().After(deadline) {
			t.Fatalf("no warm child ready 10s after a lease closed: %v", p.Warm())
		}
		time.Sleep(20 * time.Millisecond)
	}
	warm := p.Warm()[0].PID
	c := takeLease(t, p)
	if c.Child().Info().PID != warm {
		t.Errorf("a lease started child %d while %d waited warm", c.Child().Info().PID, warm)
	}
	pids := []int{b.Child().Info().PID, c.Child().Info().PID}
	p.Close()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("child %d runs after the pool closed", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestPoolNoneWarm: with warm 0 no child waits: a lease starts its own
// child and waits for its initialize, and none starts after it ends.
func TestPoolNoneWarm(t *testing.T) {
	needBin(t)
	p := newTestPool(t, 2, 0)
	time.Sleep(200 * time.Millisecond) // a warm child would be starting by now
	if w := p.Warm(); len(w) != 0 {
		t.Fatalf("warm children with warm 0: %v", w)
	}
	l := takeLease(t, p)
	if got := callTool(t, l.Session(), "1", "whoami", "{}", 5*time.Second); !answerHolds(got, l.Child().Name()) {
		t.Errorf("whoami on %s: %v", l.Child().Name(), got)
	}
	l.Close()
	time.Sleep(200 * time.Millisecond)
	if w := p.Warm(); len(w) != 0 {
		t.Errorf("a child started after the lease with warm 0: %v", w)
	}
}

// TestPoolChildNotRestarted: a leased child that is killed ends its
// session (a pending call gets replica_lost) and is not started again.
func TestPoolChildNotRestarted(t *testing.T) {
	needBin(t)
	p := newTestPool(t, 2, 1)
	l := takeLease(t, p)
	pid := l.Child().Info().PID
	if err := l.Session().Send([]byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sleep","arguments":{"seconds":8}}}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if got := waitAnswer(t, l.Session(), 2*time.Second); !answerHolds(got, "replica_lost") {
		t.Errorf("the pending call: %v, want replica_lost", got)
	}
	select {
	case <-l.Child().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the killed child is still supervised 5s on")
	}
	if i := l.Child().Info(); i.Ready || i.Restarts != 0 {
		t.Errorf("the killed child: %+v, want stopped without a restart", i)
	}
}

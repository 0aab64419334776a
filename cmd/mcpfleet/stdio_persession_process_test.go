package main

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// callID numbers the test's requests: a request id used again on a
// session would be answered from the gateway's record of the first.
var callID atomic.Int64

// whoamiOn calls whoami on session sid, with a new request id, and
// returns the status and body.
func whoamiOn(t *testing.T, gw, sid, authz string) (int, string) {
	t.Helper()
	id := strconv.FormatInt(100+callID.Add(1), 10)
	resp := legacyDo(t, gw, http.MethodPost, sid, authz, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// childOfSession calls whoami on session sid and returns the name of the
// child that answered.
func childOfSession(t *testing.T, gw, sid, authz string) string {
	t.Helper()
	status, body := whoamiOn(t, gw, sid, authz)
	m := whoamiText.FindStringSubmatch(body)
	if status != http.StatusOK || m == nil {
		t.Fatalf("whoami on session %s: %d %s", sid, status, body)
	}
	return m[1]
}

// pidsByChild maps each child name of the test (tag) to its process IDs.
func pidsByChild(t *testing.T, tag string) map[string][]int {
	t.Helper()
	by := map[string][]int{}
	for pid, name := range stdioTestChildren(t, tag) {
		by[name] = append(by[name], pid)
	}
	return by
}

// TestStdioPerSession: per_session with max_sessions 8: each session has
// a child process of its own; the 9th session gets 503 with Retry-After
// through the gateway; a DELETE stops its child and lets the next in; a
// session whose child is killed gets its call answered with replica_lost
// at once, then 404 -32001, and the child is not started again; idle
// sessions end after idle_timeout with their processes; after shutdown no
// process of the test is left.
func TestStdioPerSession(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	tag := strconv.Itoa(os.Getpid()) + "-ps-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	gw, adm, stop := startStdioServeWith(t, tag, "      processes: 1\n      per_session: true\n      max_sessions: 8\n      idle_timeout: 5s\n")
	const authz = "Bearer per-session-test-token"
	var sids []string
	names := map[string]string{} // session -> its child
	for range 8 {
		for _, sid := range sids { // the sessions open so far stay busy while a child starts
			if status, body := whoamiOn(t, gw, sid, authz); status != http.StatusOK {
				t.Fatalf("session %s, while the next ones open: %d %s", sid, status, body)
			}
		}
		sid := legacyInitialize(t, gw, authz)
		names[sid] = childOfSession(t, gw, sid, authz)
		sids = append(sids, sid)
	}
	status, retry, body := rawInitialize(t, gw, authz)
	if status != http.StatusServiceUnavailable || retry == "" {
		t.Errorf("the 9th session: %d, Retry-After %q, %s; want 503 with Retry-After", status, retry, body)
	}
	pids := pidsByChild(t, tag)
	seen := map[int]bool{}
	for sid, name := range names {
		if !strings.HasPrefix(name, "kid-s-") || len(pids[name]) != 1 || seen[pids[name][0]] {
			t.Fatalf("session %s on child %s, processes %v; want a process of its own (all: %v)", sid, name, pids[name], pids)
		}
		seen[pids[name][0]] = true
	}
	checkSessionChildren(t, adm, "kid-1", 8)
	if status, body := legacyRequest(t, gw, http.MethodDelete, sids[0], authz); status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", status, body)
	}
	if left := pidsByChild(t, tag)[names[sids[0]]]; len(left) > 0 {
		t.Errorf("after DELETE, the session's child %s still runs: %v", names[sids[0]], left)
	}
	tenth := legacyInitialize(t, gw, authz) // the place the DELETE freed
	checkChildCrash(t, gw, tag, tenth, authz)

	// Idle: nobody asks anything for idle_timeout; every session ends.
	deadline := time.Now().Add(12 * time.Second)
	for {
		running := 0
		for _, name := range names {
			running += len(pidsByChild(t, tag)[name])
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d children of idle sessions still run 12s on (idle_timeout 5s)", running)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status, body := whoamiOn(t, gw, sids[1], authz); status != http.StatusNotFound || !strings.Contains(body, `"code":-32001`) {
		t.Errorf("a request on a session ended idle: %d %s; want 404 -32001", status, body)
	}
	stop()
	if left := stdioTestChildren(t, tag); len(left) > 0 {
		t.Errorf("after shutdown, processes of the test remain: %v", left)
		for pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// checkChildCrash kills the child of session sid during a call: the call
// is answered replica_lost within a second, the session then gets 404
// -32001, and the child is not started again.
func checkChildCrash(t *testing.T, gw, tag, sid, authz string) {
	t.Helper()
	name := childOfSession(t, gw, sid, authz)
	victims := pidsByChild(t, tag)[name]
	if len(victims) != 1 {
		t.Fatalf("child %s: processes %v", name, victims)
	}
	answer := make(chan string, 1)
	go func() {
		resp := legacyDo(t, gw, http.MethodPost, sid, authz, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"seconds":8}}}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	if err := syscall.Kill(victims[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case body := <-answer:
		if !strings.Contains(body, "replica_lost") {
			t.Errorf("the call on the killed child: %s; want the replica_lost error", body)
		}
		if took := time.Since(killed); took > time.Second {
			t.Errorf("replica_lost came %v after the kill, want within 1s", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer 5s after the child was killed")
	}
	if status, body := whoamiOn(t, gw, sid, authz); status != http.StatusNotFound || !strings.Contains(body, `"code":-32001`) {
		t.Errorf("the session of the killed child: %d %s; want 404 -32001", status, body)
	}
	time.Sleep(300 * time.Millisecond)
	if again := pidsByChild(t, tag)[name]; len(again) > 0 {
		t.Errorf("the killed session child %s started again: %v", name, again)
	}
}

// rawInitialize sends an initialize and returns its status, Retry-After
// and body.
func rawInitialize(t *testing.T, gw, authz string) (int, string, string) {
	t.Helper()
	resp := legacyDo(t, gw, http.MethodPost, "", authz, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// checkSessionChildren checks that the fleet view of replica name counts n
// sessions, each on a child process of its own.
func checkSessionChildren(t *testing.T, adm, name string, n int) {
	t.Helper()
	p := fleetReplica(t, adm, name).Process
	if p == nil || p.Sessions < n || len(p.SessionChildren) != n {
		t.Fatalf("fleet view of %s: %+v; want %d sessions on children of their own", name, p, n)
	}
	for _, k := range p.SessionChildren {
		if k.PID <= 0 || !strings.HasPrefix(k.Name, "kid-s-") {
			t.Errorf("a session child in the fleet view: %+v", k)
		}
	}
}

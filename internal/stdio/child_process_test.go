package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// mcpfleetBin is the mcpfleet binary the process tests run as a stdio
// child (testserver --stdio), built once by the first test that needs it,
// into a directory TestMain removes.
var (
	binOnce     sync.Once
	binDir      string
	mcpfleetBin string
	binErr      error
)

func TestMain(m *testing.M) {
	if os.Getenv(testServerEnv) != "" {
		os.Exit(serveTestServer())
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func needBin(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("process test: builds and runs mcpfleet")
	}
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "stdio-test-"); binErr != nil {
			return
		}
		bin := filepath.Join(binDir, "mcpfleet")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/mcpfleet/mcpfleet/cmd/mcpfleet").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("building mcpfleet: %v\n%s", err, out)
			return
		}
		mcpfleetBin = bin
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
}

// startChild starts a child running argv and waits until it is ready.
func startChild(t *testing.T, name string, argv []string, tweak func(*Options)) *Child {
	t.Helper()
	env, err := Environ(name, nil, nil, os.Getenv, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Name: name, Argv: argv, Env: env, Grace: 2 * time.Second, Backoff: Backoff{Min: 200 * time.Millisecond, Max: 2 * time.Second}}
	if tweak != nil {
		tweak(&o)
	}
	c := Start(o)
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("child %s: %v (stderr %q)", name, err, c.Info().Stderr)
	}
	return c
}

func testserverArgv(name string) []string {
	return []string{mcpfleetBin, "testserver", "--stdio", "--name", name}
}

// callTool sends a tools/call with id and waits for the message answering it.
func callTool(t *testing.T, s *Session, id, tool, args string, within time.Duration) map[string]any {
	t.Helper()
	msg := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	if err := s.Send([]byte(msg)); err != nil {
		t.Fatalf("sending %s: %v", tool, err)
	}
	return waitAnswer(t, s, within)
}

func waitAnswer(t *testing.T, s *Session, within time.Duration) map[string]any {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case b, ok := <-s.Messages():
			if !ok {
				t.Fatal("the session ended with no answer")
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if _, isReq := m["method"]; !isReq {
				return m
			}
		case <-timeout:
			t.Fatalf("no answer within %v", within)
		}
	}
}

func text(m map[string]any) string {
	r, _ := m["result"].(map[string]any)
	c, _ := r["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	first, _ := c[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

// TestChildIDReuse: 20 sessions on one child, each sending 20 calls with
// id 1, get each of their own answers and never another's.
func TestChildIDReuse(t *testing.T) {
	needBin(t)
	c := startChild(t, "c-1", testserverArgv("c-1"), nil)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			s, err := c.Open()
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			for j := range 20 {
				want := fmt.Sprintf("session %d call %d", i, j)
				m := callTool(t, s, "1", "echo", `{"text":"`+want+`"}`, 10*time.Second)
				if got := text(m); got != want || fmt.Sprint(m["id"]) != "1" {
					t.Errorf("session %d call %d: answer %v", i, j, m)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := c.Info().Sessions; n != 0 {
		t.Errorf("%d sessions left open after every Close", n)
	}
}

// TestChildLostMidCall: SIGKILL of a child during an 8 s call answers the
// call with replica_lost within 1 s, ends its sessions, and the child is
// back within its backoff; another child's session is untouched.
func TestChildLostMidCall(t *testing.T) {
	needBin(t)
	a := startChild(t, "a", testserverArgv("a"), nil)
	b := startChild(t, "b", testserverArgv("b"), nil)
	sa, _ := a.Open()
	sb, _ := b.Open()
	if err := sa.Send([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"seconds":8}}}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the call is running
	pid := a.Info().PID
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m := waitAnswer(t, sa, time.Second)
	if took := time.Since(killed); took > time.Second {
		t.Errorf("replica_lost after %v, want within 1s", took)
	}
	e, _ := m["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	if fmt.Sprint(m["id"]) != "7" || fmt.Sprint(e["code"]) != "-32603" || data["reason"] != "replica_lost" || data["replica"] != "a" || data["may_have_run"] != true {
		t.Errorf("answer %v, want the replica_lost error for id 7", m)
	}
	if _, open := <-sa.Messages(); open {
		t.Error("the lost child's session goes on")
	}
	if err := sa.Send([]byte(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)); err == nil {
		t.Error("a lost child's session took a request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if i := a.Info(); i.Restarts != 1 || i.PID == pid {
		t.Errorf("after the kill: %d restarts, pid %d (was %d)", i.Restarts, i.PID, pid)
	}
	if got := text(callTool(t, sb, "1", "whoami", "{}", 5*time.Second)); got != "b" {
		t.Errorf("b's session answered %q", got)
	}
	s, err := a.Open()
	if err != nil {
		t.Fatal(err)
	}
	if got := text(callTool(t, s, "1", "whoami", "{}", 5*time.Second)); got != "a" {
		t.Errorf("the restarted child answered %q", got)
	}
}

// groupMembers lists the processes of group pgid, read from /proc.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so after ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestChildWrapperLeavesNothing: a child started through sh -c, whose
// server is a grandchild beside a loop that writes about 10,000 stderr
// lines a second, serves 100 sessions that open, call and close; after a
// restart and Close no process of its groups remains.
func TestChildWrapperLeavesNothing(t *testing.T) {
	needBin(t)
	flood := `while :; do i=0; while [ $i -lt 100 ]; do echo "flood $i"; i=$((i+1)); done >&2; sleep 0.01; done`
	script := `(` + flood + `) & (sleep 0.3; echo "not JSON, and not fatal") & ` + QuoteCommand(testserverArgv("w")) + `; true`
	c := startChild(t, "w", []string{"sh", "-c", script}, func(o *Options) { o.StderrLines = 50 })
	var groups []int
	for i := range 100 {
		s, err := c.Open()
		if err != nil {
			t.Fatal(err)
		}
		if got := text(callTool(t, s, "1", "whoami", "{}", 5*time.Second)); got != "w" {
			t.Fatalf("session %d: whoami %q", i, got)
		}
		s.Close()
		if i == 50 { // a restart midway, as a reload would
			info := c.Info()
			groups = append(groups, info.PID)
			if n := len(groupMembers(t, info.PID)); n < 3 {
				t.Errorf("the wrapper's group has %d processes, want sh, the flood and the server", n)
			}
			_ = syscall.Kill(-info.PID, syscall.SIGTERM)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			for c.Info().PID == info.PID || c.Ready(ctx) != nil {
				if ctx.Err() != nil {
					t.Fatal("the child did not come back")
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
		}
	}
	info := c.Info()
	if info.StderrTotal < 100 || len(info.Stderr) != 50 {
		t.Errorf("stderr: %d lines written, %d kept; want the flood, 50 kept", info.StderrTotal, len(info.Stderr))
	}
	if info.Restarts != 1 {
		t.Errorf("%d restarts, want the one the test caused: the non-JSON line or the flood cost a child", info.Restarts)
	}
	groups = append(groups, info.PID)
	c.Close()
	for _, g := range groups {
		if left := groupMembers(t, g); len(left) > 0 || groupAlive(g) {
			t.Errorf("group %d: processes %v remain", g, left)
			_ = syscall.Kill(-g, syscall.SIGKILL)
		}
	}
}

// TestChildOverLongLine: an answer over max_line_bytes loses the child:
// the call gets replica_lost, and the child restarts.
func TestChildOverLongLine(t *testing.T) {
	needBin(t)
	c := startChild(t, "l", testserverArgv("l"), func(o *Options) { o.MaxLineBytes = 4096 })
	s, _ := c.Open()
	m := callTool(t, s, "1", "echo", `{"text":"`+strings.Repeat("x", 8192)+`"}`, 5*time.Second)
	if e, _ := m["error"].(map[string]any); fmt.Sprint(e["code"]) != "-32603" {
		t.Errorf("an over-long answer: %v, want replica_lost", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ = c.Open()
	if got := text(callTool(t, s, "1", "echo", `{"text":"short"}`, 5*time.Second)); got != "short" {
		t.Errorf("after the restart: %q", got)
	}
}

// TestChildStopsReading: a child that stops reading its stdin holds a
// sender only up to the write timeout; then the child is lost and the
// call gets replica_lost.
func TestChildStopsReading(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	init := `{"jsonrpc":"2.0","id":"mcpfleet-initialize","result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"deaf","version":"1"}}}`
	script := `read line; echo '` + init + `'; exec sleep 60`
	c := startChild(t, "deaf", []string{"sh", "-c", script}, func(o *Options) { o.WriteTimeout = 300 * time.Millisecond })
	s, err := c.Open()
	if err != nil {
		t.Fatal(err)
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 1<<20) + `"}}}`
	start := time.Now()
	err = s.Send([]byte(big))
	if took := time.Since(start); !errors.Is(err, ErrWrite) || took > 3*time.Second {
		t.Errorf("Send to a child that reads nothing: %v after %v, want ErrWrite after about 300ms", err, took)
	}
	m := waitAnswer(t, s, 3*time.Second)
	if e, _ := m["error"].(map[string]any); fmt.Sprint(e["code"]) != "-32603" || fmt.Sprint(m["id"]) != "1" {
		t.Errorf("the call's answer: %v, want replica_lost for id 1", m)
	}
}

// TestChildNotificationsKeepTheirBytes: notifications the child writes
// back to back, passed on as they are, each reach the session whole: the
// second line read does not overwrite the first while it waits in the
// session's queue.
func TestChildNotificationsKeepTheirBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	note := func(data string) string {
		return `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + data + `"}}`
	}
	first, second := note("first"), note("the second, which is longer than the first")
	script := `read l; echo '{"jsonrpc":"2.0","id":"mcpfleet-initialize","result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"sh","version":"1"}}}'; ` +
		`read l; read l; printf '%s\n%s\n' '` + first + `' '` + second + `'; sleep 30`
	c := startChild(t, "n", []string{"sh", "-c", script}, nil)
	s, err := c.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"log","arguments":{}}}`)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{first, second} {
		select {
		case got := <-s.Messages():
			if string(got) != want {
				t.Errorf("the session got %s, want %s", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no notification within 5 s; want %s", want)
		}
	}
}

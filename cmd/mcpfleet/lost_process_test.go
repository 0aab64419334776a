package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startGroup runs bin with args, and env added to the test's, in a
// process group of its own, and returns the started command, whose PID
// is the group's ID; the group is killed and reaped at the end of the
// test whatever happened.
func startGroup(t *testing.T, env []string, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	return cmd
}

// runGroup starts a command of startGroup.
func runGroup(t *testing.T, cmd *exec.Cmd) (pgid int) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// startKillable runs "mcpfleet args..." in a process group of its own
// (startGroup) and returns the group's ID, for the test to kill it.
func startKillable(t *testing.T, args ...string) (pgid int) {
	t.Helper()
	return runGroup(t, startGroup(t, []string{"MCPFLEET_RUN_MAIN=1"}, os.Args[0], args...))
}

// TestReplicaKilledMidCall is the Done-when of a replica lost mid-call with
// real processes: the official Go SDK client calls an 8 s sleep with
// progress through mcpfleet serve on one testserver replica, the test
// SIGKILLs the replica after the first progress, and the client gets a
// JSON-RPC error (-32603, replica_lost, may_have_run true) within a second
// of the kill, not at its own timeout, in both eras; the gateway counts it.
func TestReplicaKilledMidCall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			addr := testproc.FreeAddr(t)
			replica := startKillable(t, "testserver", "--listen", addr)
			testproc.WaitReady(t, "http://"+addr+"/health")
			gw, admin := testproc.FreeAddr(t), testproc.FreeAddr(t)
			startProcess(t, "serve", "--listen", gw, "--admin", admin, "--upstream", "http://"+addr+"/mcp")
			testproc.WaitReady(t, "http://"+gw+"/readyz")

			var once sync.Once
			progressed := make(chan struct{})
			c := mcp.NewClient(&mcp.Implementation{Name: "lost-test", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
					once.Do(func() { close(progressed) })
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 8, "progress_every": 0.2}}
			params.SetProgressToken("p")
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, params)
				done <- err
			}()
			select {
			case <-progressed:
			case err := <-done:
				t.Fatalf("the call ended before its first progress: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("no progress in 10 s")
			}
			if err := syscall.Kill(-replica, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the call still waits 5 s after its replica was killed")
			}
			if waited := time.Since(killed); waited > time.Second {
				t.Errorf("the client's answer came %v after the kill, want under 1 s", waited)
			}
			// A replica given by --upstream alone is named by its address.
			checkReplicaLost(t, err, addr)
			if n := metricWith(t, admin, "mcpfleet_replica_lost_calls_total", `replica="`+addr+`"`); n != 1 {
				t.Errorf("mcpfleet_replica_lost_calls_total{replica=%q} = %v, want 1", addr, n)
			}
		})
	}
}

// checkReplicaLost checks that err is the gateway's replica_lost JSON-RPC
// error for replica, saying the call may have run.
func checkReplicaLost(t *testing.T, err error, replica string) {
	t.Helper()
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		t.Fatalf("the call ended with %v, want a JSON-RPC error", err)
	}
	var data struct {
		Reason     string `json:"reason"`
		Replica    string `json:"replica"`
		MayHaveRun bool   `json:"may_have_run"`
	}
	if rpc.Code != jsonrpc.CodeInternalError || json.Unmarshal(rpc.Data, &data) != nil ||
		data.Reason != "replica_lost" || data.Replica != replica || !data.MayHaveRun {
		t.Errorf("error %d %q data %s, want -32603 replica_lost of %s, may_have_run true", rpc.Code, rpc.Message, rpc.Data, replica)
	}
}

// TestReplicaKilledMidCallTypeScript is TestReplicaKilledMidCall with the
// official TypeScript SDK's client (testdata/lost-client.mjs), in the two
// transports it speaks: Streamable HTTP at 2025-11-25 in front of a
// testserver, and the 2024-11-05 HTTP+SSE transport in front of the
// TypeScript everything server in SSE mode. The client gets the JSON-RPC
// error within a second of the kill, not at its 60 s request timeout.
func TestReplicaKilledMidCallTypeScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	node, modules := nodeTools(t)
	script := nodeScript(t, modules, "lost-client.mjs")
	tests := []struct {
		name, mode, tool, args string
		replica                func(t *testing.T) (addr string, pgid int)
	}{
		{"2025-11-25", "streamable", "sleep", `{"seconds":8,"progress_every":0.2}`, func(t *testing.T) (string, int) {
			addr := testproc.FreeAddr(t)
			pgid := startKillable(t, "testserver", "--listen", addr)
			testproc.WaitReady(t, "http://"+addr+"/health")
			return addr, pgid
		}},
		{"2024-11-05", "sse", "trigger-long-running-operation", `{"duration":8,"steps":40}`, func(t *testing.T) (string, int) {
			addr := testproc.FreeAddr(t)
			_, port, _ := net.SplitHostPort(addr)
			pgid := runGroup(t, startGroup(t, []string{"PORT=" + port}, node, filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js"), "sse"))
			waitListening(t, addr)
			return addr, pgid
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, replica := tt.replica(t)
			gw, admin := testproc.FreeAddr(t), testproc.FreeAddr(t)
			startProcess(t, "serve", "--listen", gw, "--admin", admin, "--upstream", "http://"+addr+"/mcp")
			testproc.WaitReady(t, "http://"+gw+"/readyz")
			client := startGroup(t, nil, node, script, tt.mode, "http://"+gw, tt.tool, tt.args)
			stdout, err := client.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			runGroup(t, client)
			lines := make(chan string, 2)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			if l := nextLine(t, lines, 20*time.Second); l != "progress" {
				t.Fatalf("the client said %q before any progress", l)
			}
			if err := syscall.Kill(-replica, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			out := nextLine(t, lines, 5*time.Second)
			if waited := time.Since(killed); waited > time.Second {
				t.Errorf("the client's answer came %v after the kill, want under 1 s", waited)
			}
			var res struct {
				Error *jsonrpc.Error `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || res.Error == nil {
				t.Fatalf("the call ended with %s, want a JSON-RPC error", out)
			}
			checkReplicaLost(t, res.Error, addr)
			if n := metricWith(t, admin, "mcpfleet_replica_lost_calls_total", `replica="`+addr+`"`); n != 1 {
				t.Errorf("mcpfleet_replica_lost_calls_total{replica=%q} = %v, want 1", addr, n)
			}
		})
	}
}

// nextLine waits up to d for the client's next line of output.
func nextLine(t *testing.T, lines <-chan string, d time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the client exited without a word")
		}
		return l
	case <-time.After(d):
		t.Fatalf("the client said nothing for %v", d)
	}
	return ""
}

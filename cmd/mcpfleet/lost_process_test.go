package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startKillable runs "mcpfleet args..." in a process group of its own and
// returns the group's ID, for a test to kill it; the group is killed and
// reaped at the end of the test whatever happened.
func startKillable(t *testing.T, args ...string) (pgid int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "MCPFLEET_RUN_MAIN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if testing.Verbose() {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
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

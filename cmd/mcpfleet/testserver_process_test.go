package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testserverProcess is a running "mcpfleet testserver" process.
type testserverProcess struct {
	cmd    *exec.Cmd
	addr   string         // host:port it serves on
	stdout *bufio.Scanner // its stdout after the first line
	stderr *lockedBuffer
	exited chan error // receives cmd.Wait's result
}

// startTestserver starts "mcpfleet testserver --listen 127.0.0.1:0 args..."
// and reads the address from its first stdout line. The process is killed at
// the end of the test if it is still running.
func startTestserver(t *testing.T, name string, args ...string) *testserverProcess {
	t.Helper()
	args = append([]string{"testserver", "--listen", "127.0.0.1:0", "--name", name}, args...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "MCPFLEET_RUN_MAIN=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &testserverProcess{cmd: cmd, stdout: bufio.NewScanner(out), stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // already gone when the test waited for it
	})
	if !p.stdout.Scan() {
		t.Fatalf("no first line from testserver; stderr:\n%s", p.stderr.String())
	}
	line := p.stdout.Text()
	addr, okPrefix := strings.CutPrefix(line, "mcpfleet testserver "+name+": serving MCP at http://")
	addr, okSuffix := strings.CutSuffix(addr, "/mcp")
	if !okPrefix || !okSuffix {
		t.Fatalf("first line %q", line)
	}
	p.addr = addr
	go func() {
		// The pipe must be read to its end before Wait.
		p.exited <- cmd.Wait()
	}()
	return p
}

// health returns the running and queued counts /health reports.
func (p *testserverProcess) health(t *testing.T) (running, queued int) {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ Running, Queued int }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h.Running, h.Queued
}

// waitLoad waits until /health reports running and queued.
func (p *testserverProcess) waitLoad(t *testing.T, running, queued int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r, q := p.health(t); r == running && q == queued {
			return
		}
	}
	t.Fatalf("/health never reported %d running, %d queued", running, queued)
}

// stop sends SIGTERM and returns the rest of stdout and the exit code.
func (p *testserverProcess) stop(t *testing.T) (lines []string, code int) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for p.stdout.Scan() {
		lines = append(lines, p.stdout.Text())
	}
	select {
	case err := <-p.exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return lines, ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return lines, 0
	case <-time.After(20 * time.Second):
		t.Fatal("testserver did not exit after SIGTERM")
		return nil, 0
	}
}

// TestTestserverReportsKilledCalls runs testserver processes, SIGTERMs them
// with calls in flight and reads the stopped line: a call still running when
// the grace runs out is killed and counted, one waiting for a slot is not,
// and a call that finishes within the grace is not either.
func TestTestserverReportsKilledCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	tests := []struct {
		name     string
		args     []string
		seconds  float64 // each sleep
		calls    int
		running  int // calls running at SIGTERM
		killed   int
		wantCode int
	}{
		{"grace runs out", []string{"--grace", "200ms", "--slots", "1"}, 30, 2, 1, 1, 1},
		{"grace long enough", []string{"--grace", "10s"}, 1, 1, 1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startTestserver(t, "g", tt.args...)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "mcpfleet-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.addr + "/mcp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			for range tt.calls {
				go func() {
					_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": tt.seconds}})
				}()
			}
			p.waitLoad(t, tt.running, tt.calls-tt.running)

			lines, code := p.stop(t)
			want := []string{fmt.Sprintf("mcpfleet testserver g: stopped, %d calls killed", tt.killed)}
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("stdout after the first line %q, want %q", lines, want)
			}
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, p.stderr.String())
			}
			checkStoppedLog(t, p.stderr.String(), tt.killed)
		})
	}
}

// checkStoppedLog checks that stderr has the JSON "test server stopped"
// line with killed want. Lines that are not JSON (the error run prints) are
// skipped.
func checkStoppedLog(t *testing.T, stderr string, want int) {
	t.Helper()
	for line := range strings.Lines(stderr) {
		var rec struct {
			Msg    string `json:"msg"`
			Killed *int   `json:"killed"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "test server stopped" {
			continue
		}
		if rec.Killed == nil || *rec.Killed != want {
			t.Errorf("stopped log line killed = %v, want %d", rec.Killed, want)
		}
		return
	}
	t.Errorf("no stopped log line on stderr:\n%s", stderr)
}

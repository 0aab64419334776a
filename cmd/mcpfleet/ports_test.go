package main

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/sockowner"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// TestServePortInUse: serve and demo on a port held by another process
// (a testserver) fail at start with an error naming the listener, the
// port and (on Linux) that process; on a port this test holds, the error
// says it is this same process's.
func TestServePortInUse(t *testing.T) {
	other := testproc.FreeAddr(t)
	startProcess(t, "testserver", "--listen", other)
	testproc.WaitReady(t, "http://"+other+"/health")
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	self := held.Addr().String()
	tests := []struct {
		name, addr string
		args       []string
		key, by    string
	}{
		{"serve listen", other, []string{"serve", "--listen", other}, "listen", ".test (pid "},
		{"serve admin", other, []string{"serve", "--listen", "127.0.0.1:0", "--admin", other}, "admin", ".test (pid "},
		{"demo", other, []string{"demo", "--listen", other, "--replicas", "1"}, "listen", ".test (pid "},
		{"serve, this process", self, []string{"serve", "--listen", self}, "listen", "another listener of this same process"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args[0] == "serve" {
				args = append(args, "--upstream", "http://127.0.0.1:1/mcp", "--health-check-interval", "0s")
			}
			code, _, stderr := runCmd(t, context.Background(), args...)
			_, port, _ := net.SplitHostPort(tt.addr)
			want := fmt.Sprintf("%s: port %s (%s) is already in use", tt.key, port, tt.addr)
			if code != 1 || !strings.Contains(stderr, want) {
				t.Fatalf("exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
			}
			if runtime.GOOS == "linux" && (!strings.Contains(stderr, want+" by ") || !strings.Contains(stderr, tt.by)) {
				t.Errorf("stderr %q does not name the holder (%q)", stderr, tt.by)
			}
		})
	}
}

// TestPortInUseWords: the holder is named when seen, its uid when only
// the socket table shows it, nothing when nothing does.
func TestPortInUseWords(t *testing.T) {
	tests := []struct {
		owners []sockowner.Owner
		want   string
	}{
		{[]sockowner.Owner{{UID: 33, PID: 812, Name: "nginx"}}, "listen: port 8080 (127.0.0.1:8080) is already in use by nginx (pid 812): stop it"},
		{[]sockowner.Owner{{UID: 0}}, "already in use by a process of uid 0 that this user cannot see: stop it"},
		{nil, "listen: port 8080 (127.0.0.1:8080) is already in use: stop it"},
		{[]sockowner.Owner{{UID: 0, PID: 1, Name: "mcpfleet"}}, "in use by another listener of this same process"},
	}
	for _, tt := range tests {
		if got := portInUse("listen", "127.0.0.1:8080", 8080, tt.owners, 1).Error(); !strings.Contains(got, tt.want) {
			t.Errorf("%+v: %q, want %q", tt.owners, got, tt.want)
		}
	}
}

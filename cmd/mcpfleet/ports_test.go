package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/sockowner"
)

// TestServePortInUse: serve and demo on a port this test holds fail at
// start with an error naming the listener, the port and (on Linux) this
// process as its holder.
func TestServePortInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	port := held.Addr().(*net.TCPAddr).Port
	tests := []struct {
		name string
		args []string
		key  string
	}{
		{"serve listen", []string{"serve", "--listen", addr, "--upstream", "http://127.0.0.1:1/mcp", "--health-check-interval", "0s"}, "listen"},
		{"serve admin", []string{"serve", "--listen", "127.0.0.1:0", "--admin", addr, "--upstream", "http://127.0.0.1:1/mcp", "--health-check-interval", "0s"}, "admin"},
		{"demo", []string{"demo", "--listen", addr, "--replicas", "1"}, "listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, context.Background(), tt.args...)
			want := fmt.Sprintf("%s: port %d (%s) is already in use", tt.key, port, addr)
			if code != 1 || !strings.Contains(stderr, want) {
				t.Fatalf("exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
			}
			if runtime.GOOS == "linux" && !strings.Contains(stderr, fmt.Sprintf("(pid %d)", os.Getpid())) {
				t.Errorf("stderr %q does not name this process (pid %d)", stderr, os.Getpid())
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
	}
	for _, tt := range tests {
		if got := portInUse("listen", "127.0.0.1:8080", 8080, tt.owners).Error(); !strings.Contains(got, tt.want) {
			t.Errorf("%+v: %q, want %q", tt.owners, got, tt.want)
		}
	}
}

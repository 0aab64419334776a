package proc_test

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/proc"
)

// TestFreeAddrOutsideEphemeralPorts: on Linux FreeAddr's ports come from
// below the kernel's ephemeral range, where a bind to port 0 elsewhere is
// never given them; one process never gets a port twice, and each can be
// listened on.
func TestFreeAddrOutsideEphemeralPorts(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no /proc/sys/net/ipv4/ip_local_port_range: FreeAddr asks for port 0 here")
	}
	start, err := strconv.Atoi(strings.Fields(string(b))[0])
	if err != nil || start <= 1024 {
		t.Skipf("ephemeral range starts at %q", b)
	}
	seen := map[string]bool{}
	for range 200 {
		addr, err := proc.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		host, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if host != "127.0.0.1" || port < 1024 || port >= start {
			t.Fatalf("FreeAddr = %s, want 127.0.0.1 and a port in [1024, %d)", addr, start)
		}
		if seen[addr] {
			t.Fatalf("FreeAddr gave %s twice", addr)
		}
		seen[addr] = true
	}
	addr, _ := proc.FreeAddr()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on FreeAddr's %s: %v", addr, err)
	}
	ln.Close()
}

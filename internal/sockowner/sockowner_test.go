package sockowner

import (
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestListening reads a socket table as the kernel writes it: only
// listening sockets (state 0A) on the port count, on any address.
func TestListening(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 41001 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 41002 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 41003 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:2382 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 41004 1 0000000000000000 100 0 0 10 0
   4: garbage
`
	got := Listening(strings.NewReader(table), 8080)
	want := map[string]int{"41001": 1000, "41002": 0}
	if len(got) != len(want) || got["41001"] != 1000 || got["41002"] != 0 {
		t.Errorf("Listening(8080) = %v, want %v", got, want)
	}
	if got := Listening(strings.NewReader(table), 9090); len(got) != 1 {
		t.Errorf("Listening(9090) = %v, want the one socket on 0x2382", got)
	}
}

// TestFindHeldPort: a port this test listens on is found, held by this
// very process under its own name.
func TestFindHeldPort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the socket tables are Linux's /proc")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	comm, _ := os.ReadFile("/proc/self/comm")
	owners := Find("/proc", port)
	for _, o := range owners {
		if o.PID == os.Getpid() && o.Name == strings.TrimSpace(string(comm)) && o.UID == os.Getuid() {
			return
		}
	}
	t.Errorf("Find(%d) = %+v, want this process (pid %d)", port, owners, os.Getpid())
}

// TestFindNothing: a port nobody listens on has no owner, and a root
// without socket tables finds nothing rather than failing.
func TestFindNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if got := Find("/proc", port); len(got) != 0 {
		t.Errorf("Find(%d) after close = %+v", port, got)
	}
	if got := Find(t.TempDir(), port); got != nil {
		t.Errorf("Find in an empty root = %+v", got)
	}
}

package proc

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeClusterAddrPair: a cluster node's port and its bus port (+10000)
// are both free, both below the ephemeral range when it can be read, and
// neither is handed out again.
func TestFreeClusterAddrPair(t *testing.T) {
	_, start := pickRange()
	for range 50 {
		addr, err := freeClusterAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if start > 0 && port+10000 >= start {
			t.Fatalf("freeClusterAddr = %s: its bus port %d is not below %d", addr, port+10000, start)
		}
		for _, q := range []int{port, port + 10000} {
			if !listenable(q) {
				t.Fatalf("port %d of %s is not free", q, addr)
			}
		}
		other, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if _, op, _ := net.SplitHostPort(other); op == p || op == strconv.Itoa(port+10000) {
			t.Fatalf("FreeAddr gave %s, a port of the pair %s", other, addr)
		}
	}
}

package gateway

import (
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/mcpfleet/mcpfleet/internal/bottleneck"
	"github.com/mcpfleet/mcpfleet/internal/streams"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// TestSlowReadersLetGo: clients that open an SSE stream on a chatty call and
// never read are let go (their connections reset) within the write timeout
// and a few seconds, in both eras, while the gateway's memory stays bounded
// and a client that reads is served as usual. A legacy call runs on after
// its client is let go (a dropped stream is not a cancel); the connection
// does not wait for it.
func TestSlowReadersLetGo(t *testing.T) {
	const clients = 200
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			f := startFleet(t, 2, &Options{WriteTimeout: time.Second, KeepAlive: 200 * time.Millisecond,
				StreamLimits: streams.Options{MaxTotalBytes: 32 << 20}})
			// Small send buffers fill in a moment; the kernel's own would
			// take megabytes of progress first.
			f.front.Close()
			f.front = newFrontListener(testServer(), f.gw, smallSendBuffers(t))
			// One session each, as separate clients have: a session's
			// replica writes its streams' events one at a time.
			sessions := make([]string, clients)
			if version == "2025-11-25" {
				for i := range sessions {
					r := newRaw(t, f.url(), version)
					r.initialize()
					sessions[i] = r.session
				}
			}
			addr := strings.TrimPrefix(f.front.URL, "http://")
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)

			cpu := bottleneck.New(nil)
			cpuFirst, cpuErr := cpu.Sample()
			lag := watchTimerLag()
			start := time.Now()
			conns := make([]*net.TCPConn, clients)
			for i := range conns {
				conns[i] = testproc.DialNonReader(t, addr, version, sessions[i], 2)
			}
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()

			// A client that reads is served meanwhile.
			cs := connect(t, f.url(), version, nil)
			if got := callText(t, cs, "echo", map[string]any{"text": "hi"}); got != "hi" {
				t.Errorf("echo during the flood = %q", got)
			}

			// Each connection is let go within the write timeout (and a
			// few seconds) of the moment its client stopped taking bytes:
			// its receive queue full and no longer growing. The calls run
			// for a minute; a gateway that held the connections for the
			// call would fail the deadline.
			const slack = 5 * time.Second
			w := watchNonReaders(t, conns, 45*time.Second)
			if w.open > 0 {
				t.Fatalf("%d of %d non-reading clients still connected after %v", w.open, clients, time.Since(start))
			}
			late := lag()
			busy := -1.0
			if cpuLast, err := cpu.Sample(); cpuErr == nil && err == nil {
				busy = bottleneck.Analyze(cpuFirst, cpuLast, cpu.Cores()).MachineBusy
			}
			t.Logf("%d non-reading clients let go, at worst %v after they stopped reading; the machine was %.0f%% busy, timers here fired up to %v late",
				clients, w.worst.Round(10*time.Millisecond), busy*100, late.Round(time.Millisecond))
			// The flood alone keeps the machine busy. When this process was
			// starved of CPU as well (its timers a second late), the write
			// timeout fires late, and so does the watch, by a few such
			// delays in turn: the figure then measures the machine.
			if w.worst > time.Second+slack {
				if late > slack/5 || busy >= bottleneck.SaturatedAt {
					t.Logf("a non-reading client was let go %v after it stopped reading, over %v, on a CPU-starved run (timers %v late, the machine %.0f%% busy): not judged", w.worst, time.Second+slack, late, busy*100)
				} else {
					t.Errorf("a non-reading client was let go %v after it stopped reading, want within %v", w.worst, time.Second+slack)
				}
			}

			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			grew := int64(after.HeapInuse) - int64(before.HeapInuse)
			t.Logf("heap in use grew by %.1f MiB", float64(grew)/(1<<20))
			if grew > 128<<20 {
				t.Errorf("heap in use grew by %d MiB with %d let-go clients", grew>>20, clients)
			}
			if got := callText(t, cs, "sleep", map[string]any{"seconds": 0.1}); !strings.HasPrefix(got, "slept") {
				t.Errorf("sleep after the flood = %q", got)
			}
		})
	}
}

// watchTimerLag starts timing how late a 10 ms sleep wakes in this process;
// the returned func stops it and says the latest wake seen.
func watchTimerLag() func() time.Duration {
	stop := make(chan struct{})
	got := make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		for {
			select {
			case <-stop:
				got <- worst
				return
			default:
			}
			t0 := time.Now()
			time.Sleep(10 * time.Millisecond)
			worst = max(worst, time.Since(t0)-10*time.Millisecond)
		}
	}()
	return func() time.Duration {
		close(stop)
		return <-got
	}
}

// letGo is what watchNonReaders saw.
type letGo struct {
	open  int           // connections still established at the deadline
	worst time.Duration // longest time from stalled to closed
}

// watchNonReaders polls conns until each is closed or the deadline passes.
// A connection stalls when its receive queue is full (the 4 KiB asked for,
// which the kernel doubles) and stops growing.
func watchNonReaders(t *testing.T, conns []*net.TCPConn, deadline time.Duration) letGo {
	t.Helper()
	stalled := make([]time.Time, len(conns))
	queued := make([]int, len(conns))
	closed := make([]bool, len(conns))
	var w letGo
	for end := time.Now().Add(deadline); ; time.Sleep(100 * time.Millisecond) {
		now := time.Now()
		w.open = 0
		for i, c := range conns {
			if closed[i] {
				continue
			}
			if tcpState(t, c) != tcpEstablished {
				closed[i] = true
				if !stalled[i].IsZero() {
					w.worst = max(w.worst, now.Sub(stalled[i]))
				}
				continue
			}
			w.open++
			n := inQueue(t, c)
			if n >= stalledQueue && n == queued[i] && stalled[i].IsZero() {
				stalled[i] = now
			}
			queued[i] = n
		}
		if w.open == 0 || now.After(end) {
			return w
		}
	}
}

// control runs f on c's descriptor.
func control(t *testing.T, c *net.TCPConn, f func(fd uintptr) syscall.Errno) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr syscall.Errno
	_ = rc.Control(func(fd uintptr) { serr = f(fd) })
	if serr != 0 {
		t.Fatalf("inspecting a connection: %v", serr)
	}
}

// inQueue returns the bytes waiting in c's receive queue (SIOCINQ).
func inQueue(t *testing.T, c *net.TCPConn) int {
	t.Helper()
	const siocinq = 0x541B // FIONREAD
	var n int32
	control(t, c, func(fd uintptr) syscall.Errno {
		_, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, siocinq, uintptr(unsafe.Pointer(&n)))
		return e
	})
	return int(n)
}

const (
	tcpEstablished = 1       // tcpi_state of an open connection (linux/tcp_states.h)
	stalledQueue   = 4 << 10 // bytes queued in a receive buffer that takes no more
) // tcpi_state of an open connection (linux/tcp_states.h)

// tcpState reads the kernel's state of c (TCP_INFO): a connection the
// gateway reset or closed is no longer established, read or not.
func tcpState(t *testing.T, c *net.TCPConn) byte {
	t.Helper()
	var info [232]byte
	control(t, c, func(fd uintptr) syscall.Errno {
		n := uint32(len(info))
		_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&n)), 0)
		return e
	})
	return info[0]
}

// smallSendBuffers listens on loopback and gives every accepted connection
// a 4 KiB send buffer.
func smallSendBuffers(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return sndbufListener{ln}
}

type sndbufListener struct{ net.Listener }

func (l sndbufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

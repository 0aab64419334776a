package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSlowReadersMemory measures what 200 clients that open SSE streams on
// a chatty tool and never read (half 2026-07-28 calls, half 2025-11-25
// sessions; 4 KiB receive buffers) cost a real gateway process: its RSS
// and the kernel send queue of its client sockets, each second, with the
// defaults and with memory_limit: 256MiB. It asserts what must hold on
// any machine: the gateway stays up, every non-reader is let go, and a
// client that reads is served throughout; the memory figures are logged
// (docs/BENCHMARKS.md has them for a 60 s run:
// MCPFLEET_SLOW_READERS_SECONDS=60 go test -run TestSlowReadersMemory -v ./cmd/mcpfleet).
// Without the variable only the budget's setup runs, for 6 s.
func TestSlowReadersMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if raceEnabled {
		// The gateway processes are this binary: under the race detector
		// they are not what a user runs, in memory nor in time.
		t.Skip("measures a gateway process: run without -race (scripts/test.sh has a step for it)")
	}
	secs, setups := slowReaderSetups(t)
	ups := slowReaderReplicas(t)
	for _, setup := range setups {
		t.Run(setup.name, func(t *testing.T) { // one at a time: each alone loads two cores
			gw := testproc.FreeAddr(t)
			cfg := "listen: " + gw + "\nwrite_timeout: 1s\nkeepalive: 200ms\ngrace: 1s\n" + setup.cfg + "upstreams:\n" + ups
			path := t.TempDir() + "/gw.yaml"
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := startServeCmd(t, path)
			testproc.WaitReady(t, "http://"+gw+"/readyz")
			rss0 := rssOf(t, cmd.pid)

			var conns []net.Conn
			for i := range 200 {
				version, session := "2026-07-28", ""
				if i%2 == 1 {
					version, session = "2025-11-25", initializeRaw(t, gw)
				}
				conns = append(conns, testproc.DialNonReader(t, gw, version, session, i+2))
			}
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs+60)*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "reader", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			_, port, _ := net.SplitHostPort(gw)
			var peakRSS, peakQ int64
			var served int
			start := time.Now()
			// A non-reader stalls once the gateway's send buffer for it
			// (sse_send_buffer, 256 KiB) is full and no longer moves: the
			// next write waits, and the write timeout lets it go. At 40
			// KiB/s of progress that takes about 13 s; on a machine busy
			// elsewhere the replicas make progress slower, which delays
			// the stall, not the let-go: that is timed from the stall.
			open, stalled, worst := len(conns), make([]time.Time, len(conns)), time.Duration(0)
			queued, closed := make([]int64, len(conns)), make([]bool, len(conns))
			const letGoBy = 10 * time.Second // the write timeout (1 s) and sampling, with room
			for time.Since(start) < time.Duration(secs)*time.Second || (open > 0 && time.Since(start) < time.Duration(secs+50)*time.Second) {
				select {
				case <-cmd.exited:
					t.Fatal("the gateway exited")
				default:
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
				if err != nil || res.IsError {
					t.Fatalf("the reading client after %v: %v %v", time.Since(start).Round(time.Second), res, err)
				}
				served++
				rss, q := rssOf(t, cmd.pid), sendQueue(t, port)
				peakRSS, peakQ = max(peakRSS, rss), max(peakQ, q)
				open = 0
				now := time.Now()
				socks := gatewaySockets(t, port)
				for i, c := range conns {
					if closed[i] {
						continue
					}
					_, cport, _ := net.SplitHostPort(c.LocalAddr().String())
					tx, up := socks[cport]
					if !up {
						closed[i] = true
						if !stalled[i].IsZero() {
							worst = max(worst, now.Sub(stalled[i]))
						}
						continue
					}
					open++
					if tx >= 200<<10 && tx == queued[i] && stalled[i].IsZero() {
						stalled[i] = now
					}
					queued[i] = tx
				}
				time.Sleep(time.Second)
			}
			never := 0
			for i := range conns {
				switch {
				case !closed[i] && stalled[i].IsZero():
					never++
				case !closed[i]:
					t.Errorf("a non-reader stalled %v before the end and is still connected", time.Since(stalled[i]).Round(time.Second))
				}
			}
			if worst > letGoBy {
				t.Errorf("a non-reader was let go %v after it stalled, want within %v", worst, letGoBy)
			}
			if never > 0 {
				t.Logf("the gateway's send buffer of %d of 200 non-readers never filled in %v (the replicas made progress slowly on a busy machine): not judged", never, time.Since(start).Round(time.Second))
			}
			t.Logf("%s, %v: RSS %.0f MiB at start, peak %.0f MiB (grew %.0f MiB); kernel send queue peak %.1f MiB; %d calls of the reading client served; non-readers let go at worst %v after they stalled",
				setup.name, time.Since(start).Round(time.Second), mib(rss0), mib(peakRSS), mib(peakRSS-rss0), mib(peakQ), served, worst.Round(time.Second))
		})
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// slowReaderSetups is what a slow-readers test measures, and for how long:
// the suite the budget's setup for 6 s; a measured run (the variable
// MCPFLEET_SLOW_READERS_SECONDS set) the defaults too, as long as it says.
func slowReaderSetups(t *testing.T) (secs int, setups []struct{ name, cfg string }) {
	t.Helper()
	secs, setups = 6, []struct{ name, cfg string }{{"memory_limit 256MiB", "memory_limit: 256MiB\n"}}
	if s := os.Getenv("MCPFLEET_SLOW_READERS_SECONDS"); s != "" {
		setups = append([]struct{ name, cfg string }{{"defaults", ""}}, setups...)
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 600 {
			t.Fatalf("MCPFLEET_SLOW_READERS_SECONDS=%q: want 1 to 600", s)
		}
		secs = n
	}
	return secs, setups
}

// slowReaderReplicas starts the two replicas of a slow-readers test and
// returns their upstreams list, in YAML.
func slowReaderReplicas(t *testing.T) string {
	t.Helper()
	var ups strings.Builder
	for _, name := range []string{"a", "b"} {
		addr := testproc.FreeAddr(t)
		startReplica(t, name, addr)
		fmt.Fprintf(&ups, "  - {name: %s, url: 'http://%s/mcp'}\n", name, addr)
	}
	return ups.String()
}

// serveProc is a serve process; exited is closed once it has exited.
type serveProc struct {
	pid    int
	exited chan struct{}
}

// startServeCmd runs serve --config path as a process, stopped at the end.
func startServeCmd(t *testing.T, path string) *serveProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--config", path)
	cmd.Env = append(os.Environ(), "MCPFLEET_RUN_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// rssOf is a process's resident set (VmRSS of /proc/<pid>/status).
func rssOf(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q", rest)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// tcpSockets calls f with the local port, state, send and receive queue
// of every IPv4 and IPv6 TCP socket of the machine (/proc/net/tcp,
// proc(5)).
func tcpSockets(t *testing.T, f func(port, remote, state string, txQueue, rxQueue int64)) {
	t.Helper()
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Scan() // the header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 5 {
				continue
			}
			local, rem, queues := fs[1], fs[2], fs[4]
			port, err := strconv.ParseInt(local[strings.LastIndexByte(local, ':')+1:], 16, 32)
			rport, err4 := strconv.ParseInt(rem[strings.LastIndexByte(rem, ':')+1:], 16, 32)
			tx, rx, _ := strings.Cut(queues, ":")
			n, err2 := strconv.ParseInt(tx, 16, 64)
			m, err3 := strconv.ParseInt(rx, 16, 64)
			if err == nil && err2 == nil && err3 == nil && err4 == nil {
				f(strconv.FormatInt(port, 10), strconv.FormatInt(rport, 10), fs[3], n, m)
			}
		}
	}
}

// sendQueue sums the send queues of the sockets on local port port.
func sendQueue(t *testing.T, port string) int64 {
	var sum int64
	tcpSockets(t, func(p, _, _ string, tx, _ int64) {
		if p == port {
			sum += tx
		}
	})
	return sum
}

// gatewaySockets maps the client port of every established socket of the
// gateway on port to what its send queue holds: a client connection is
// there while the gateway has not let it go.
func gatewaySockets(t *testing.T, port string) map[string]int64 {
	m := map[string]int64{}
	tcpSockets(t, func(p, remote, state string, tx, _ int64) {
		if p == port && state == "01" {
			m[remote] = tx
		}
	})
	return m
}

// initializeRaw opens a 2025-11-25 session through gw and returns its ID.
func initializeRaw(t *testing.T, gw string) string {
	t.Helper()
	return initializeOver(t, http.DefaultClient, "http://"+gw+"/mcp")
}

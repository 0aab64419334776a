// Command floor is the least a Go proxy with a goroutine per connection
// costs a request: it reads an HTTP/1.1 request head and its Content-Length
// body, writes them to a kept-alive connection of its own to one replica
// (round robin over the connections), reads the answer's head and body and
// writes them back, with an access line per request written every 10 ms
// when --log-level is info. No parsing beyond that, no limits, no sessions,
// no checks: not a proxy to use, a floor to measure the gateway against.
// bench/compare.sh runs it as a target beside mcpfleet and nginx
// (docs/BENCHMARKS.md, "The floor of a goroutine per connection"):
//
//	go build -o /tmp/floor ./bench/floor
//	ACCESS_LOG=1 LIGHT=1 bash bench/compare.sh mcpfleet=/tmp/mcpfleet floor=/tmp/floor
//
// With --tls-cert-file and --tls-key-file it serves HTTP/1.1 and HTTP/2
// over TLS through net/http's server instead, a handler relaying each
// request the same way over a pool of kept-alive replica connections: the
// floor of bench/tls.sh's targets (bash bench/tls.sh floor=/tmp/floor).
//
// It takes mcpfleet serve's flags that the scripts pass (serve --listen,
// --admin, --log-level, --upstream, --tls-cert-file, --tls-key-file;
// others are ignored) and serves the Go runtime's allocation count on
// --admin's /metrics, as mcpfleet does.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	var listen, admin, level, cert, key string
	var ups []string
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--listen":
			listen = args[i+1]
		case "--admin":
			admin = args[i+1]
		case "--log-level":
			level = args[i+1]
		case "--tls-cert-file":
			cert = args[i+1]
		case "--tls-key-file":
			key = args[i+1]
		case "--upstream":
			u, err := url.Parse(args[i+1])
			if err != nil {
				log.Fatal(err)
			}
			ups = append(ups, u.Host)
		default:
			continue
		}
		i++
	}
	if listen == "" || len(ups) == 0 {
		log.Fatal("usage: floor serve --listen ADDR --upstream URL... [--admin ADDR] [--log-level info]")
	}
	if admin != "" {
		go serveMetrics(admin)
	}
	var lw *lineWriter
	if level == "info" || level == "debug" {
		lw = newLineWriter(os.Stderr)
	}
	if cert != "" {
		serveTLS(listen, cert, key, ups, lw)
		return
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		log.Fatal(err)
	}
	var next atomic.Uint64
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		up := ups[next.Add(1)%uint64(len(ups))]
		go serve(c, up, lw)
	}
}

func serveMetrics(addr string) {
	http.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Fprintf(w, "go_memstats_mallocs_total %d\n", m.Mallocs)
	})
	log.Fatal(http.ListenAndServe(addr, nil))
}

// serve relays the requests of client connection c to one connection to up.
func serve(c net.Conn, up string, lw *lineWriter) {
	defer c.Close()
	u, err := net.Dial("tcp", up)
	if err != nil {
		return
	}
	defer u.Close()
	cr, ur := bufio.NewReaderSize(c, 4096), bufio.NewReaderSize(u, 4096)
	var req, resp []byte
	for {
		start := time.Now()
		var err error
		if req, _, err = readMessage(cr, req[:0]); err != nil {
			return
		}
		if _, err = u.Write(req); err != nil {
			return
		}
		if resp, _, err = readMessage(ur, resp[:0]); err != nil {
			return
		}
		if _, err = c.Write(resp); err != nil {
			return
		}
		if lw != nil {
			lw.line(c.RemoteAddr().String(), len(resp), time.Since(start))
		}
	}
}

// serveTLS serves HTTP/1.1 and HTTP/2 over TLS with net/http's server,
// relaying each request over a pool of kept-alive connections to the
// replicas.
func serveTLS(listen, cert, key string, ups []string, lw *lineWriter) {
	pool := make(chan *upConn, 256)
	var next atomic.Uint64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var u *upConn
		select {
		case u = <-pool:
		default:
			c, err := net.Dial("tcp", ups[next.Add(1)%uint64(len(ups))])
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			u = &upConn{c: c, br: bufio.NewReaderSize(c, 4096)}
		}
		u.req = fmt.Appendf(u.req[:0], "POST /mcp HTTP/1.1\r\nHost: upstream\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", len(body))
		u.req = append(u.req, body...)
		if _, err := u.c.Write(u.req); err != nil {
			u.c.Close()
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		var at int
		if u.resp, at, err = readMessage(u.br, u.resp[:0]); err != nil {
			u.c.Close()
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(u.resp[at:])
		if lw != nil {
			lw.line(r.RemoteAddr, len(u.resp)-at, time.Since(start))
		}
		select {
		case pool <- u:
		default:
			u.c.Close()
		}
	})
	s := &http.Server{Addr: listen, Handler: h}
	log.Fatal(s.ListenAndServeTLS(cert, key))
}

// upConn is a kept-alive connection to a replica, with its buffers.
type upConn struct {
	c         net.Conn
	br        *bufio.Reader
	req, resp []byte
}

var contentLength = []byte("content-length:")

// readMessage appends one HTTP/1.1 message (head and Content-Length body) to
// buf, the head's lines as they came and the body by its length, and
// returns where the body starts.
func readMessage(r *bufio.Reader, buf []byte) ([]byte, int, error) {
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return buf, 0, err
		}
		buf = append(buf, line...)
		if len(line) <= 2 {
			break
		}
		if len(line) > len(contentLength) && bytes.EqualFold(line[:len(contentLength)], contentLength) {
			n, err = strconv.Atoi(string(bytes.TrimSpace(line[len(contentLength):])))
			if err != nil {
				return buf, 0, err
			}
		}
	}
	at := len(buf)
	buf = slices.Grow(buf, n)[:at+n]
	_, err := io.ReadFull(r, buf[at:])
	return buf, at, err
}

// lineWriter buffers access lines and writes them every 10 ms.
type lineWriter struct {
	mu  sync.Mutex
	buf []byte
}

func newLineWriter(w io.Writer) *lineWriter {
	lw := &lineWriter{}
	go func() {
		var out []byte
		for range time.Tick(10 * time.Millisecond) {
			lw.mu.Lock()
			out, lw.buf = lw.buf, out[:0]
			lw.mu.Unlock()
			if len(out) > 0 {
				_, _ = w.Write(out)
			}
		}
	}()
	return lw
}

func (lw *lineWriter) line(remote string, size int, took time.Duration) {
	lw.mu.Lock()
	lw.buf = fmt.Appendf(lw.buf, `{"time":%q,"msg":"request","remote":%q,"status":200,"bytes":%d,"duration_us":%d}`+"\n",
		time.Now().UTC().Format(time.RFC3339Nano), remote, size, took.Microseconds())
	lw.mu.Unlock()
}

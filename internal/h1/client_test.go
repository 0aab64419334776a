package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// wait bounds every blocking step of these tests: a test that would hang
// fails instead.
const wait = 5 * time.Second

// server is a raw loopback HTTP/1.1 server whose handler sees the bytes the
// client sent and writes exactly the bytes a test wants.
type server struct {
	ln       net.Listener
	addr     string
	accepted atomic.Int32

	mu    sync.Mutex
	conns []net.Conn
	ends  map[int]chan error
	wg    sync.WaitGroup
}

// handler serves connection n (1 for the first accepted) and returns what
// ended it.
type handler func(n int, c net.Conn, br *bufio.Reader) error

func newServer(t *testing.T, h handler) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, addr: ln.Addr().String(), ends: make(map[int]chan error)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// A client that never closes nor answers fails the test
			// rather than hanging it.
			c.SetDeadline(time.Now().Add(2 * wait))
			n := int(s.accepted.Add(1))
			end := s.end(n)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				end <- h(n, c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *server) end(n int) chan error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.ends[n]
	if !ok {
		ch = make(chan error, 1)
		s.ends[n] = ch
	}
	return ch
}

// waitClosed waits for the handler of connection n to end and checks that
// it ended because the client closed the connection.
func (s *server) waitClosed(t *testing.T, n int) {
	t.Helper()
	select {
	case err := <-s.end(n):
		if !isClosedErr(err) {
			t.Fatalf("connection %d ended with %v, want the client's close", n, err)
		}
	case <-time.After(wait):
		t.Fatalf("connection %d still open after %v", n, wait)
	}
}

// notClosed checks that connection n is still being served.
func (s *server) notClosed(t *testing.T, n int) {
	t.Helper()
	select {
	case err := <-s.end(n):
		t.Fatalf("connection %d ended: %v", n, err)
	default:
	}
}

func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// keepAlive answers every request on a connection with resp(n, req), until
// the connection ends.
func keepAlive(resp func(n int, req *http.Request) string) handler {
	return func(n int, c net.Conn, br *bufio.Reader) error {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return err
			}
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				return err
			}
			if _, err := io.WriteString(c, resp(n, req)); err != nil {
				return err
			}
		}
	}
}

func fixed(s string) func(int, *http.Request) string {
	return func(int, *http.Request) string { return s }
}

const okResponse = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"

// testPool returns a pool dialing loopback and a count of its dials.
func testPool(t *testing.T, maxIdle int) (*Pool, *atomic.Int32) {
	t.Helper()
	var dials atomic.Int32
	d := &net.Dialer{}
	p := NewPool(func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}, maxIdle, time.Minute)
	t.Cleanup(func() { p.CloseIdle(true) })
	return p, &dials
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}

func getReq() *Request {
	return &Request{Method: "GET", Target: "/mcp", Host: "replica.test"}
}

// do sends req and reads the whole body, which it closes.
func do(t *testing.T, p *Pool, addr string, req *Request) (*http.Response, string) {
	t.Helper()
	resp, delivered, err := p.Do(testCtx(t), addr, req)
	if err != nil {
		t.Fatalf("Do: %v (delivered %v)", err, delivered)
	}
	if !delivered {
		t.Fatalf("Do succeeded with delivered false")
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatalf("closing the body: %v", err)
	}
	return resp, string(body)
}

func idleCount(p *Pool, addr string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle[addr])
}

func idleConn(t *testing.T, p *Pool, addr string) *conn {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[addr]
	if len(list) != 1 {
		t.Fatalf("%d idle connections, want 1", len(list))
	}
	return list[0]
}

func TestDoReusesConnection(t *testing.T) {
	var requests atomic.Int32
	s := newServer(t, keepAlive(func(n int, req *http.Request) string {
		requests.Add(1)
		return okResponse
	}))
	p, dials := testPool(t, 4)
	for i := range 3 {
		resp, body := do(t, p, s.addr, getReq())
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		if resp.ContentLength != 2 || resp.Header.Get("Content-Type") != "text/plain" || resp.Close {
			t.Fatalf("request %d: length %d, header %q, close %v", i, resp.ContentLength, resp.Header, resp.Close)
		}
		if n := idleCount(p, s.addr); n != 1 {
			t.Fatalf("after request %d: %d idle connections, want 1", i, n)
		}
	}
	if n := s.accepted.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want 1", n)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("pool dialled %d times, want 1", n)
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("server answered %d requests, want 3", n)
	}
	s.notClosed(t, 1)
}

func TestDoResponseFields(t *testing.T) {
	s := newServer(t, keepAlive(func(n int, req *http.Request) string {
		switch req.URL.Path {
		case "/created":
			return "HTTP/1.1 201 Created\r\nMcp-Session-Id: s1\r\nSet-Cookie: a\r\nSet-Cookie: b\r\nContent-Length: 0\r\n\r\n"
		case "/chunked":
			return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"
		case "/continue":
			return "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nyes"
		}
		return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
	}))
	p, _ := testPool(t, 4)

	req := getReq()
	req.Target = "/created"
	resp, body := do(t, p, s.addr, req)
	if resp.StatusCode != 201 || resp.Status != "201 Created" || body != "" || resp.ContentLength != 0 {
		t.Errorf("/created: %q, length %d, body %q", resp.Status, resp.ContentLength, body)
	}
	if resp.ProtoMajor != 1 || resp.ProtoMinor != 1 {
		t.Errorf("/created: proto %d.%d", resp.ProtoMajor, resp.ProtoMinor)
	}
	if got := resp.Header["Set-Cookie"]; len(got) != 2 || got[0] != "a" || got[1] != "b" || resp.Header.Get("Mcp-Session-Id") != "s1" {
		t.Errorf("/created: header %q", resp.Header)
	}

	req.Target = "/chunked"
	resp, body = do(t, p, s.addr, req)
	if resp.StatusCode != 200 || body != "hi" || resp.ContentLength != -1 {
		t.Errorf("/chunked: %d, length %d, body %q", resp.StatusCode, resp.ContentLength, body)
	}

	req.Target = "/continue"
	resp, body = do(t, p, s.addr, req)
	if resp.StatusCode != 200 || body != "yes" {
		t.Errorf("/continue: %d, body %q", resp.StatusCode, body)
	}

	req.Target = "/missing"
	resp, body = do(t, p, s.addr, req)
	if resp.StatusCode != 404 || body != "" {
		t.Errorf("/missing: %d, body %q", resp.StatusCode, body)
	}
	if n := s.accepted.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want 1", n)
	}
}

func TestDoNoBodyStatusReusesConnection(t *testing.T) {
	// A 304 with a Content-Length has no body: the next answer follows the
	// head at once. Reading 100 bytes of body would swallow it.
	s := newServer(t, keepAlive(func(n int, req *http.Request) string {
		switch req.URL.Path {
		case "/304":
			return "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n"
		case "/204":
			return "HTTP/1.1 204 No Content\r\n\r\n"
		}
		return okResponse
	}))
	p, _ := testPool(t, 4)
	for _, target := range []string{"/304", "/x", "/204", "/x", "/204", "/304"} {
		req := getReq()
		req.Target = target
		resp, body := do(t, p, s.addr, req)
		want := map[string]string{"/304": "", "/204": "", "/x": "ok"}[target]
		if body != want || resp.ContentLength != int64(len(want)) {
			t.Fatalf("%s: body %q, length %d", target, body, resp.ContentLength)
		}
	}
	if n := s.accepted.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want 1", n)
	}
}

func TestDoConnectionCloseDialsAnew(t *testing.T) {
	for _, tc := range []struct {
		name, resp, body string
	}{
		{"Connection: close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", "ok"},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", "ok"},
		{"TE and CL", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\nok\r\n0\r\n\r\n", "ok"},
		{"204 with close", "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The server does not close: the client must.
			s := newServer(t, keepAlive(fixed(tc.resp)))
			p, dials := testPool(t, 4)
			for i := 1; i <= 2; i++ {
				resp, body := do(t, p, s.addr, getReq())
				if body != tc.body || !resp.Close {
					t.Fatalf("request %d: body %q, Close %v", i, body, resp.Close)
				}
				s.waitClosed(t, i)
				if n := idleCount(p, s.addr); n != 0 {
					t.Fatalf("request %d: %d idle connections, want 0", i, n)
				}
			}
			if n := dials.Load(); n != 2 {
				t.Errorf("pool dialled %d times, want 2", n)
			}
		})
	}
}

func TestDoBodyUntilClose(t *testing.T) {
	s := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		if _, err := http.ReadRequest(br); err != nil {
			return err
		}
		_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it, "+strconv.Itoa(n))
		return err // the deferred Close ends the body
	})
	p, _ := testPool(t, 4)
	for i := 1; i <= 2; i++ {
		resp, body := do(t, p, s.addr, getReq())
		if want := "all of it, " + strconv.Itoa(i); body != want || !resp.Close || resp.ContentLength != -1 {
			t.Fatalf("request %d: body %q, Close %v, length %d; want %q", i, body, resp.Close, resp.ContentLength, want)
		}
	}
	if n := s.accepted.Load(); n != 2 {
		t.Errorf("server accepted %d connections, want 2", n)
	}
}

func TestDoServerClosedIdleConnection(t *testing.T) {
	needPeek(t)
	closed := make(chan int, 4)
	s := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		req, err := http.ReadRequest(br)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, req.Body)
		// A kept-alive answer, and then the replica drops the connection,
		// as one does when its idle timeout fires.
		if _, err := io.WriteString(c, okResponse); err != nil {
			return err
		}
		if n == 1 {
			c.Close()
			closed <- n
			return nil
		}
		_, err = br.ReadByte()
		return err
	})
	p, dials := testPool(t, 4)
	if _, body := do(t, p, s.addr, getReq()); body != "ok" {
		t.Fatalf("first body %q", body)
	}
	select {
	case <-closed:
	case <-time.After(wait):
		t.Fatal("server did not close")
	}
	// The FIN reaches the client's socket in a moment; wait for it so that
	// what follows does not depend on timing.
	c := idleConn(t, p, s.addr)
	deadline := time.Now().Add(wait)
	for alive(c.nc) {
		if time.Now().After(deadline) {
			t.Fatal("a connection the server closed still looks alive")
		}
		time.Sleep(time.Millisecond)
	}

	resp, delivered, err := p.Do(testCtx(t), s.addr, getReq())
	if err != nil || !delivered {
		t.Fatalf("Do after the server closed the idle connection: delivered %v, error %v", delivered, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "ok" {
		t.Fatalf("second body %q, %v", body, err)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("pool dialled %d times, want 2", n)
	}
	if n := s.accepted.Load(); n != 2 {
		t.Errorf("server accepted %d connections, want 2", n)
	}
}

func TestDoUnaskedBytesDialsAnew(t *testing.T) {
	needPeek(t)
	sendMore := make(chan struct{})
	sent := make(chan struct{})
	s := newServer(t, keepAlive(func(n int, req *http.Request) string {
		switch n {
		case 1:
			// Two bytes more than the Content-Length, in the same write.
			return okResponse + "XX"
		case 2:
			return okResponse
		}
		return okResponse
	}))
	// A third connection's server writes stray bytes only after the
	// client has read the answer.
	s2 := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		if _, err := http.ReadRequest(br); err != nil {
			return err
		}
		if _, err := io.WriteString(c, okResponse); err != nil {
			return err
		}
		if n == 1 {
			<-sendMore
			if _, err := io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\n\r\n"); err != nil {
				return err
			}
			close(sent)
		}
		_, err := br.ReadByte()
		return err
	})
	p, dials := testPool(t, 4)

	for i := 1; i <= 2; i++ {
		if _, body := do(t, p, s.addr, getReq()); body != "ok" {
			t.Fatalf("request %d: body %q", i, body)
		}
	}
	if n := s.accepted.Load(); n != 2 {
		t.Errorf("buffered stray bytes: server accepted %d connections, want 2", n)
	}
	s.waitClosed(t, 1)

	if _, body := do(t, p, s2.addr, getReq()); body != "ok" {
		t.Fatalf("body %q", body)
	}
	close(sendMore)
	<-sent
	c := idleConn(t, p, s2.addr)
	deadline := time.Now().Add(wait)
	for alive(c.nc) {
		if time.Now().After(deadline) {
			t.Fatal("a connection with unasked bytes waiting still looks alive")
		}
		time.Sleep(time.Millisecond)
	}
	resp, body := do(t, p, s2.addr, getReq())
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("after stray bytes: %d %q", resp.StatusCode, body)
	}
	if n := s2.accepted.Load(); n != 2 {
		t.Errorf("late stray bytes: server accepted %d connections, want 2", n)
	}
	s2.waitClosed(t, 1)
	if n := dials.Load(); n != 4 {
		t.Errorf("pool dialled %d times, want 4", n)
	}
}

func TestDoDialFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, dials := testPool(t, 4)
	resp, delivered, err := p.Do(testCtx(t), addr, getReq())
	if err == nil || delivered || resp != nil {
		t.Fatalf("Do to a closed port: %v, delivered %v, error %v", resp, delivered, err)
	}
	if dials.Load() != 1 {
		t.Fatalf("pool dialled %d times, want 1", dials.Load())
	}

	// The dialer's error comes back as it is.
	errDial := errors.New("no route")
	p = NewPool(func(context.Context, string, string) (net.Conn, error) { return nil, errDial }, 4, time.Minute)
	resp, delivered, err = p.Do(testCtx(t), "127.0.0.1:1", getReq())
	if !errors.Is(err, errDial) || delivered || resp != nil {
		t.Fatalf("Do with a failing dialer: %v, delivered %v, error %v", resp, delivered, err)
	}
}

func TestDoContextDoneBefore(t *testing.T) {
	s := newServer(t, keepAlive(fixed(okResponse)))
	p, dials := testPool(t, 4)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	resp, delivered, err := p.Do(ctx, s.addr, getReq())
	if !errors.Is(err, context.Canceled) || delivered || resp != nil {
		t.Fatalf("Do with a cancelled context: %v, delivered %v, error %v", resp, delivered, err)
	}
	if n := dials.Load(); n != 0 {
		t.Fatalf("pool dialled %d times, want 0", n)
	}
}

func TestDoCancelWaitingForHead(t *testing.T) {
	got := make(chan struct{})
	received := sync.OnceFunc(func() { close(got) })
	s := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		if _, err := http.ReadRequest(br); err != nil {
			return err
		}
		received()
		// Never answer; wait for the client to give up.
		_, err := br.ReadByte()
		return err
	})
	p, _ := testPool(t, 4)
	ctx, cancel := context.WithCancel(testCtx(t))
	var cancelledAt atomic.Int64
	go func() {
		select {
		case <-got:
		case <-time.After(wait):
		}
		cancelledAt.Store(time.Now().UnixNano())
		cancel()
	}()
	resp, delivered, err := p.Do(ctx, s.addr, getReq())
	returned := time.Now()
	if err != context.Canceled || !delivered || resp != nil {
		t.Fatalf("Do cancelled waiting for the head: %v, delivered %v, error %v; want context.Canceled, delivered", resp, delivered, err)
	}
	if at := cancelledAt.Load(); at == 0 {
		t.Fatal("Do returned before the context was cancelled")
	} else if d := returned.Sub(time.Unix(0, at)); d > time.Second {
		t.Fatalf("Do returned %v after the cancel", d)
	}
	s.waitClosed(t, 1)
	if n := idleCount(p, s.addr); n != 0 {
		t.Fatalf("%d idle connections after a cancel, want 0", n)
	}
}

// expiringCtx is a context whose deadline passes when expire is called:
// at a moment the test chooses rather than after a guess at how long the
// steps before take.
type expiringCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newExpiringCtx(parent context.Context) *expiringCtx {
	return &expiringCtx{Context: parent, done: make(chan struct{})}
}

func (c *expiringCtx) Done() <-chan struct{} { return c.done }

func (c *expiringCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (c *expiringCtx) expire() { c.once.Do(func() { close(c.done) }) }

// TestDoDeadlineWaitingForHead: a deadline that passes once the server has
// the request, while the client waits for the head, ends Do with the
// deadline's error, the request delivered, and closes the connection.
func TestDoDeadlineWaitingForHead(t *testing.T) {
	got := make(chan struct{})
	received := sync.OnceFunc(func() { close(got) })
	s := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		if _, err := http.ReadRequest(br); err != nil {
			return err
		}
		received()
		_, err := br.ReadByte()
		return err
	})
	p, _ := testPool(t, 4)
	ctx := newExpiringCtx(t.Context())
	go func() {
		select {
		case <-got:
			time.Sleep(20 * time.Millisecond) // the client is waiting for the head
		case <-time.After(10 * time.Second):
		}
		ctx.expire()
	}()
	_, delivered, err := p.Do(ctx, s.addr, getReq())
	if !errors.Is(err, context.DeadlineExceeded) || !delivered {
		t.Fatalf("delivered %v, error %v; want context.DeadlineExceeded, delivered", delivered, err)
	}
	s.waitClosed(t, 1)
}

func TestDoCancelDuringBody(t *testing.T) {
	s := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		if _, err := http.ReadRequest(br); err != nil {
			return err
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"); err != nil {
			return err
		}
		_, err := br.ReadByte()
		return err
	})
	p, _ := testPool(t, 4)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	resp, _, err := p.Do(ctx, s.addr, getReq())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 10)
	n, err := io.ReadAtLeast(resp.Body, buf, 3)
	if err != nil || string(buf[:n]) != "abc" {
		t.Fatalf("first bytes %q, %v", buf[:n], err)
	}
	time.AfterFunc(10*time.Millisecond, cancel)
	start := time.Now()
	n, err = readWithin(t, resp.Body, buf, wait)
	if n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after cancel = %d, %v; want context.Canceled", n, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Read returned %v after the cancel", d)
	}
	// The error sticks.
	if _, err := resp.Body.Read(buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("second Read: %v", err)
	}
	s.waitClosed(t, 1)
}

func TestDoCloseBodyFromAnotherGoroutine(t *testing.T) {
	s := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		if _, err := http.ReadRequest(br); err != nil {
			return err
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"); err != nil {
			return err
		}
		_, err := br.ReadByte()
		return err
	})
	p, _ := testPool(t, 4)
	resp, _, err := p.Do(testCtx(t), s.addr, getReq())
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(10*time.Millisecond, func() { resp.Body.Close() })
	buf := make([]byte, 10)
	if n, err := readWithin(t, resp.Body, buf, wait); n != 0 || err == nil {
		t.Fatalf("Read stopped by Close = %d, %v; want an error", n, err)
	}
	s.waitClosed(t, 1)
}

func TestDoServerClosesWithoutAnswer(t *testing.T) {
	s := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		_, err := http.ReadRequest(br)
		return err
	})
	p, _ := testPool(t, 4)
	resp, delivered, err := p.Do(testCtx(t), s.addr, getReq())
	if !errors.Is(err, io.ErrUnexpectedEOF) || !delivered || resp != nil {
		t.Fatalf("%v, delivered %v, error %v; want io.ErrUnexpectedEOF, delivered", resp, delivered, err)
	}
}

func TestDoMalformedResponse(t *testing.T) {
	s := newServer(t, keepAlive(func(n int, req *http.Request) string {
		if n == 1 {
			return "HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n"
		}
		return okResponse
	}))
	p, _ := testPool(t, 4)
	resp, delivered, err := p.Do(testCtx(t), s.addr, getReq())
	if !errors.Is(err, ErrMalformed) || !delivered || resp != nil {
		t.Fatalf("%v, delivered %v, error %v; want ErrMalformed, delivered", resp, delivered, err)
	}
	s.waitClosed(t, 1)
	if _, body := do(t, p, s.addr, getReq()); body != "ok" {
		t.Fatalf("after a malformed answer: body %q", body)
	}
	if n := s.accepted.Load(); n != 2 {
		t.Errorf("server accepted %d connections, want 2", n)
	}
}

func TestDoTruncatedBody(t *testing.T) {
	s := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		if _, err := http.ReadRequest(br); err != nil {
			return err
		}
		switch n {
		case 1:
			_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
			return err
		default:
			_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc")
			return err
		}
	})
	p, _ := testPool(t, 4)
	for i := 1; i <= 2; i++ {
		resp, _, err := p.Do(testCtx(t), s.addr, getReq())
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "abc" || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("response %d: body %q, error %v; want abc and io.ErrUnexpectedEOF", i, body, err)
		}
		if n := idleCount(p, s.addr); n != 0 {
			t.Fatalf("response %d: %d idle connections, want 0", i, n)
		}
	}
}

// readRawRequest reads one request's bytes as they came: the head up to its
// blank line and as many body bytes as its Content-Length says.
func readRawRequest(br *bufio.Reader) ([]byte, error) {
	var raw []byte
	length := 0
	for {
		line, err := br.ReadString('\n')
		raw = append(raw, line...)
		if err != nil {
			if len(raw) > 0 && errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w after %q", io.ErrUnexpectedEOF, raw)
			}
			return raw, err
		}
		if line == "\r\n" {
			break
		}
		if name, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "Content-Length") {
			if length, err = strconv.Atoi(strings.TrimSpace(value)); err != nil {
				return raw, err
			}
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return raw, err
	}
	return append(raw, body...), nil
}

func TestDoRequestBytes(t *testing.T) {
	reqs := make(chan []byte, 16)
	s := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		for {
			raw, err := readRawRequest(br)
			if err != nil {
				return err
			}
			reqs <- raw
			if _, err := io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n"); err != nil {
				return err
			}
		}
	})
	p, _ := testPool(t, 4)

	big := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + i%26)
		}
		return b
	}
	var fields []byte
	fields = AppendField(fields, "Content-Type", "application/json")
	fields = AppendField(fields, "Accept", "application/json, text/event-stream")
	fields = AppendField(fields, "Mcp-Session-Id", "abc123")

	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{
			name: "POST with fields and body",
			req:  Request{Method: "POST", Target: "/mcp", Host: "replica.test:8080", Fields: fields, Body: []byte(`{"jsonrpc":"2.0"}`), HasBody: true},
			want: "POST /mcp HTTP/1.1\r\nHost: replica.test:8080\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: abc123\r\nContent-Length: 17\r\n\r\n{\"jsonrpc\":\"2.0\"}",
		},
		{
			name: "GET without body",
			req:  Request{Method: "GET", Target: "/mcp?x=1", Host: "replica.test"},
			want: "GET /mcp?x=1 HTTP/1.1\r\nHost: replica.test\r\n\r\n",
		},
		{
			name: "DELETE with fields",
			req:  Request{Method: "DELETE", Target: "/mcp", Host: "h", Fields: AppendField(nil, "Mcp-Session-Id", "s")},
			want: "DELETE /mcp HTTP/1.1\r\nHost: h\r\nMcp-Session-Id: s\r\n\r\n",
		},
		{
			name: "HasBody with an empty body",
			req:  Request{Method: "POST", Target: "/mcp", Host: "h", HasBody: true},
			want: "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
		},
		{
			name: "HasBody with a non-nil empty body",
			req:  Request{Method: "POST", Target: "/mcp", Host: "h", Body: []byte{}, HasBody: true},
			want: "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
		},
		{
			name: "body without HasBody",
			req:  Request{Method: "POST", Target: "/mcp", Host: "h", Body: []byte("x")},
			want: "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx",
		},
		{
			name: "body of 16 KiB, inline",
			req:  Request{Method: "POST", Target: "/mcp", Host: "h", Body: big(inlineBody), HasBody: true},
			want: "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 16384\r\n\r\n" + string(big(inlineBody)),
		},
		{
			name: "body of 16 KiB and 1 byte",
			req:  Request{Method: "POST", Target: "/mcp", Host: "h", Fields: fields, Body: big(inlineBody + 1), HasBody: true},
			want: "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: abc123\r\nContent-Length: 16385\r\n\r\n" + string(big(inlineBody+1)),
		},
		{
			name: "body of 1 MiB",
			req:  Request{Method: "POST", Target: "/mcp", Host: "h", Body: big(1 << 20), HasBody: true},
			want: "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1048576\r\n\r\n" + string(big(1<<20)),
		},
		{
			name: "after a big one, a small one",
			req:  Request{Method: "POST", Target: "/mcp", Host: "h", Body: []byte("{}"), HasBody: true},
			want: "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}",
		},
	} {
		resp, body := do(t, p, s.addr, &tc.req)
		if resp.StatusCode != 204 || body != "" {
			t.Fatalf("%s: answer %d %q", tc.name, resp.StatusCode, body)
		}
		select {
		case got := <-reqs:
			if string(got) != tc.want {
				t.Errorf("%s: sent\n%q\nwant\n%q", tc.name, trunc(string(got)), trunc(tc.want))
				if len(got) != len(tc.want) {
					t.Errorf("%s: sent %d bytes, want %d", tc.name, len(got), len(tc.want))
				}
			}
		case <-time.After(wait):
			t.Fatalf("%s: server got nothing", tc.name)
		}
	}
	if n := s.accepted.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want 1", n)
	}
	// Nothing else was sent: closing the pool ends the connection right
	// after the last request.
	p.CloseIdle(true)
	s.waitClosed(t, 1)
	if len(reqs) != 0 {
		t.Errorf("%d more requests on the wire", len(reqs))
	}
}

func TestDoCloseBodyEarly(t *testing.T) {
	s := newServer(t, keepAlive(fixed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789")))
	p, dials := testPool(t, 4)
	resp, _, err := p.Do(testCtx(t), s.addr, getReq())
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "012" {
		t.Fatalf("first bytes %q, %v", buf, err)
	}
	resp.Body.Close()
	s.waitClosed(t, 1)
	if n := idleCount(p, s.addr); n != 0 {
		t.Fatalf("%d idle connections, want 0", n)
	}
	if _, body := do(t, p, s.addr, getReq()); body != "0123456789" {
		t.Fatalf("next body %q", body)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("pool dialled %d times, want 2", n)
	}

	// Closing a body that was read to its end keeps the connection.
	if _, body := do(t, p, s.addr, getReq()); body != "0123456789" {
		t.Fatalf("third body %q", body)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("pool dialled %d times, want 2", n)
	}
	s.notClosed(t, 2)
}

func TestDoCloseBodyEarlyChunked(t *testing.T) {
	s := newServer(t, keepAlive(fixed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")))
	p, _ := testPool(t, 4)
	resp, _, err := p.Do(testCtx(t), s.addr, getReq())
	if err != nil {
		t.Fatal(err)
	}
	// All data read, but not the last chunk: the body has not ended.
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("data %q, %v", buf, err)
	}
	resp.Body.Close()
	s.waitClosed(t, 1)
	if n := idleCount(p, s.addr); n != 0 {
		t.Fatalf("%d idle connections, want 0", n)
	}
}

func TestDoChunkedStreaming(t *testing.T) {
	step := make(chan struct{})
	s := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return err
			}
			events := []string{"event: message\ndata: 1\n\n", "event: message\ndata: 2\n\n"}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"); err != nil {
				return err
			}
			for _, e := range events {
				if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(e), e); err != nil {
					return err
				}
				select {
				case <-step:
				case <-time.After(wait):
					return errors.New("client never asked for more")
				}
			}
			if _, err := io.WriteString(c, "0\r\nX-Trailer: t\r\n\r\n"); err != nil {
				return err
			}
		}
	})
	p, dials := testPool(t, 4)
	for round := range 2 {
		resp, _, err := p.Do(testCtx(t), s.addr, getReq())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Header.Get("Content-Type") != "text/event-stream" || resp.ContentLength != -1 {
			t.Fatalf("round %d: header %q, length %d", round, resp.Header, resp.ContentLength)
		}
		buf := make([]byte, 256)
		for i := 1; i <= 2; i++ {
			// The event must arrive while the server waits for us.
			n, err := readWithin(t, resp.Body, buf, wait)
			want := "event: message\ndata: " + strconv.Itoa(i) + "\n\n"
			if err != nil || string(buf[:n]) != want {
				t.Fatalf("round %d event %d: %q, %v; want %q", round, i, buf[:n], err, want)
			}
			step <- struct{}{}
		}
		n, err := readWithin(t, resp.Body, buf, wait)
		if n != 0 || err != io.EOF {
			t.Fatalf("round %d end: %q, %v; want io.EOF", round, buf[:n], err)
		}
		resp.Body.Close()
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("pool dialled %d times, want 1 (the trailers must be consumed and the connection kept)", n)
	}
}

func TestDoMaxIdle(t *testing.T) {
	s := newServer(t, keepAlive(fixed(okResponse)))
	p, dials := testPool(t, 1)
	r1, _, err := p.Do(testCtx(t), s.addr, getReq())
	if err != nil {
		t.Fatal(err)
	}
	r2, _, err := p.Do(testCtx(t), s.addr, getReq())
	if err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n != 2 {
		t.Fatalf("two requests in flight: %d dials, want 2", n)
	}
	for i, r := range []*http.Response{r1, r2} {
		if b, err := io.ReadAll(r.Body); err != nil || string(b) != "ok" {
			t.Fatalf("body %d: %q, %v", i+1, b, err)
		}
		r.Body.Close()
	}
	if n := idleCount(p, s.addr); n != 1 {
		t.Fatalf("%d idle connections, want 1", n)
	}
	// The second one back found the pool full and was closed.
	s.waitClosed(t, 2)
	s.notClosed(t, 1)
	do(t, p, s.addr, getReq())
	if n := dials.Load(); n != 2 {
		t.Errorf("pool dialled %d times, want 2", n)
	}
}

func TestDoIdleTimeout(t *testing.T) {
	s := newServer(t, keepAlive(fixed(okResponse)))
	p, dials := testPool(t, 4)
	do(t, p, s.addr, getReq())
	c := idleConn(t, p, s.addr)
	p.mu.Lock()
	c.idleSince = time.Now().Add(-2 * time.Minute) // the pool's timeout is one
	p.mu.Unlock()
	do(t, p, s.addr, getReq())
	if n := dials.Load(); n != 2 {
		t.Fatalf("pool dialled %d times, want 2", n)
	}
	s.waitClosed(t, 1)
	s.notClosed(t, 2)
}

func TestCloseIdle(t *testing.T) {
	s := newServer(t, keepAlive(fixed(okResponse)))
	p, dials := testPool(t, 4)

	do(t, p, s.addr, getReq()) // connection 1, pooled
	p.CloseIdle(false)
	s.waitClosed(t, 1)
	if n := idleCount(p, s.addr); n != 0 {
		t.Fatalf("%d idle connections after CloseIdle, want 0", n)
	}

	// Connection 2 carries a body still being read when the pool closes
	// for good; connection 3 is idle then.
	inFlight, _, err := p.Do(testCtx(t), s.addr, getReq())
	if err != nil {
		t.Fatal(err)
	}
	do(t, p, s.addr, getReq())
	// Not final: connections were pooled again.
	if n := idleCount(p, s.addr); n != 1 {
		t.Fatalf("%d idle connections, want 1", n)
	}
	p.CloseIdle(true)
	s.waitClosed(t, 3)
	s.notClosed(t, 2)
	if b, err := io.ReadAll(inFlight.Body); err != nil || string(b) != "ok" {
		t.Fatalf("in-flight body %q, %v", b, err)
	}
	inFlight.Body.Close()
	// Put back after the final CloseIdle: closed, not pooled.
	s.waitClosed(t, 2)
	if n := idleCount(p, s.addr); n != 0 {
		t.Fatalf("%d idle connections after CloseIdle(true), want 0", n)
	}

	// The pool still sends, but keeps nothing.
	do(t, p, s.addr, getReq())
	s.waitClosed(t, 4)
	if n := idleCount(p, s.addr); n != 0 {
		t.Fatalf("%d idle connections after CloseIdle(true), want 0", n)
	}
	if n := dials.Load(); n != 4 {
		t.Errorf("pool dialled %d times, want 4", n)
	}
}

func TestDoConcurrent(t *testing.T) {
	s := newServer(t, keepAlive(func(n int, req *http.Request) string {
		b := req.Header.Get("X-N")
		return "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(b)) + "\r\n\r\n" + b
	}))
	const workers, each = 8, 25
	p, _ := testPool(t, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("%d-%d", w, i)
				req := getReq()
				req.Fields = AppendField(nil, "X-N", id)
				resp, _, err := p.Do(testCtx(t), s.addr, req)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != id {
					errs <- fmt.Errorf("request %s: body %q, %v", id, b, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := s.accepted.Load(); n > workers {
		t.Errorf("server accepted %d connections for %d workers", n, workers)
	}
}

func TestDoLongHeaderField(t *testing.T) {
	// A field of 6 KB in a head far under MaxHeadBytes, as a long cookie
	// or Content-Security-Policy makes.
	long := strings.Repeat("c", 6000)
	s := newServer(t, keepAlive(fixed("HTTP/1.1 200 OK\r\nSet-Cookie: "+long+"\r\nContent-Length: 2\r\n\r\nok")))
	p, _ := testPool(t, 4)
	resp, delivered, err := p.Do(testCtx(t), s.addr, getReq())
	if err != nil {
		t.Fatalf("head of %d bytes (MaxHeadBytes %d) with one %d-byte field: delivered %v, error %v",
			len(long)+60, MaxHeadBytes, len(long), delivered, err)
	}
	defer resp.Body.Close()
	if got := resp.Header.Get("Set-Cookie"); got != long {
		t.Fatalf("Set-Cookie has %d bytes, want %d", len(got), len(long))
	}
}

func TestAppendField(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
	}{
		{"Content-Type", "application/json", "Content-Type: application/json\r\n"},
		{"x-lower", "v", "x-lower: v\r\n"},
		{"X-Empty", "", "X-Empty: \r\n"},
		{"X-Tab", "a\tb", "X-Tab: a\tb\r\n"},
		{"X-Utf8", "h\xc3\xa9", "X-Utf8: h\xc3\xa9\r\n"},
		{"X-Token!#$%&'*+-.^_`|~", "v", "X-Token!#$%&'*+-.^_`|~: v\r\n"},
		{"X-CRLF", "a\r\nX-Injected: 1", ""},
		{"X-CR", "a\rb", ""},
		{"X-LF", "a\nb", ""},
		{"X-NUL", "a\x00b", ""},
		{"X-DEL", "a\x7f", ""},
		{"X-Ctl", "\x01", ""},
		{"", "v", ""},
		{"Bad Name", "v", ""},
		{"Bad:Name", "v", ""},
		{"Bad\r\nName", "v", ""},
		{"X-Inj\r\nEvil", "v", ""},
		{"Bad(Name)", "v", ""},
		{"Bäd", "v", ""},
		{"Bad\x00", "v", ""},
	} {
		prefix := []byte("Prior: x\r\n")
		got := AppendField(prefix[:len(prefix):len(prefix)], tc.name, tc.value)
		if string(got) != "Prior: x\r\n"+tc.want {
			t.Errorf("AppendField(%q, %q) = %q, want %q", tc.name, tc.value, got, "Prior: x\r\n"+tc.want)
		}
	}
	// Appends in place when there is room.
	b := make([]byte, 0, 64)
	b = AppendField(b, "A", "1")
	b = AppendField(b, "B", "2")
	if string(b) != "A: 1\r\nB: 2\r\n" {
		t.Errorf("two fields: %q", b)
	}
}

// needPeek skips a test that needs alive to see a closed connection or
// unasked bytes, which it does only on Linux.
func needPeek(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("alive cannot peek on " + runtime.GOOS)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen after %v", what, wait)
		}
		time.Sleep(time.Millisecond)
	}
}

func BenchmarkDo(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go keepAlive(fixed(okResponse))(0, c, bufio.NewReader(c))
		}
	}()
	d := &net.Dialer{}
	p := NewPool(d.DialContext, 4, time.Minute)
	defer p.CloseIdle(true)
	req := &Request{Method: "POST", Target: "/mcp", Host: "h", Body: bytes.Repeat([]byte("x"), 200), HasBody: true}
	ctx := context.Background()
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		resp, _, err := p.Do(ctx, ln.Addr().String(), req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
		}
		resp.Body.Close()
	}
}

// With SetMaxConns, a pool never has more connections open to an address
// than the bound: a request past it waits for one to come back (and then
// reuses it), or for its context to end; a connection that closes frees
// its place.
func TestMaxConnsBoundsOpenConnections(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, keepAlive(func(n int, req *http.Request) string {
		if req.URL.Path == "/slow" {
			<-release
		}
		return okResponse
	}))
	p, dials := testPool(t, 4)
	p.SetMaxConns(2)
	slow := &Request{Method: "GET", Target: "/slow", Host: "replica.test"}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { do(t, p, s.addr, slow) })
	}
	for s.accepted.Load() < 2 {
		runtime.Gosched()
	}
	// A third request waits: its context ends first.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	_, delivered, err := p.Do(ctx, s.addr, getReq())
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || delivered {
		t.Fatalf("a third request at the bound: %v (delivered %v), want it to wait until its deadline", err, delivered)
	}
	// Once a slow one is answered, the waiting request takes its connection.
	done := make(chan struct{})
	go func() {
		defer close(done)
		do(t, p, s.addr, getReq())
	}()
	release <- struct{}{}
	<-done
	release <- struct{}{}
	wg.Wait()
	if n := dials.Load(); n != 2 {
		t.Errorf("pool dialled %d times, want 2 (the bound)", n)
	}
	// A connection that closes instead frees its place for a new dial.
	p.CloseIdle(false)
	do(t, p, s.addr, getReq())
	if n := dials.Load(); n != 3 {
		t.Errorf("after the idle ones closed: %d dials, want 3", n)
	}
	p.mu.Lock()
	open := p.open[s.addr]
	p.mu.Unlock()
	if open != 1 {
		t.Errorf("%d connections counted open, want 1", open)
	}
}

func TestStatusText(t *testing.T) {
	for _, code := range []int{200, 202, 204, 400, 404, 500, 599} {
		if got, want := statusText(code), strconv.Itoa(code)+" "+http.StatusText(code); got != want {
			t.Errorf("statusText(%d) = %q, want %q", code, got, want)
		}
	}
}

// newStepServer serves each request an SSE stream of two chunked events,
// each sent once the test steps.
func newStepServer(t *testing.T) (*server, chan<- struct{}) {
	step, quit := make(chan struct{}), make(chan struct{})
	s := newServer(t, func(n int, c net.Conn, br *bufio.Reader) error {
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return err
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"); err != nil {
				return err
			}
			for _, e := range []string{"data: 1\n\n", "data: 2\n\n"} {
				select {
				case <-step:
				case <-quit:
					return nil
				case <-time.After(wait):
					return errors.New("client never asked for more")
				}
				if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(e), e); err != nil {
					return err
				}
			}
			if _, err := io.WriteString(c, "0\r\n\r\n"); err != nil {
				return err
			}
		}
	})
	t.Cleanup(func() { close(quit) }) // before the server's cleanup waits for it
	return s, step
}

// TestBodyWaitReadable: WaitReadable returns only once the replica sends
// more (the next chunk), at once when bytes are buffered, and after it the
// body reads on as before, to its end, the connection reused; a cancel
// during the wait ends it with context.Canceled.
func TestBodyWaitReadable(t *testing.T) {
	s, step := newStepServer(t)
	p, dials := testPool(t, 4)
	for round := range 2 {
		resp, _, err := p.Do(testCtx(t), s.addr, getReq())
		if err != nil {
			t.Fatal(err)
		}
		body := resp.Body.(*Body)
		buf := make([]byte, 256)
		for i := 1; i <= 2; i++ {
			waited := make(chan error, 1)
			go func() { waited <- body.WaitReadable() }()
			select {
			case err := <-waited:
				t.Fatalf("round %d event %d: WaitReadable returned %v before the replica sent anything", round, i, err)
			case <-time.After(50 * time.Millisecond):
			}
			step <- struct{}{}
			if err := <-waited; err != nil {
				t.Fatalf("round %d event %d: WaitReadable: %v", round, i, err)
			}
			n, err := readWithin(t, resp.Body, buf, wait)
			if want := "data: " + strconv.Itoa(i) + "\n\n"; err != nil || string(buf[:n]) != want {
				t.Fatalf("round %d event %d: %q, %v; want %q", round, i, buf[:n], err, want)
			}
		}
		// The terminator follows at once: buffered or on its way.
		if err := body.WaitReadable(); err != nil {
			t.Fatal(err)
		}
		if n, err := readWithin(t, resp.Body, buf, wait); n != 0 || err != io.EOF {
			t.Fatalf("round %d: after the events: %d, %v; want EOF", round, n, err)
		}
	}
	if d := dials.Load(); d != 1 {
		t.Errorf("%d dials for two streams in turn, want the connection reused", d)
	}

	ctx, cancel := context.WithCancel(t.Context())
	resp, _, err := p.Do(ctx, s.addr, getReq())
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- resp.Body.(*Body).WaitReadable() }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-waited:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a cancel during WaitReadable: %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		t.Fatal("a cancel did not end WaitReadable")
	}
}

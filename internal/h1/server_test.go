package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// srvWait bounds waits for things that must happen; they normally take
// milliseconds.
const srvWait = 5 * time.Second

// srvTest is a Server serving on a loopback port of its own.
type srvTest struct {
	s    *Server
	addr string
	done chan struct{} // closed when Serve returns
	err  error         // Serve's result, once done is closed
}

func srvStart(t *testing.T, s *Server) *srvTest {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st := &srvTest{s: s, addr: ln.Addr().String(), done: make(chan struct{})}
	go func() {
		st.err = s.Serve(ln)
		close(st.done)
	}()
	t.Cleanup(func() {
		s.Close()
		select {
		case <-st.done:
		case <-time.After(srvWait):
			t.Error("Serve did not return after Close")
		}
	})
	return st
}

func srvServe(t *testing.T, h http.HandlerFunc) *srvTest {
	t.Helper()
	return srvStart(t, &Server{Handler: h})
}

// serveErr waits for Serve to return and gives its error.
func (st *srvTest) serveErr(t *testing.T) error {
	t.Helper()
	select {
	case <-st.done:
		return st.err
	case <-time.After(srvWait):
		t.Fatal("Serve did not return")
		return nil
	}
}

// srvClient is a net/http client with a transport of its own.
func srvClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: srvWait}
}

// srvConn is a raw client connection.
type srvConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func srvDial(t *testing.T, addr string) *srvConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &srvConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *srvConn) send(s string) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(srvWait))
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatalf("writing request: %v", err)
	}
}

// response reads one response (to a request with method) and all its body.
func (c *srvConn) response(method string) (*http.Response, string) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(srvWait))
	defer c.nc.SetReadDeadline(time.Time{})
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("reading response body: %v (read %q)", err, body)
	}
	return resp, string(body)
}

// get sends a GET for target and reads the answer.
func (c *srvConn) get(target string) (*http.Response, string) {
	c.t.Helper()
	c.send("GET " + target + " HTTP/1.1\r\nHost: test\r\n\r\n")
	return c.response(http.MethodGet)
}

// expectClosed checks that the server closes the connection within d
// without sending anything more.
func (c *srvConn) expectClosed(d time.Duration) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(c.br)
	if len(b) > 0 {
		c.t.Errorf("read %q before the close", b)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("connection still open after %v", d)
	}
	// nil (EOF) or a reset: either way closed.
}

// expectSilent checks that nothing arrives within d and the connection
// stays open.
func (c *srvConn) expectSilent(d time.Duration) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	defer c.nc.SetReadDeadline(time.Time{})
	b, err := c.br.Peek(1)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		c.t.Fatalf("got %q, %v; want nothing for %v", b, err, d)
	}
}

func srvRecv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(srvWait):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// srvLogBuffer is a log destination read while connections write to it.
type srvLogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *srvLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *srvLogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestServerShortBodyGetsContentLength(t *testing.T) {
	t.Parallel()
	var remotes sync.Map
	var n atomic.Int32
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		remotes.Store(r.RemoteAddr, true)
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello, ")
		io.WriteString(w, "world "+strconv.Itoa(int(n.Add(1))))
	})
	c := srvDial(t, st.addr)
	for i := 1; i <= 2; i++ {
		resp, body := c.get("/")
		if want := "hello, world " + strconv.Itoa(i); body != want {
			t.Errorf("request %d: body %q, want %q", i, body, want)
		}
		if resp.ContentLength != int64(len(body)) || resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
			t.Errorf("request %d: Content-Length %q (%d), want %d", i, resp.Header.Get("Content-Length"), resp.ContentLength, len(body))
		}
		if resp.TransferEncoding != nil {
			t.Errorf("request %d: Transfer-Encoding %q", i, resp.TransferEncoding)
		}
		if resp.Close {
			t.Errorf("request %d: response closes the connection", i)
		}
		if resp.Header.Get("Content-Type") != "text/plain" {
			t.Errorf("request %d: Content-Type %q", i, resp.Header.Get("Content-Type"))
		}
	}
	// Pipelined: both requests in one write.
	c.send("GET /a HTTP/1.1\r\nHost: test\r\n\r\nGET /b HTTP/1.1\r\nHost: test\r\n\r\n")
	for i := 3; i <= 4; i++ {
		if _, body := c.response(http.MethodGet); body != "hello, world "+strconv.Itoa(i) {
			t.Errorf("pipelined request %d: body %q", i, body)
		}
	}
	count := 0
	remotes.Range(func(k, v any) bool { count++; return true })
	if count != 1 {
		t.Errorf("4 requests came over %d connections, want 1", count)
	}
}

func TestServerLargeBodyIntact(t *testing.T) {
	t.Parallel()
	want := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		for p := want; len(p) > 0; p = p[min(len(p), 1000):] {
			w.Write(p[:min(len(p), 1000)])
		}
	})
	c := srvDial(t, st.addr)
	for i := range 2 {
		if _, body := c.get("/"); body != string(want) {
			t.Fatalf("request %d: body of %d bytes differs from the %d written", i, len(body), len(want))
		}
	}
}

func TestServerFlushStreamsChunked(t *testing.T) {
	t.Parallel()
	step := make(chan struct{})
	returned := make(chan struct{})
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain" {
			io.WriteString(w, "plain")
			return
		}
		defer close(returned)
		f := w.(http.Flusher)
		for _, part := range []string{"part one;", "part two;"} {
			io.WriteString(w, part)
			f.Flush()
			select {
			case <-step:
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, "the end")
	})
	c := srvDial(t, st.addr)
	c.send("GET /stream HTTP/1.1\r\nHost: test\r\n\r\n")
	_ = c.nc.SetReadDeadline(time.Now().Add(srvWait))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" || resp.Header.Get("Content-Length") != "" {
		t.Fatalf("Transfer-Encoding %q, Content-Length %q; want chunked", resp.TransferEncoding, resp.Header.Get("Content-Length"))
	}
	for _, part := range []string{"part one;", "part two;"} {
		buf := make([]byte, len(part))
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != part {
			t.Fatalf("read %q, %v; want %q", buf, err, part)
		}
		select {
		case <-returned:
			t.Fatal("handler returned before its flushed part was read")
		default:
		}
		step <- struct{}{}
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "the end" {
		t.Fatalf("rest %q, %v", rest, err)
	}
	// The connection carries on after the last chunk.
	if _, body := c.get("/plain"); body != "plain" {
		t.Errorf("next request on the connection: body %q", body)
	}
}

func TestServerHandlerContentLength(t *testing.T) {
	t.Parallel()
	want := strings.Repeat("x", 10000)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(want)))
		io.WriteString(w, want[:10])
		w.(http.Flusher).Flush() // a declared length is kept even when flushed
		io.WriteString(w, want[10:6000])
		io.WriteString(w, want[6000:])
	})
	c := srvDial(t, st.addr)
	for i := range 2 {
		resp, body := c.get("/")
		if resp.TransferEncoding != nil || resp.ContentLength != int64(len(want)) {
			t.Errorf("request %d: Transfer-Encoding %q, Content-Length %d; want length %d", i, resp.TransferEncoding, resp.ContentLength, len(want))
		}
		if body != want {
			t.Errorf("request %d: body of %d bytes, want %d", i, len(body), len(want))
		}
	}
}

func TestServerContentLengthTooShortCloses(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "short")
	})
	c := srvDial(t, st.addr)
	c.send("GET / HTTP/1.1\r\nHost: test\r\n\r\n")
	_ = c.nc.SetReadDeadline(time.Now().Add(srvWait))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if string(body) != "short" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("body %q, %v; want \"short\" cut off by the close", body, err)
	}
}

func TestServerHEAD(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/declared" {
			w.Header().Set("Content-Length", "5")
		}
		n, err := io.WriteString(w, "hello")
		if n != 5 || err != nil {
			t.Errorf("%s %s: Write = %d, %v", r.Method, r.URL.Path, n, err)
		}
	})
	c := srvDial(t, st.addr)
	for _, path := range []string{"/", "/declared"} {
		c.send("HEAD " + path + " HTTP/1.1\r\nHost: test\r\n\r\n")
		resp, _ := c.response(http.MethodHead)
		if resp.StatusCode != 200 || resp.TransferEncoding != nil {
			t.Errorf("HEAD %s: %s, Transfer-Encoding %q", path, resp.Status, resp.TransferEncoding)
		}
		if path == "/declared" && resp.ContentLength != 5 {
			t.Errorf("HEAD %s: Content-Length %d, want the declared 5", path, resp.ContentLength)
		}
		c.expectSilent(50 * time.Millisecond) // no body bytes follow
		if _, body := c.get(path); body != "hello" {
			t.Errorf("GET %s after HEAD: body %q", path, body)
		}
	}
}

func TestServerNoBodyStatuses(t *testing.T) {
	t.Parallel()
	writeErrs := make(chan error, 2)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Path[1:])
		w.Header().Set("Content-Length", "4") // not sent with these statuses
		w.WriteHeader(code)
		_, err := io.WriteString(w, "body")
		writeErrs <- err
	})
	c := srvDial(t, st.addr)
	for _, code := range []int{http.StatusNoContent, http.StatusNotModified} {
		resp, body := c.get("/" + strconv.Itoa(code))
		if resp.StatusCode != code || body != "" {
			t.Errorf("%d: got %s with body %q", code, resp.Status, body)
		}
		if cl, ok := resp.Header["Content-Length"]; ok || resp.TransferEncoding != nil {
			t.Errorf("%d: Content-Length %q, Transfer-Encoding %q; want neither", code, cl, resp.TransferEncoding)
		}
		if err := srvRecv(t, writeErrs, "the handler's write"); !errors.Is(err, http.ErrBodyNotAllowed) {
			t.Errorf("%d: Write error %v, want http.ErrBodyNotAllowed", code, err)
		}
		c.expectSilent(50 * time.Millisecond)
	}
	// The connection is still good.
	if resp, body := c.get("/200"); resp.StatusCode != 200 || body != "body" {
		t.Errorf("after: %s %q", resp.Status, body)
	}
	if err := srvRecv(t, writeErrs, "the handler's write"); err != nil {
		t.Errorf("200: Write error %v", err)
	}
}

func TestServerDate(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/own" {
			w.Header().Set("Date", "Mon, 02 Jan 2006 15:04:05 GMT")
		}
	})
	c := srvDial(t, st.addr)
	resp, _ := c.get("/")
	d, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		t.Fatalf("Date %q: %v", resp.Header.Get("Date"), err)
	}
	if since := time.Since(d); since < -2*time.Second || since > 5*time.Second {
		t.Errorf("Date %v is %v from now", d, since)
	}
	if resp, _ := c.get("/own"); fmt.Sprint(resp.Header["Date"]) != "[Mon, 02 Jan 2006 15:04:05 GMT]" {
		t.Errorf("handler's Date: got %q", resp.Header["Date"])
	}
}

func TestServerConnectionClose(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	for _, tc := range []struct {
		name, req string
		close     bool
	}{
		{"1.1 close", "GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n", true},
		{"1.0", "GET / HTTP/1.0\r\n\r\n", true},
		{"1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", false},
	} {
		c := srvDial(t, st.addr)
		c.send(tc.req)
		resp, body := c.response(http.MethodGet)
		if body != "ok" || resp.ContentLength != 2 {
			t.Errorf("%s: body %q, Content-Length %d", tc.name, body, resp.ContentLength)
		}
		if tc.close {
			if !resp.Close { // net/http takes "Connection: close" out of the header
				t.Errorf("%s: response without Connection: close", tc.name)
			}
			c.expectClosed(srvWait)
			continue
		}
		if resp.Close || resp.Header.Get("Connection") != "keep-alive" {
			t.Errorf("%s: Connection %q, want keep-alive", tc.name, resp.Header.Get("Connection"))
		}
		c.send(tc.req)
		if _, body := c.response(http.MethodGet); body != "ok" {
			t.Errorf("%s: second body %q", tc.name, body)
		}
	}
}

func TestServerHandlerConnectionClose(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	c := srvDial(t, st.addr)
	resp, body := c.get("/")
	if body != "bye" || !resp.Close {
		t.Errorf("body %q, Close %v", body, resp.Close)
	}
	c.expectClosed(srvWait)
}

// srvEcho answers with what the handler saw of the request body.
func srvEcho(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%d %q %q %v", r.ContentLength, r.TransferEncoding, b, err)
}

func TestServerRequestBody(t *testing.T) {
	t.Parallel()
	st := srvServe(t, srvEcho)
	c := srvDial(t, st.addr)
	for _, tc := range []struct{ name, req, want string }{
		{"length", "POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 11\r\n\r\nhello world", `11 [] "hello world" <nil>`},
		{"chunked", "POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n",
			`-1 ["chunked"] "hello world" <nil>`},
		{"none", "POST / HTTP/1.1\r\nHost: test\r\n\r\n", `0 [] "" <nil>`},
		{"large", "POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 20000\r\n\r\n" + strings.Repeat("z", 20000),
			fmt.Sprintf("20000 [] %q <nil>", strings.Repeat("z", 20000))},
	} {
		c.send(tc.req) // all on one connection: each body is read to its end
		if _, body := c.response(http.MethodPost); body != tc.want {
			t.Errorf("%s: handler saw %.80s, want %.80s", tc.name, body, tc.want)
		}
	}

	client := srvClient(t)
	for _, tc := range []struct {
		name string
		body io.Reader
		want string
	}{
		{"net/http length", strings.NewReader("abc"), `3 [] "abc" <nil>`},
		{"net/http chunked", io.MultiReader(strings.NewReader("ab"), strings.NewReader("cd")), `-1 ["chunked"] "abcd" <nil>`},
	} {
		resp, err := client.Post("http://"+st.addr+"/", "text/plain", tc.body)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != tc.want {
			t.Errorf("%s: handler saw %s, want %s", tc.name, b, tc.want)
		}
	}
}

func TestServerUnreadSmallBodyKeepsConnection(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) })
	c := srvDial(t, st.addr)
	c.send("POST /one HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\na b c")
	if resp, body := c.response(http.MethodPost); body != "/one" || resp.Close {
		t.Fatalf("body %q, Close %v", body, resp.Close)
	}
	// The unread body was skipped, not taken for the next request.
	if _, body := c.get("/two"); body != "/two" {
		t.Fatalf("second body %q", body)
	}
}

func TestServerBodyReadAfterHandlerReturns(t *testing.T) {
	t.Parallel()
	bodies := make(chan io.Reader, 1)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) { bodies <- r.Body })
	c := srvDial(t, st.addr)
	c.send("POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello")
	c.response(http.MethodPost)
	body := srvRecv(t, bodies, "the body")
	if n, err := body.Read(make([]byte, 5)); n != 0 || err == nil || err == io.EOF {
		t.Errorf("Read after the handler returned = %d, %v; want an error", n, err)
	}
}

func TestServerExpectContinue(t *testing.T) {
	t.Parallel()
	readNow := make(chan struct{})
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		select {
		case <-readNow:
		case <-r.Context().Done():
			return
		}
		srvEcho(w, r)
	})

	c := srvDial(t, st.addr)
	c.send("POST /read HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	c.expectSilent(100 * time.Millisecond) // no 100 Continue until the handler reads
	close(readNow)
	const cont = "HTTP/1.1 100 Continue\r\n\r\n"
	got := make([]byte, len(cont))
	_ = c.nc.SetReadDeadline(time.Now().Add(srvWait))
	if _, err := io.ReadFull(c.br, got); err != nil || string(got) != cont {
		t.Fatalf("read %q, %v; want %q", got, err, cont)
	}
	c.send("hello")
	if _, body := c.response(http.MethodPost); body != `5 [] "hello" <nil>` {
		t.Errorf("handler saw %s", body)
	}

	// A handler that answers without reading: no 100 Continue, and the
	// connection ends (the client may never send the body).
	c = srvDial(t, st.addr)
	c.send("POST /refuse HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	if resp, _ := c.response(http.MethodPost); resp.StatusCode != http.StatusForbidden || !resp.Close {
		t.Errorf("got %s, Close %v; want 403, no 100 Continue, and Connection: close", resp.Status, resp.Close)
	}
	c.expectClosed(srvWait)

	// Through net/http, which waits for the 100 Continue.
	tr := &http.Transport{ExpectContinueTimeout: srvWait}
	t.Cleanup(tr.CloseIdleConnections)
	req, _ := http.NewRequest(http.MethodPost, "http://"+st.addr+"/read", strings.NewReader("world"))
	req.Header.Set("Expect", "100-continue")
	start := time.Now()
	resp, err := (&http.Client{Transport: tr, Timeout: srvWait}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `5 [] "world" <nil>` {
		t.Errorf("net/http with Expect: handler saw %s", b)
	}
	if time.Since(start) > srvWait/2 {
		t.Errorf("net/http waited %v: the 100 Continue did not come", time.Since(start))
	}
}

// TestServerUnreadLargeBody: a handler that refuses a large body without
// reading it; the client is still sending when the answer goes out, and
// must get the answer rather than a reset.
func TestServerUnreadLargeBody(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	})
	client := srvClient(t)
	body := bytes.Repeat([]byte("x"), 5<<20)
	for i := range 3 {
		resp, err := client.Post("http://"+st.addr+"/upload", "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || string(b) != "too large\n" {
			t.Fatalf("attempt %d: %s %q", i, resp.Status, b)
		}
		if !resp.Close {
			t.Errorf("attempt %d: 413 without Connection: close, though the body is left unread", i)
		}
	}
}

func TestServerRefusesMalformed(t *testing.T) {
	t.Parallel()
	var called atomic.Bool
	st := srvStart(t, &Server{
		Handler:        http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called.Store(true) }),
		MaxHeaderBytes: 1024,
	})
	for _, tc := range []struct {
		name, req string
		status    int
	}{
		{"TE and CL", "POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: test\r\n\r\n", 400},
		{"missing Host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"two Host", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\n\r\n", 400},
		{"bad target", "GET foo HTTP/1.1\r\nHost: a\r\n\r\n", 400},
		{"garbage", "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", 400},
		{"TE gzip", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
		{"Expect", "POST / HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n", 417},
		{"HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
		{"head too large", "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 2000) + "\r\n\r\n", 431},
	} {
		c := srvDial(t, st.addr)
		c.send(tc.req)
		resp, _ := c.response(http.MethodGet)
		if resp.StatusCode != tc.status || !resp.Close {
			t.Errorf("%s: %s, Close %v; want %d and Connection: close", tc.name, resp.Status, resp.Close, tc.status)
		}
		c.expectClosed(srvWait)
	}
	if called.Load() {
		t.Error("the handler saw a refused request")
	}
}

func TestServerRequestFields(t *testing.T) {
	t.Parallel()
	type seen struct {
		local                                     net.Addr
		remote, host, path, query, uri, proto, ua string
		hostField                                 []string
	}
	got := make(chan seen, 1)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		got <- seen{local, r.RemoteAddr, r.Host, r.URL.Path, r.URL.RawQuery, r.RequestURI, r.Proto, r.UserAgent(), r.Header["Host"]}
	})
	c := srvDial(t, st.addr)
	c.send("GET /a/b%20c?x=1&y=2 HTTP/1.1\r\nHost: example.test:8080\r\nUser-Agent: raw\r\n\r\n")
	c.response(http.MethodGet)
	s := srvRecv(t, got, "the request")
	if s.local == nil || s.local.String() != st.addr {
		t.Errorf("LocalAddrContextKey %v, want %s", s.local, st.addr)
	}
	if s.remote != c.nc.LocalAddr().String() {
		t.Errorf("RemoteAddr %q, want %q", s.remote, c.nc.LocalAddr())
	}
	if s.host != "example.test:8080" || s.hostField != nil {
		t.Errorf("Host %q, Header[Host] %q", s.host, s.hostField)
	}
	if s.path != "/a/b c" || s.query != "x=1&y=2" || s.uri != "/a/b%20c?x=1&y=2" || s.proto != "HTTP/1.1" || s.ua != "raw" {
		t.Errorf("path %q query %q RequestURI %q proto %q UA %q", s.path, s.query, s.uri, s.proto, s.ua)
	}

	client := srvClient(t)
	resp, err := client.Get("http://" + st.addr + "/via/client")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s = srvRecv(t, got, "the request")
	if s.host != st.addr || s.path != "/via/client" || s.local.String() != st.addr {
		t.Errorf("net/http client: Host %q path %q local %v", s.host, s.path, s.local)
	}
}

// TestServerContextCanceledWhenClientCloses is about the epoll watcher.
func TestServerContextCanceledWhenClientCloses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the close watcher is Linux only")
	}
	t.Parallel()
	type result struct {
		canceled bool
		at       time.Time
	}
	started := make(chan struct{}, 1)
	results := make(chan result, 1)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		started <- struct{}{}
		wait, _ := time.ParseDuration(r.URL.Query().Get("wait"))
		select {
		case <-r.Context().Done():
			results <- result{true, time.Now()}
		case <-time.After(wait):
			results <- result{false, time.Now()}
			io.WriteString(w, "done")
		}
	})

	for _, req := range []string{
		"GET /?wait=5s HTTP/1.1\r\nHost: test\r\n\r\n",
		"POST /?wait=5s HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\n\r\nabc",
		"POST /?wait=5s HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	} {
		c := srvDial(t, st.addr)
		c.send(req)
		srvRecv(t, started, "the handler")
		time.Sleep(100 * time.Millisecond)
		c.nc.Close()
		closed := time.Now()
		res := srvRecv(t, results, "the handler's end")
		if !res.canceled {
			t.Errorf("%.20q: context not canceled after the client closed", req)
		} else if d := res.at.Sub(closed); d > 2*time.Second {
			t.Errorf("%.20q: canceled %v after the client closed", req, d)
		}
	}

	// A client that stays is not taken for gone, through a first and a
	// second request on its connection.
	c := srvDial(t, st.addr)
	for i := range 2 {
		c.send("GET /?wait=300ms HTTP/1.1\r\nHost: test\r\n\r\n")
		srvRecv(t, started, "the handler")
		if res := srvRecv(t, results, "the handler's end"); res.canceled {
			t.Errorf("request %d: context canceled while the client waited", i)
		}
		if _, body := c.response(http.MethodGet); body != "done" {
			t.Errorf("request %d: body %q", i, body)
		}
	}
}

func TestServerShutdown(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
			io.WriteString(w, "slow done")
			return
		}
		io.WriteString(w, "ok")
	})
	idle := srvDial(t, st.addr)
	if _, body := idle.get("/"); body != "ok" {
		t.Fatalf("body %q", body)
	}
	busy := srvDial(t, st.addr)
	busy.send("GET /slow HTTP/1.1\r\nHost: test\r\n\r\n")
	srvRecv(t, started, "the slow handler")

	shutdown := make(chan error, 1)
	go func() { shutdown <- st.s.Shutdown(context.Background()) }()

	if err := st.serveErr(t); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve = %v, want http.ErrServerClosed", err)
	}
	idle.expectClosed(srvWait)
	if nc, err := net.DialTimeout("tcp", st.addr, time.Second); err == nil {
		nc.Close()
		t.Error("a new connection was accepted after Shutdown")
	}
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	resp, body := busy.response(http.MethodGet)
	if body != "slow done" || !resp.Close {
		t.Errorf("in-flight request: body %q, Close %v; want its answer and Connection: close", body, resp.Close)
	}
	busy.expectClosed(srvWait)
	if err := srvRecv(t, shutdown, "Shutdown"); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
}

// TestServerShutdownBetweenAnswers: a connection's last answer goes out
// with the wait for its next request (sendOut), and Shutdown closes a
// connection only once it waits: a client sending request after request
// while the server shuts down gets every answer it gets whole, and the
// connection ends between answers, never inside one.
func TestServerShutdownBetweenAnswers(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 3000)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	nc, err := net.Dial("tcp", st.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	answered := 0
	for i := 0; ; i++ {
		if i == 50 {
			go st.s.Shutdown(context.Background())
		}
		if i > 10000 {
			t.Fatal("the connection outlived Shutdown by 10,000 requests")
		}
		nc.SetDeadline(time.Now().Add(srvWait))
		if _, err := io.WriteString(nc, "GET / HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
			break // closed while idle
		}
		if _, err := br.Peek(1); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
				break // closed between answers
			}
			t.Fatalf("request %d: waiting for its answer: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: a cut answer: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || string(b) != body {
			t.Fatalf("request %d: a cut answer: %d bytes, %v", i, len(b), err)
		}
		answered++
		if resp.Close {
			break
		}
	}
	if answered < 50 {
		t.Fatalf("%d answers before Shutdown, want 50", answered)
	}
}

func TestServerShutdownDeadline(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done() // Close ends it
	})
	c := srvDial(t, st.addr)
	c.send("GET / HTTP/1.1\r\nHost: test\r\n\r\n")
	srvRecv(t, started, "the handler")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := st.s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
}

func TestServerServeAfterShutdown(t *testing.T) {
	t.Parallel()
	s := &Server{Handler: http.NotFoundHandler()}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := s.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve after Shutdown = %v", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("listener still open")
	}
}

func TestServerCloseCancelsRequests(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-r.Context().Done():
			ended <- r.Context().Err()
		case <-time.After(srvWait):
			ended <- nil
		}
	})
	// Through a connection the watcher cannot help with: the body is
	// left unread, so only Close can end the request.
	c := srvDial(t, st.addr)
	c.send("POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 10\r\n\r\nabc")
	srvRecv(t, started, "the handler")
	closed := time.Now()
	if err := st.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srvRecv(t, ended, "the handler's end"); !errors.Is(err, context.Canceled) {
		t.Errorf("request context: %v, want context.Canceled", err)
	} else if d := time.Since(closed); d > time.Second {
		t.Errorf("canceled %v after Close", d)
	}
	if err := st.serveErr(t); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve = %v, want http.ErrServerClosed", err)
	}
	c.expectClosed(srvWait)
}

func TestServerHandlerPanic(t *testing.T) {
	t.Parallel()
	logs := &srvLogBuffer{}
	st := srvStart(t, &Server{
		Log: slog.New(slog.NewTextHandler(logs, nil)),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/abort":
				panic(http.ErrAbortHandler)
			case "/panic":
				io.WriteString(w, "not sent")
				panic("boom-4711")
			case "/flushed":
				io.WriteString(w, "partial")
				w.(http.Flusher).Flush()
				panic("boom-flushed")
			}
			io.WriteString(w, "ok")
		}),
	})

	c := srvDial(t, st.addr)
	c.send("GET /abort HTTP/1.1\r\nHost: test\r\n\r\n")
	c.expectClosed(srvWait) // logging happens before the close
	if s := logs.String(); s != "" {
		t.Errorf("http.ErrAbortHandler was logged: %s", s)
	}

	c = srvDial(t, st.addr)
	c.send("GET /panic HTTP/1.1\r\nHost: test\r\n\r\n")
	c.expectClosed(srvWait)
	s := logs.String()
	if !strings.Contains(s, "handler panicked") || !strings.Contains(s, "boom-4711") || !strings.Contains(s, "server_test.go") {
		t.Errorf("log lacks the panic, its value or its stack: %s", s)
	}

	// A panic after part of the answer went out must not look like a
	// complete answer.
	c = srvDial(t, st.addr)
	c.send("GET /flushed HTTP/1.1\r\nHost: test\r\n\r\n")
	_ = c.nc.SetReadDeadline(time.Now().Add(srvWait))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.Body); string(b) != "partial" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("body %q, %v; want \"partial\" and io.ErrUnexpectedEOF", b, err)
	}

	// The server goes on serving.
	c = srvDial(t, st.addr)
	if _, body := c.get("/"); body != "ok" {
		t.Errorf("after the panics: body %q", body)
	}
}

func TestServerReadHeaderTimeout(t *testing.T) {
	t.Parallel()
	// A second: a loaded machine may take a good part of it between the
	// accept and the first bytes, and between the timeout and the close.
	const timeout = time.Second
	st := srvStart(t, &Server{
		ReadHeaderTimeout: timeout,
		IdleTimeout:       time.Minute,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/late-body" {
				time.Sleep(2 * timeout)
			}
			srvEcho(w, r)
		}),
	})

	// A first request that stalls in its request line. Its timeout runs
	// from the accept, which comes after the dial begins.
	start := time.Now()
	c := srvDial(t, st.addr)
	c.send("GET / HT")
	c.expectClosed(10 * timeout)
	if d := time.Since(start); d < timeout*3/4 {
		t.Errorf("closed after %v, before the %v timeout", d, timeout)
	}

	// A second request that stalls in its fields: the timeout runs from
	// its first byte, not from the end of the first request.
	c = srvDial(t, st.addr)
	c.get("/")
	time.Sleep(timeout * 3 / 4)
	start = time.Now()
	c.send("GET / HTTP/1.1\r\nHost: te")
	c.expectClosed(10 * timeout)
	if d := time.Since(start); d < timeout*3/4 {
		t.Errorf("second request: closed after %v, before the %v timeout", d, timeout)
	}

	// The timeout is for the head only: a body may come later.
	c = srvDial(t, st.addr)
	c.send("POST /late-body HTTP/1.1\r\nHost: test\r\nContent-Length: 4\r\n\r\n")
	time.Sleep(timeout * 3 / 2)
	c.send("late")
	if _, body := c.response(http.MethodPost); body != `4 [] "late" <nil>` {
		t.Errorf("late body: handler saw %s", body)
	}
}

func TestServerIdleTimeout(t *testing.T) {
	t.Parallel()
	// A second: a loaded machine may take a good part of it between two
	// requests, and between the timeout and the close.
	const timeout = time.Second
	st := srvStart(t, &Server{
		IdleTimeout:       timeout,
		ReadHeaderTimeout: time.Minute,
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
	})
	c := srvDial(t, st.addr)
	c.get("/")
	time.Sleep(timeout / 4)
	// The idle time runs from the answer, which comes after start.
	start := time.Now()
	c.get("/") // within the timeout: still open
	c.expectClosed(10 * timeout)
	if d := time.Since(start); d < timeout*3/4 {
		t.Errorf("closed after %v idle, before the %v timeout", d, timeout)
	}
}

// TestServerIdleDeadlineOutlivedByHandler: a request whose head and body
// arrive whole leaves the idle deadline in force (no read of the socket
// needs lifting it); a handler that runs past it is answered, and the
// connection serves the next request, whose body comes late.
func TestServerIdleDeadlineOutlivedByHandler(t *testing.T) {
	t.Parallel()
	const idle = 300 * time.Millisecond
	st := srvStart(t, &Server{
		IdleTimeout:       idle,
		ReadHeaderTimeout: idle,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				time.Sleep(3 * idle)
			}
			srvEcho(w, r)
		}),
	})
	c := srvDial(t, st.addr)
	c.get("/")
	c.send("POST /slow HTTP/1.1\r\nHost: test\r\nContent-Length: 4\r\n\r\nbody")
	if _, body := c.response(http.MethodPost); body != `4 [] "body" <nil>` {
		t.Fatalf("slow handler: saw %s", body)
	}
	c.send("POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 4\r\n\r\n")
	time.Sleep(2 * idle)
	c.send("late")
	if _, body := c.response(http.MethodPost); body != `4 [] "late" <nil>` {
		t.Fatalf("late body after a slow handler: saw %s", body)
	}
}

func TestServerSSE(t *testing.T) {
	t.Parallel()
	const events = 100
	ack := make(chan struct{})
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		rc := http.NewResponseController(w)
		for i := range events {
			fmt.Fprintf(w, "id: %d\ndata: {\"n\":%d}\n\n", i, i)
			if err := rc.Flush(); err != nil {
				t.Errorf("Flush: %v", err)
				return
			}
			select {
			case <-ack: // the client has read this event
			case <-r.Context().Done():
				return
			case <-time.After(srvWait):
				t.Errorf("event %d not acknowledged", i)
				return
			}
		}
	})
	client := srvClient(t)
	resp, err := client.Get("http://" + st.addr + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	for i := range events {
		var ev []string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("event %d: %v (read %q)", i, err, ev)
			}
			if line == "\n" {
				break
			}
			ev = append(ev, line)
		}
		if want := []string{fmt.Sprintf("id: %d\n", i), fmt.Sprintf("data: {\"n\":%d}\n", i)}; fmt.Sprint(ev) != fmt.Sprint(want) {
			t.Fatalf("event %d: %q, want %q", i, ev, want)
		}
		if br.Buffered() != 0 {
			t.Fatalf("event %d: %d bytes of a later event already here", i, br.Buffered())
		}
		ack <- struct{}{}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after the events: %q, %v", rest, err)
	}
}

func TestServerConcurrentClients(t *testing.T) {
	t.Parallel()
	st := srvServe(t, srvEcho)
	client := srvClient(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				msg := fmt.Sprintf("g%d-i%d-%s", g, i, strings.Repeat("p", i*100))
				resp, err := client.Post("http://"+st.addr+"/", "text/plain", strings.NewReader(msg))
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf("%d [] %q <nil>", len(msg), msg); string(b) != want {
					t.Errorf("got %.60s, want %.60s", b, want)
				}
			}
		})
	}
	wg.Wait()
}

func TestServerWriteHeader(t *testing.T) {
	t.Parallel()
	errs := make(chan error, 2)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusEarlyHints) // interim answers are not sent
		w.WriteHeader(http.StatusCreated)
		w.WriteHeader(http.StatusInternalServerError) // superfluous
		rc := http.NewResponseController(w)
		errs <- rc.SetWriteDeadline(time.Now().Add(srvWait))
		errs <- rc.SetReadDeadline(time.Time{})
		io.WriteString(w, "made")
	})
	c := srvDial(t, st.addr)
	resp, body := c.get("/")
	if resp.StatusCode != http.StatusCreated || body != "made" {
		t.Errorf("got %s %q, want 201 \"made\"", resp.Status, body)
	}
	for range 2 {
		if err := srvRecv(t, errs, "a deadline"); err != nil {
			t.Errorf("ResponseController deadline: %v", err)
		}
	}
}

// TestServerFlushErrorAfterClientLeaves: a stream learns from FlushError
// that its client is gone.
func TestServerFlushErrorAfterClientLeaves(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	leave := make(chan struct{})
	result := make(chan error, 1)
	errWroteAfterFailure := errors.New("Write succeeded after Flush failed")
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.Flush()
		started <- struct{}{}
		<-leave
		chunk := bytes.Repeat([]byte("e"), 1024)
		deadline := time.Now().Add(srvWait)
		for time.Now().Before(deadline) {
			w.Write(chunk)
			if err := rc.Flush(); err != nil {
				_, werr := w.Write(chunk)
				if werr == nil {
					err = errWroteAfterFailure
				}
				result <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
		result <- nil
	})
	c := srvDial(t, st.addr)
	c.send("GET / HTTP/1.1\r\nHost: test\r\n\r\n")
	srvRecv(t, started, "the handler")
	c.nc.Close()
	close(leave)
	if err := srvRecv(t, result, "the handler's end"); err == nil {
		t.Error("Flush kept succeeding after the client closed")
	} else if errors.Is(err, errWroteAfterFailure) {
		t.Error(err)
	}
}

// ---- Bugs these tests found, now fixed. ----

// TestServerFixedHEADFlush: a HEAD answered by a handler that flushes
// (an SSE handler, say) gets the last-chunk "0\r\n\r\n" after its head,
// which the client reads as the start of the next response.
func TestServerFixedHEADFlush(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		io.WriteString(w, "data: x\n\n")
	})
	c := srvDial(t, st.addr)
	c.send("HEAD / HTTP/1.1\r\nHost: test\r\n\r\n")
	c.response(http.MethodHead)
	c.expectSilent(100 * time.Millisecond)
}

// TestServerFixedHEADContentLength: RFC 9110 section 8.6: a
// Content-Length in an answer to HEAD must be what GET would send; a
// handler that writes 5 bytes and declares nothing gets Content-Length: 0.
func TestServerFixedHEADContentLength(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	c := srvDial(t, st.addr)
	c.send("HEAD / HTTP/1.1\r\nHost: test\r\n\r\n")
	resp, _ := c.response(http.MethodHead)
	if cl := resp.Header["Content-Length"]; cl != nil && cl[0] != "5" {
		t.Errorf("HEAD: Content-Length %q; GET sends 5 bytes", cl)
	}
}

// TestServerFixedContinueAfterHead: a handler that flushes its head
// and then reads a body sent with Expect: 100-continue gets
// "HTTP/1.1 100 Continue" written into the middle of its response.
func TestServerFixedContinueAfterHead(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		srvEcho(w, r)
	})
	c := srvDial(t, st.addr)
	c.send("POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	_ = c.nc.SetReadDeadline(time.Now().Add(srvWait))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v, %v", resp, err)
	}
	c.send("hello")
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != `5 [] "hello" <nil>` {
		t.Errorf("body %q, %v", b, err)
	}
}

// TestServerFixedIdleTimeoutWithoutHeaderTimeout: with IdleTimeout set
// and ReadHeaderTimeout zero, the idle deadline set to wait for a second
// request is never cleared, so its body must arrive within IdleTimeout of
// its first byte.
func TestServerFixedIdleTimeoutWithoutHeaderTimeout(t *testing.T) {
	t.Parallel()
	// A second: the second request's head must come within it of the
	// first answer, which a loaded machine may take a good part of.
	const idle = time.Second
	st := srvStart(t, &Server{IdleTimeout: idle, Handler: http.HandlerFunc(srvEcho)})
	c := srvDial(t, st.addr)
	c.get("/")
	c.send("POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 4\r\n\r\n")
	time.Sleep(2 * idle)
	c.send("late")
	if _, body := c.response(http.MethodPost); body != `4 [] "late" <nil>` {
		t.Errorf("handler saw %s", body)
	}
}

// TestServerFixedHTTP10CloseThenKeepAlive: see the request test of the
// same name; the server keeps the connection open.
func TestServerFixedHTTP10CloseThenKeepAlive(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	c := srvDial(t, st.addr)
	c.send("GET / HTTP/1.0\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n")
	if resp, _ := c.response(http.MethodGet); !resp.Close {
		t.Errorf("Connection %q, want close", resp.Header["Connection"])
	}
	c.expectClosed(time.Second)
}

// TestServerFixedAbsoluteFormHost: RFC 9112 section 3.2.2: an origin
// server must take the host from an absolute-form target and ignore Host.
func TestServerFixedAbsoluteFormHost(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Host) })
	c := srvDial(t, st.addr)
	c.send("GET http://other.example/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if _, body := c.response(http.MethodGet); body != "other.example" {
		t.Errorf("r.Host %q, want other.example", body)
	}
}

// TestServerAnnouncesCloseForUnreadBody: when the server will close the
// connection after an answer because the request body is left unread
// (over 256 KiB, chunked, or Expect: 100-continue never answered), the
// answer says Connection: close, so that the client does not send its next
// request on a connection about to close.
func TestServerAnnouncesCloseForUnreadBody(t *testing.T) {
	t.Parallel()
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) })
	for _, head := range []string{
		"POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 1000000\r\n\r\n",
	} {
		c := srvDial(t, st.addr)
		c.send(head)
		resp, _ := c.response(http.MethodPost)
		if resp.StatusCode != http.StatusForbidden || !resp.Close {
			t.Errorf("%.60q: %s, Close %v; want 403 with Connection: close", head, resp.Status, resp.Close)
		}
		c.expectClosed(srvWait)
	}
}

// TestServerFixedWritePastContentLength: a write past the declared
// Content-Length succeeds while the answer is buffered, and then all of
// the body, the part within the length too, is dropped.
func TestServerFixedWritePastContentLength(t *testing.T) {
	t.Parallel()
	errs := make(chan error, 1)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "3")
		io.WriteString(w, "ab")
		_, err := io.WriteString(w, "cdef")
		errs <- err
	})
	c := srvDial(t, st.addr)
	c.send("GET / HTTP/1.1\r\nHost: test\r\n\r\n")
	_ = c.nc.SetReadDeadline(time.Now().Add(srvWait))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if err := srvRecv(t, errs, "the write"); !errors.Is(err, http.ErrContentLength) {
		t.Errorf("write past the length: %v, want http.ErrContentLength", err)
	}
	if !strings.HasPrefix(string(b), "ab") {
		t.Errorf("body %q, want the 2 bytes within the length first", b)
	}
}

// TestServerOnShutdownAfterListeners: what RegisterOnShutdown names runs
// once Shutdown has closed the listeners, as with net/http: a stream it
// ends cannot be replaced by a new connection to this server.
func TestServerOnShutdownAfterListeners(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: http.NotFoundHandler()}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	resp, err := srvClient(t).Get("http://" + ln.Addr().String() + "/") // Serve is accepting
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	accepted := make(chan error, 1)
	s.RegisterOnShutdown(func() {
		// A closed listener fails Accept with net.ErrClosed; an open one
		// times out at once under a past deadline. Nothing here depends on
		// the port, which a parallel test may take as soon as it is free.
		ln.(*net.TCPListener).SetDeadline(time.Now())
		_, err := ln.Accept()
		accepted <- err
	})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := srvRecv(t, accepted, "the shutdown hook"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept in the hook = %v, want net.ErrClosed: the hook ran before the listener closed", err)
	}
	if err := srvRecv(t, served, "Serve"); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve = %v", err)
	}
}

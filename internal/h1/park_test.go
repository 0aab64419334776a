package h1

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestDetach: a handler that detaches returns at once; its response goes
// on from another goroutine, ends when done is called (chunked, whole),
// and the connection then carries the next request. done before the
// handler returns works as well.
func TestDetach(t *testing.T) {
	for _, early := range []bool{false, true} {
		t.Run(fmt.Sprintf("done-before-return=%v", early), func(t *testing.T) {
			returned := make(chan struct{})
			st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/stream" {
					io.WriteString(w, "next")
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.(http.Flusher).Flush()
				done, ok := Detach(w)
				if !ok {
					t.Error("Detach refused a response of the server")
					return
				}
				if _, again := Detach(w); again {
					t.Error("Detach detached a response twice")
				}
				finish := func() {
					io.WriteString(w, "data: later\n\n")
					w.(http.Flusher).Flush()
					done()
				}
				if early {
					finish()
					return
				}
				go func() {
					<-returned
					time.Sleep(20 * time.Millisecond)
					finish()
				}()
				close(returned)
			})
			client := srvClient(t)
			var conns []net.Conn
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conns = append(conns, i.Conn) }})
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+st.addr+"/stream", nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(b) != "data: later\n\n" || resp.TransferEncoding[0] != "chunked" {
				t.Fatalf("detached response %q %v %v", b, err, resp.TransferEncoding)
			}
			req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://"+st.addr+"/next", nil)
			resp, err = client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "next" || len(conns) != 2 || conns[0] != conns[1] {
				t.Fatalf("next request: %q on %d connections (%v)", b, len(conns), conns)
			}
		})
	}
}

// TestDetachedRequestContext: a detached response's request context lives
// on after the handler returned, and ends when the client goes.
func TestDetachedRequestContext(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the close watcher is Linux only")
	}
	ended := make(chan error, 1)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		done, _ := Detach(w)
		context.AfterFunc(r.Context(), func() { ended <- r.Context().Err(); done() })
	})
	c := srvDial(t, st.addr)
	c.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
	if line, err := c.br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("status line %q %v", line, err)
	}
	time.Sleep(2 * watchAfter)
	select {
	case err := <-ended:
		t.Fatalf("the request's context ended (%v) while its client was there", err)
	default:
	}
	c.nc.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("context ended with %v", err)
		}
	case <-time.After(srvWait):
		t.Fatal("the detached request's context outlived its client")
	}
}

// TestDetachRefusesOtherWriters: a ResponseWriter this server did not make
// cannot be detached.
func TestDetachRefusesOtherWriters(t *testing.T) {
	if _, ok := Detach(&fakeWriter{}); ok {
		t.Fatal("Detach took a writer of another server")
	}
}

type fakeWriter struct{ http.ResponseWriter }

func (f *fakeWriter) Unwrap() http.ResponseWriter { return nil }

// TestBodyPark: a parked body calls ready once the replica sends more,
// holding no read buffer meanwhile, and reads on to its end, the
// connection reused; a park that finds bytes buffered says so; a close or
// a cancel of a parked body calls ready, and reading then fails.
func TestBodyPark(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("bodies park on Linux")
	}
	s, step := newStepServer(t)
	p, dials := testPool(t, 4)
	resp, _, err := p.Do(testCtx(t), s.addr, getReq())
	if err != nil {
		t.Fatal(err)
	}
	body := resp.Body.(*Body)
	buf := make([]byte, 256)
	for i := 1; i <= 2; i++ {
		ready := make(chan struct{}, 2)
		if !body.Park(func() { ready <- struct{}{} }) {
			t.Fatalf("event %d: a body with nothing buffered did not park", i)
		}
		if body.c.br != nil {
			t.Fatalf("event %d: a parked body holds its read buffer", i)
		}
		select {
		case <-ready:
			t.Fatalf("event %d: ready before the replica sent anything", i)
		case <-time.After(50 * time.Millisecond):
		}
		step <- struct{}{}
		select {
		case <-ready:
		case <-time.After(wait):
			t.Fatalf("event %d: no ready after the replica sent", i)
		}
		n, err := readWithin(t, body, buf, wait)
		if want := fmt.Sprintf("data: %d\n\n", i); err != nil || string(buf[:n]) != want {
			t.Fatalf("event %d: %q, %v; want %q", i, buf[:n], err, want)
		}
		select {
		case <-ready:
			t.Fatalf("event %d: ready called twice", i)
		default:
		}
	}
	if n, err := readWithin(t, body, buf, wait); n != 0 || err != io.EOF {
		t.Fatalf("after the events: %d, %v; want EOF", n, err)
	}
	if body.Park(func() { t.Error("ready of a body at its end") }) {
		t.Fatal("a body at its end parked")
	}

	// A close, and a cancel, wake a parked body.
	for _, how := range []string{"close", "cancel"} {
		ctx, cancel := context.WithCancel(t.Context())
		resp, _, err := p.Do(ctx, s.addr, getReq())
		if err != nil {
			t.Fatal(err)
		}
		body := resp.Body.(*Body)
		ready := make(chan struct{}, 2)
		if !body.Park(func() { ready <- struct{}{} }) {
			t.Fatalf("%s: did not park", how)
		}
		if how == "close" {
			body.Close()
		} else {
			cancel()
		}
		select {
		case <-ready:
		case <-time.After(wait):
			t.Fatalf("%s: a parked body was not woken", how)
		}
		if _, err := body.Read(buf); err == nil {
			t.Fatalf("%s: a read after it succeeded", how)
		} else if how == "cancel" && !errors.Is(err, context.Canceled) {
			t.Fatalf("cancel: read %v, want context.Canceled", err)
		}
		cancel()
	}
	if d := dials.Load(); d != 2 {
		t.Errorf("%d dials, want 2 (the stream's connection reused by the closed one, a new one for the cancelled)", d)
	}
}

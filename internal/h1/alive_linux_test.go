package h1

import (
	"io"
	"net"
	"testing"
	"time"
)

func TestAlive(t *testing.T) {
	client, peer := tcpPair(t)

	if !alive(client) {
		t.Fatal("an open idle connection is not alive")
	}
	// alive must not block nor consume: call it repeatedly.
	for range 3 {
		if !alive(client) {
			t.Fatal("alive changed its mind")
		}
	}
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return !alive(client) }, "unasked bytes")
	// The byte is still there: alive peeks.
	buf := make([]byte, 1)
	client.SetReadDeadline(time.Now().Add(wait))
	if n, err := client.Read(buf); n != 1 || buf[0] != 'x' {
		t.Fatalf("after alive: read %q, %v", buf[:n], err)
	}
	if !alive(client) {
		t.Fatal("alive again after the byte was read")
	}
	peer.Close()
	waitFor(t, func() bool { return !alive(client) }, "closed by the peer")
	client.Close()
	if alive(client) {
		t.Fatal("a closed connection is alive")
	}

	// Not a socket: nothing to peek at.
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if !alive(a) {
		t.Fatal("a net.Pipe is not alive")
	}
}

// tcpPair is a connected loopback pair: the client end and the peer's.
func tcpPair(t *testing.T) (client, peer net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	peer, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	return client, peer
}

func TestPeekerSend(t *testing.T) {
	t.Run("written, then waits for the answer", func(t *testing.T) {
		client, peer := tcpPair(t)
		p := newPeeker(client)
		got := make(chan string, 1)
		go func() {
			buf := make([]byte, 5)
			peer.SetReadDeadline(time.Now().Add(wait))
			n, _ := io.ReadFull(peer, buf)
			got <- string(buf[:n])
			time.Sleep(50 * time.Millisecond)
			peer.Write([]byte("answer"))
		}()
		start := time.Now()
		n, res, err := p.send([]byte("hello"), true)
		if err != nil || res != sendWaited || n != 5 {
			t.Fatalf("send: n %d, result %d, err %v", n, res, err)
		}
		if el := time.Since(start); el < 50*time.Millisecond {
			t.Fatalf("send returned after %v, before the answer came", el)
		}
		if s := <-got; s != "hello" {
			t.Fatalf("peer read %q", s)
		}
		buf := make([]byte, 6)
		client.SetReadDeadline(time.Now().Add(wait))
		if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "answer" {
			t.Fatalf("the answer read after send: %q, %v", buf, err)
		}
	})
	t.Run("a connection its peer closed gets nothing", func(t *testing.T) {
		client, peer := tcpPair(t)
		p := newPeeker(client)
		peer.Close()
		waitFor(t, func() bool { return !alive(client) }, "closed by the peer")
		n, res, err := p.send([]byte("hello"), true)
		if n != 0 || res != sendGone || err != nil {
			t.Fatalf("send on a closed connection: n %d, result %d, err %v", n, res, err)
		}
	})
	t.Run("unchecked, the same connection is written to, and bytes already there end the wait", func(t *testing.T) {
		client, peer := tcpPair(t)
		p := newPeeker(client)
		peer.Write([]byte("x")) // the next request, come before the answer went out
		waitFor(t, func() bool { return !alive(client) }, "unasked bytes")
		// Read once, so that the byte's readiness is the poller's past.
		client.SetReadDeadline(time.Now().Add(time.Millisecond))
		client.Read(make([]byte, 0))
		client.SetReadDeadline(time.Time{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			n, res, err := p.send([]byte("hello"), false)
			if n != 5 || res != sendWaited || err != nil {
				t.Errorf("unchecked send: n %d, result %d, err %v", n, res, err)
			}
		}()
		select {
		case <-done:
		case <-time.After(wait):
			client.Close()
			<-done
			t.Fatal("send waited for bytes that were already there")
		}
	})
	t.Run("a socket that takes part of it", func(t *testing.T) {
		client, _ := tcpPair(t)
		client.(*net.TCPConn).SetWriteBuffer(4 << 10)
		p := newPeeker(client)
		big := make([]byte, 8<<20)
		n, res, err := p.send(big, true)
		if res != sendPartial || n <= 0 || n >= len(big) || err != nil {
			t.Fatalf("send of 8 MiB to a peer that does not read: n %d, result %d, err %v", n, res, err)
		}
	})
	t.Run("a connection closed before the send writes nothing", func(t *testing.T) {
		client, _ := tcpPair(t)
		p := newPeeker(client)
		client.Close()
		n, res, err := p.send([]byte("hello"), true)
		if n != 0 || res != sendPartial || err == nil {
			t.Fatalf("send on a closed connection: n %d, result %d, err %v; want nothing written and the close's error", n, res, err)
		}
	})
	t.Run("a cancel ends the wait", func(t *testing.T) {
		client, _ := tcpPair(t)
		p := newPeeker(client)
		time.AfterFunc(50*time.Millisecond, func() { client.Close() })
		n, res, err := p.send([]byte("hello"), true)
		if n != 5 || res != sendWaited || err == nil {
			t.Fatalf("send cut by a close: n %d, result %d, err %v", n, res, err)
		}
	})
}

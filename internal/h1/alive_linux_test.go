package h1

import (
	"net"
	"testing"
	"time"
)

func TestAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })

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

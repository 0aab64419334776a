package gateway

import (
	"net"
	"net/http"
)

// abortClient resets the client's connection after a write to it failed or
// timed out: a client that stops reading would otherwise keep its
// descriptor, and the kernel's send buffer full of bytes it will never
// read, for as long as the answer runs (a legacy call the gateway reads on
// to its end, say). internal/h1 resets the connection by itself when a
// write fails; net/http's HTTP/1 connections are taken over (Hijack) and
// closed with SO_LINGER 0, so that the close is a reset that drops the
// unsent bytes instead of queueing a FIN behind them. HTTP/2 streams have
// no connection of their own to close; they end when the handler returns.
func abortClient(rc *http.ResponseController) {
	conn, _, err := rc.Hijack()
	if err != nil {
		return // internal/h1 (already reset), or HTTP/2
	}
	c := conn
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS
		c = tc.NetConn()
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

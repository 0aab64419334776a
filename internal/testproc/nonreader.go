package testproc

import (
	"fmt"
	"net"
	"syscall"
	"testing"
)

// DialNonReader opens a connection to addr with a 4 KiB receive buffer,
// sends one tools/call of a chatty sleep (2 KiB of progress every 50 ms for
// 60 s) in the protocol version given (2025-11-25 on session, or
// 2026-07-28) with JSON-RPC id id, and never reads: a client that stopped
// reading, for the tests of what such clients cost a gateway.
func DialNonReader(t testing.TB, addr, version, session string, id int) *net.TCPConn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		})
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	meta := `"progressToken":"p"`
	hdr := "Mcp-Session-Id: " + session + "\r\n"
	if version == "2026-07-28" {
		meta += `,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
		hdr = "Mcp-Method: tools/call\r\nMcp-Name: sleep\r\n"
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sleep","arguments":{"seconds":60,"progress_every":0.05,"pad":2048},"_meta":{%s}}}`, id, meta)
	req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Mcp-Protocol-Version: " + version + "\r\n" + hdr + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	return c.(*net.TCPConn)
}

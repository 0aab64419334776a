package gateway

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/sse"
)

// FuzzMessagesToken feeds the messages path's query parser untrusted
// queries. Whatever it accepts, net/url reads as exactly one sessionId
// with the very same value (no escape, '+' or ';' it would decode or
// refuse): one spelling only. What it refuses, it refuses with 400 or 404.
func FuzzMessagesToken(f *testing.F) {
	for _, q := range []string{
		"sessionId=AgMAAAAAAAAAAAAAAAA", "", "sessionId=", "sessionId", "sessionId=a&sessionId=a",
		"sessionId=a&x=1", "x=1&sessionId=a", "sessionId=a%41", "sessionId=a+b", "sessionId=a;b",
		"sessionid=a", "session%49d=a", "sessionId=a=b", "&sessionId=a", "sessionId=a&",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		token, err := messagesToken(raw)
		if err != nil {
			if err.Status != http.StatusBadRequest && err.Status != http.StatusNotFound {
				t.Fatalf("messagesToken(%q) refused with %d", raw, err.Status)
			}
			return
		}
		vals, perr := url.ParseQuery(raw)
		if perr != nil {
			t.Fatalf("messagesToken(%q) = %q, but net/url refuses the query: %v", raw, token, perr)
		}
		if len(vals) != 1 || len(vals["sessionId"]) != 1 || vals["sessionId"][0] != token || token == "" {
			t.Fatalf("messagesToken(%q) = %q, but net/url reads %v", raw, token, vals)
		}
	})
}

// FuzzRewriteEndpoint feeds the endpoint rewriting what a replica might
// send: an endpoint it accepts becomes a request target of visible ASCII
// on the replica's origin, and the rewritten event dispatches the
// gateway's URI with every other field as the replica's.
func FuzzRewriteEndpoint(f *testing.F) {
	f.Add([]byte("event: endpoint\ndata: /message?sessionId=1\r\n\r\n"))
	f.Add([]byte("event: endpoint\r\ndata: /messages/?session_id=ab\r\nid: 1\r\n\r\n"))
	f.Add([]byte("event:endpoint\ndata:http://10.0.0.5:3001/m?s=1\ndata: x\n\n"))
	sseURL, _ := url.Parse("http://10.0.0.5:3001/sse")
	f.Fuzz(func(t *testing.T, stream []byte) {
		block, err := sse.NewReader(bytes.NewReader(stream), 1<<16).Next()
		if err != nil {
			return
		}
		ev := sse.Parse(block)
		target, err := endpointTarget(string(ev.Data), sseURL, "gw:8080")
		if err != nil {
			return
		}
		if !strings.HasPrefix(target, "/") || strings.ContainsFunc(target, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			t.Fatalf("endpoint %q gave the request target %q", ev.Data, target)
		}
		const value = "/messages?sessionId=T"
		got := sse.Parse(replaceData(block, value))
		want := ev
		want.Data = []byte(value)
		if got.Type != want.Type || got.ID != want.ID || got.HasID != want.HasID || got.Retry != want.Retry || string(got.Data) != value {
			t.Fatalf("rewritten %q dispatches %+v, want %+v", block, got, want)
		}
	})
}

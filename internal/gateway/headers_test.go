package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// TestForwardedHeaders: the replica sees the client's headers minus
// hop-by-hop ones and Accept-Encoding, plus the gateway's own X-Forwarded-*
// (the client's X-Forwarded-For is not believed), and its own Host;
// the client sees the replica's headers minus hop-by-hop ones.
func TestForwardedHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	var host string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host = r.Host
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Connection", "X-Secret-Hop")
		w.Header().Set("X-Secret-Hop", "1")
		w.Header().Set("X-Replica", "yes")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer backend.Close()
	gw := startGatewayOn(t, []upstream.Spec{{Name: "b", URL: backend.URL + "/mcp"}}, nil, io.Discard)
	front := newFront(gw)
	defer front.Close()

	req, _ := http.NewRequest(http.MethodPost, front.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("Connection", "X-Drop-Me")
	req.Header.Set("X-Drop-Me", "1")
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h := <-got
	if h.Get("Accept-Encoding") != "" || h.Get("X-Drop-Me") != "" {
		t.Errorf("replica saw Accept-Encoding %q, X-Drop-Me %q", h.Get("Accept-Encoding"), h.Get("X-Drop-Me"))
	}
	if h.Get("X-Forwarded-For") != "127.0.0.1" || h.Get("X-Forwarded-Proto") != "http" {
		t.Errorf("X-Forwarded-For %q, Proto %q", h.Get("X-Forwarded-For"), h.Get("X-Forwarded-Proto"))
	}
	if h.Get("Authorization") != "Bearer t" {
		t.Error("Authorization did not reach the replica")
	}
	if host != strings.TrimPrefix(backend.URL, "http://") {
		t.Errorf("replica saw Host %q", host)
	}
	if resp.Header.Get("X-Secret-Hop") != "" || resp.Header.Get("X-Replica") != "yes" {
		t.Errorf("client saw X-Secret-Hop %q, X-Replica %q", resp.Header.Get("X-Secret-Hop"), resp.Header.Get("X-Replica"))
	}
}

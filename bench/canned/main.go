// Command canned is the benchmark's backend: an HTTP server that answers every
// POST with one fixed JSON-RPC result, so that a benchmark measures the proxy
// in front of it and not an MCP server. An initialize request is answered with
// a Mcp-Session-Id header (canned-<n>), so that a gateway in front seals a
// session that later requests can name. GET /health answers 200.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"strconv"
	"sync/atomic"
)

var (
	answer     = []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`)
	initAnswer = []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"canned","version":"0"}}}`)
	health     = []byte(`{"status":"ok"}`)
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9101", "listener `address`")
	flag.Parse()
	var sessions atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Content-Type", "application/json")
			w.Write(health)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "reading body", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if bytes.Contains(body, []byte(`"initialize"`)) {
			w.Header().Set("Mcp-Session-Id", "canned-"+strconv.FormatInt(sessions.Add(1), 10))
			w.Write(initAnswer)
			return
		}
		if bytes.Contains(body, []byte(`"notifications/`)) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Write(answer)
	})
	fmt.Println("canned listening on", *listen)
	log.Fatal(http.ListenAndServe(*listen, h))
}

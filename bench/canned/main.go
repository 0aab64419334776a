// Command canned is the benchmark's backend: an HTTP server that answers every
// POST with one fixed JSON-RPC result, so that a benchmark measures the proxy
// in front of it and not an MCP server. An initialize request is answered with
// a Mcp-Session-Id header (canned-<n>), so that a gateway in front seals a
// session that later requests can name. GET /health answers 200.
//
// With --otlp-sink it is instead an OTLP/HTTP receiver that takes every
// export (POST /v1/traces, /v1/metrics) and answers an empty success,
// counting spans' bytes only: a benchmark of a traced gateway measures the
// gateway, not a tracing backend.
//
// With --tools it also answers tools/list with one tool, echo, declared
// read-only (readOnlyHint), so that a gateway in front may cache its calls
// (cache.tools), and answers every request under its own id (a gateway
// keeps only an answer to its request); without it, every POST gets the
// fixed result with id 1, as before.
//
// With --stdio it is the same backend as a stdio MCP server (MCP
// 2025-11-25, "Transports", stdio): one JSON-RPC message a line on stdin,
// every request answered on stdout under its own id (initialize with the
// fixed result, tools/list with echo, anything else with the fixed call
// result), notifications unanswered; so that a benchmark of a gateway
// serving stdio children measures the gateway, as it does over HTTP.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
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
	sink := flag.Bool("otlp-sink", false, "be an OTLP/HTTP receiver that discards what it is sent")
	withTools := flag.Bool("tools", false, "answer tools/list with one read-only tool, echo")
	stdio := flag.Bool("stdio", false, "serve on stdin and stdout, as a stdio MCP server (implies --tools)")
	flag.Parse()
	if *stdio {
		if err := serveStdio(os.Stdin, os.Stdout); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *sink {
		var exports, bytesIn atomic.Int64
		http.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
			n, _ := io.Copy(io.Discard, r.Body)
			exports.Add(1)
			bytesIn.Add(n)
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(http.StatusOK) // an empty Export*ServiceResponse: success
		})
		http.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "exports %d bytes %d\n", exports.Load(), bytesIn.Load())
		})
		fmt.Println("canned otlp sink listening on", *listen)
		log.Fatal(http.ListenAndServe(*listen, nil))
	}
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
		if *withTools && bytes.Contains(body, []byte(`"tools/list"`)) {
			w.Write(toolsAnswer(body))
			return
		}
		if *withTools {
			// The answer under the request's id: a gateway keeps (in its
			// cache, an idempotency record) only an answer to its request.
			w.Write(bytes.Replace(answer, []byte(`"id":1`), []byte(`"id":`+string(requestID(body))), 1))
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

// toolsAnswer is a tools/list result naming one read-only tool, echo, under
// the id of the request body holds.
func toolsAnswer(body []byte) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}}`, requestID(body))
}

// requestID is the JSON-RPC id of the request body holds, 1 if none.
func requestID(body []byte) json.RawMessage {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
		return json.RawMessage("1")
	}
	return req.ID
}

// serveStdio answers each request line of in on out until in ends.
func serveStdio(in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriter(out)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if a := stdioAnswer(line); a != nil {
				w.Write(a)
				w.WriteByte('\n')
				if err := w.Flush(); err != nil {
					return err
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// stdioAnswer is the answer to one message of a stdio client; nil for a
// notification.
func stdioAnswer(msg []byte) []byte {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 || m.Method == "" {
		return nil
	}
	switch m.Method {
	case "initialize":
		return bytes.Replace(initAnswer, []byte(`"id":1`), []byte(`"id":`+string(m.ID)), 1)
	case "tools/list":
		return toolsAnswer(msg)
	}
	return bytes.Replace(answer, []byte(`"id":1`), []byte(`"id":`+string(m.ID)), 1)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// matrixEras are the rows' eras: the client speaks each one's transport.
var matrixEras = []string{"2026-07-28", "2025-11-25", "2024-11-05"}

// matrixCall is one kind of call of the matrix.
type matrixCall struct {
	name string
	own  time.Duration // the call's own time
	// params returns the call's parameters for the cell named key, and
	// want the text of its right answer.
	params func(key string) (*mcp.CallToolParams, string)
}

// matrixCalls are the calls of each era: a fast read, a 3 s sleep with
// progress every 200 ms, and a 1 s mutation (in the ledger half-way).
var matrixCalls = []matrixCall{
	{"fast", 0, func(key string) (*mcp.CallToolParams, string) {
		return &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": key}}, key
	}},
	{"3 s with progress", 3 * time.Second, func(string) (*mcp.CallToolParams, string) {
		p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": 3, "progress_every": 0.2}}
		p.SetProgressToken("p")
		return p, "slept 3s on replica"
	}},
	{"mutating", time.Second, func(key string) (*mcp.CallToolParams, string) {
		return &mcp.CallToolParams{Name: "mutate", Arguments: map[string]any{"key": key, "seconds": 1}}, "mutated " + key + " on replica"
	}},
}

// callBound is the longest a call may take to be answered, right or as a
// JSON-RPC error, whatever the fault: its own time, two health checks and
// a second.
func callBound(own time.Duration) time.Duration { return own + 2*matrixInterval + time.Second }

// hangAfter is how long past its bound a call is waited for before it
// counts as a hang rather than a late answer.
const hangAfter = 10 * time.Second

// cellResult is what one cell of the matrix saw.
type cellResult struct {
	fault, era, call string
	outcome          string // "ok", "error", "gone", "late", "hang" or "wrong"
	took             time.Duration
	detail           string // the error's code and reason, or what was wrong
	key              string // the mutation's ledger key; "" for a call that mutates nothing
	problem          string // a double or a loss, found in the ledger
}

// failed reports whether the cell breaks a promise of the matrix.
func (r cellResult) failed() bool {
	return r.problem != "" || (r.outcome != "ok" && r.outcome != "error" && r.outcome != "gone")
}

// cell returns the table's text for the cell.
func (r cellResult) cell() string {
	s := r.outcome
	switch r.outcome {
	case "ok", "gone":
	case "hang":
		s = "hang (no answer in " + (callBound(r.own()) + hangAfter).String() + ")"
	default:
		s += fmt.Sprintf(" in %d ms", r.took.Milliseconds())
	}
	if r.detail != "" {
		s += " (" + r.detail + ")"
	}
	if r.problem != "" {
		s += ": " + r.problem
	}
	return s
}

// own returns the own time of the cell's call.
func (r cellResult) own() time.Duration {
	for _, c := range matrixCalls {
		if c.name == r.call {
			return c.own
		}
	}
	return 0
}

// matrixTable renders rows as a table: one line per fault and era, one
// column per call.
func matrixTable(rows []cellResult) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(w, "fault\tera")
	for _, c := range matrixCalls {
		fmt.Fprint(w, "\t"+c.name)
	}
	fmt.Fprintln(w)
	for i := 0; i+len(matrixCalls) <= len(rows); i += len(matrixCalls) {
		fmt.Fprintf(w, "%s\t%s", rows[i].fault, rows[i].era)
		for _, r := range rows[i : i+len(matrixCalls)] {
			fmt.Fprint(w, "\t"+r.cell())
		}
		fmt.Fprintln(w)
	}
	w.Flush()
	return b.String()
}

// matrixCell is one client with one call to make.
type matrixCell struct {
	call    matrixCall
	session *mcp.ClientSession
	answers *statusRecorder
	gone    chan struct{} // closed when the session has ended
	result  cellResult
}

// connectCells opens a client session per era and call on the fleet's
// gateway, era by era and call by call (the order of the table's rows),
// before any fault.
func connectCells(t *testing.T, f *toxiFleet, faultName string) []*matrixCell {
	t.Helper()
	var cells []*matrixCell
	for _, era := range matrixEras {
		for _, call := range matrixCalls {
			rec := &statusRecorder{next: http.DefaultTransport}
			cs := connectEra(t, f.gateway, era, &http.Client{Transport: rec})
			c := &matrixCell{call: call, session: cs, answers: rec, gone: make(chan struct{})}
			go func() { cs.Wait(); close(c.gone) }()
			c.result = cellResult{fault: faultName, era: era, call: call.name}
			cells = append(cells, c)
		}
	}
	return cells
}

// connectEra opens a client session with the gateway in era's transport.
func connectEra(t *testing.T, gw, era string, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: "http://" + gw + "/mcp", HTTPClient: hc}
	if era == "2024-11-05" {
		tr = &mcp.SSEClientTransport{Endpoint: "http://" + gw + "/sse", HTTPClient: hc}
	}
	// The 2024-11-05 client's stream lives as long as the context it was
	// connected with: the test's, which ends with it.
	c := mcp.NewClient(&mcp.Implementation{Name: "fault-matrix", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connecting in %s: %v", era, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// run makes the cell's call and records what came back, and when.
func (c *matrixCell) run() {
	r := &c.result
	key := strings.NewReplacer(" ", "-").Replace(r.fault + "/" + r.era + "/" + r.call)
	params, want := c.call.params(key)
	if c.call.name == "mutating" {
		r.key = key
	}
	bound := callBound(c.call.own)
	ctx, cancel := context.WithTimeout(context.Background(), bound+hangAfter)
	defer cancel()
	c.answers.reset()
	select {
	case <-c.gone:
		// A 2024-11-05 session ends with its stream: its client knows
		// before it calls, and must connect again; nothing was sent.
		r.outcome, r.detail = "gone", "its session's stream had ended"
		return
	default:
	}
	start := time.Now()
	res, err := c.session.CallTool(ctx, params)
	r.took = time.Since(start)
	switch {
	case ctx.Err() != nil:
		r.outcome = "hang"
	case err != nil:
		r.outcome, r.detail = "error", c.rpcError(err)
		if r.detail == "" {
			r.outcome, r.detail = "wrong", "not a JSON-RPC error: "+err.Error()
		}
	case res.IsError || len(res.Content) != 1 || textOf(res.Content[0]) != want:
		r.outcome, r.detail = "wrong", fmt.Sprintf("answer %s, want %q", jsonOf(res), want)
	default:
		r.outcome = "ok"
	}
	if r.outcome != "hang" && r.took > bound {
		r.outcome = "late"
	}
}

// rpcError returns the code and reason of the JSON-RPC error err carries,
// or that the gateway sent with an HTTP error status; "" for none.
func (c *matrixCell) rpcError(err error) string {
	var rpc *jsonrpc.Error
	status := ""
	if !errors.As(err, &rpc) || rpc.Code == codeRejected {
		// The SDK reports a 502, 503 or 504 by its status alone, as its
		// own error.
		code, body := c.answers.lastError()
		var msg struct {
			Error *jsonrpc.Error `json:"error"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Error == nil {
			return ""
		}
		rpc, status = msg.Error, fmt.Sprintf("HTTP %d, ", code)
	}
	var data struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(rpc.Data, &data)
	s := fmt.Sprintf("%s%d", status, rpc.Code)
	if data.Reason != "" {
		s += " " + data.Reason
	}
	return s
}

// textOf returns the text of a text content, "" for another kind.
func textOf(c mcp.Content) string {
	if tc, ok := c.(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// codeRejected is the Go SDK's own error code for an HTTP answer of 502,
// 503 or 504 ("rejected by transport"), whose body it does not read.
const codeRejected = -32005

// statusRecorder is an HTTP transport that keeps the status and body of
// the last answer of 400 or more, which the SDK does not always report.
type statusRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex // guards status and body
	code int
	body []byte
}

func (s *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &lingeringBody{ReadCloser: resp.Body}
	}
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	s.code, s.body = resp.StatusCode, body
	s.mu.Unlock()
	return resp, nil
}

// reset forgets the last answer of 400 or more.
func (s *statusRecorder) reset() {
	s.mu.Lock()
	s.code, s.body = 0, nil
	s.mu.Unlock()
}

// lastError returns the status and body of the last answer of 400 or more.
func (s *statusRecorder) lastError() (int, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code, s.body
}

// lingeringBody holds the end of a 2024-11-05 stream back 200 ms. The Go
// SDK's SSE client closes its session the moment its stream ends, and
// from then on drops the events it had read but not yet handed over: the
// last ones, which are the gateway's answers to the calls the stream's
// replica took with it. The pause lets them through first. Bytes that
// come with the end are handed over on their own, the end after them.
type lingeringBody struct {
	io.ReadCloser
	end error
}

func (b *lingeringBody) Read(p []byte) (int, error) {
	if b.end != nil {
		time.Sleep(200 * time.Millisecond)
		return 0, b.end
	}
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.end = err
		if n == 0 {
			return b.Read(p)
		}
	}
	return n, nil
}

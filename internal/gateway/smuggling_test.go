package gateway

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// The adversarial corpus: byte strings a client sends on one connection,
// each built so that some parser would read it as other requests than the
// client framed (request smuggling, RFC 9112 section 11.2), run through the
// gateway behind each front server to a backend that parses with net/http
// and logs every request it reads. The backend must see exactly the
// requests the case lists: what the client sent as requests, read the one
// way both front servers agree on, or nothing when the front refuses the
// message. Behind either front server the hidden request (hiddenBody)
// never reaches it: h1 refuses what could be read two ways, and serve's std
// server, which reads some of it as net/http does, closes the connection
// after every chunked request (CloseAfterChunked).

// backendRequest is one request the parsing backend read.
type backendRequest struct {
	Method, Target, Body string
}

func (r backendRequest) String() string { return r.Method + " " + r.Target + " " + r.Body }

// parsingBackend is a replica that reads every request with
// http.ReadRequest, in a loop on each connection, logs it, and answers a
// JSON-RPC result (200 {} for other paths, 405 for GET /mcp).
type parsingBackend struct {
	ln net.Listener
	wg sync.WaitGroup

	mu    sync.Mutex
	log   []backendRequest      // guarded by mu
	conns map[net.Conn]struct{} // guarded by mu
}

func startParsingBackend(t *testing.T) *parsingBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &parsingBackend{ln: ln, conns: make(map[net.Conn]struct{})}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(b.close)
	return b
}

func (b *parsingBackend) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns[c] = struct{}{}
		b.mu.Unlock()
		b.wg.Add(1)
		go b.serve(c)
	}
}

func (b *parsingBackend) close() {
	b.ln.Close()
	b.mu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *parsingBackend) serve(c net.Conn) {
	defer b.wg.Done()
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		b.mu.Lock()
		b.log = append(b.log, backendRequest{req.Method, req.RequestURI, string(body)})
		b.mu.Unlock()
		if err != nil {
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
			return
		}
		status, answer := 200, "{}"
		switch {
		case req.URL.Path != "/mcp":
		case req.Method == http.MethodGet:
			status, answer = 405, ""
		default:
			var msg struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(body, &msg) == nil && len(msg.ID) > 0 {
				answer = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"ok"}]}}`
			} else {
				status, answer = 202, ""
			}
		}
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", status, http.StatusText(status), len(answer), answer)
	}
}

func (b *parsingBackend) requests() []backendRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]backendRequest(nil), b.log...)
}

// The bodies of the corpus: two calls a client sends, and the one hidden
// in the framing, which the backend must not read as a request.
const (
	callBody   = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"one"}}}`
	call2Body  = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"two"}}}`
	hiddenBody = `{"jsonrpc":"2.0","id":666,"method":"tools/call","params":{"name":"smuggled","arguments":{}}}`
)

// rawHead is a POST /mcp head up to its framing fields, which the case
// adds, with the blank line that ends it.
func rawHead(proto string, fields ...string) string {
	return "POST /mcp " + proto + "\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\n" + strings.Join(fields, "") + "\r\n"
}

// rawPost is a well-formed POST /mcp with a Content-Length body.
func rawPost(body string, fields ...string) string {
	return rawHead("HTTP/1.1", append(fields, "Content-Length: "+strconv.Itoa(len(body))+"\r\n")...) + body
}

// rawChunk frames s as one chunk.
func rawChunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

func clField(n int) string { return "Content-Length: " + strconv.Itoa(n) + "\r\n" }

const teChunked = "Transfer-Encoding: chunked\r\n"

// hiddenRequest is the hidden request, whole.
var hiddenRequest = rawPost(hiddenBody, "Connection: close\r\n")

// Backend requests the cases expect.
var (
	fwdCall      = backendRequest{"POST", "/mcp", callBody}
	fwdCall2     = backendRequest{"POST", "/mcp", call2Body}
	fwdDiscovery = backendRequest{"GET", "/.well-known/oauth-protected-resource", ""}
)

// outcome is what a front server does with a case: the status of each
// answer the client reads, in order, and what the backend parses.
type outcome struct {
	status  []int
	backend []backendRequest
}

type smuggleCase struct {
	name string
	in   string
	want outcome
	// std is what net/http's server does where it differs from h1's; nil
	// when the same. net/http too reads each message one way, and the
	// gateway forwards that reading alone; in a few cases its reading is a
	// leniency h1 refuses (tookByStd, the bare LF after the trailers), and
	// only the close after a chunked request keeps the hidden request from
	// the backend.
	std *outcome
}

func refused(status int) outcome { return outcome{status: []int{status}} }

// tookByStd is net/http's reading of Content-Length and Transfer-Encoding
// together: chunked wins and the body is empty (the gateway answers 400).
// net/http alone would keep the connection and read the hidden request
// after it as the next one, though RFC 9112 section 6.1 says a server MUST
// close it; serve's std server closes after every chunked request
// (CloseAfterChunked), so it never does. h1 refuses the message and closes.
var tookByStd = &outcome{[]int{400}, nil}

// lfInExtension is CVE-2025-22871's chunked body. A reader that ends a
// chunk-size line at a bare LF reads the chunks "xxxx" and "0\r\n\r\n" and
// the hidden request; one that takes the LF for part of an extension reads
// the chunk of four hex digits that the other took for the next size, then
// the last chunk, and then the hidden request as the next request.
var lfInExtension = func() string {
	p := "0\r\n\r\n" + hiddenRequest
	return "4;\nxxxx\r\n" + fmt.Sprintf("%04x\r\n", len(p)) + p + "\r\n0\r\n\r\n"
}()

func smugglingCorpus() []smuggleCase {
	clte := "0\r\n\r\n" + hiddenRequest     // a chunked body that ends at once, then the hidden request
	big := strings.Repeat("a", 1<<20+8<<10) // over h1's 1 MiB and net/http's 1 MiB + 4 KiB
	return []smuggleCase{
		// The harness itself: requests that are what they look like.
		{name: "one request", in: rawPost(callBody, "Connection: close\r\n"), want: outcome{[]int{200}, []backendRequest{fwdCall}}},
		{name: "two pipelined requests", in: rawPost(callBody) + rawPost(call2Body, "Connection: close\r\n"),
			want: outcome{[]int{200, 200}, []backendRequest{fwdCall, fwdCall2}}},
		{name: "chunked body", in: rawHead("HTTP/1.1", teChunked, "Connection: close\r\n") + rawChunk(callBody[:20]) + rawChunk(callBody[20:]) + "0\r\n\r\n",
			want: outcome{[]int{200}, []backendRequest{fwdCall}}},

		// Content-Length and Transfer-Encoding together (RFC 9112
		// section 6.1): a reader of either hides the hidden request
		// from a reader of the other.
		{name: "CL.TE: Content-Length covers the hidden request", in: rawHead("HTTP/1.1", clField(len(clte)), teChunked) + clte,
			want: refused(400), std: tookByStd},
		{name: "TE.CL: the chunk holds the hidden request", in: rawHead("HTTP/1.1", teChunked, clField(len(fmt.Sprintf("%x\r\n", len(hiddenRequest))))) + rawChunk(hiddenRequest) + "0\r\n\r\n",
			want: refused(400), std: &outcome{status: []int{400}}},

		// Obfuscated Transfer-Encoding, each with a Content-Length that
		// covers the hidden request.
		{name: "TE chunked, identity", in: rawHead("HTTP/1.1", clField(len(clte)), "Transfer-Encoding: chunked, identity\r\n") + clte,
			want: refused(400), std: &outcome{status: []int{501}}},
		{name: "TE identity, chunked", in: rawHead("HTTP/1.1", clField(len(clte)), "Transfer-Encoding: identity, chunked\r\n") + clte,
			want: refused(400), std: &outcome{status: []int{501}}},
		{name: "TE with an extra space", in: rawHead("HTTP/1.1", clField(len(clte)), "Transfer-Encoding:  chunked\r\n") + clte,
			want: refused(400), std: tookByStd},
		{name: "TE xchunked", in: rawHead("HTTP/1.1", clField(len(clte)), "Transfer-Encoding: xchunked\r\n") + clte,
			want: refused(400), std: &outcome{status: []int{501}}},
		{name: "TE after a tab", in: rawHead("HTTP/1.1", clField(len(clte)), "Transfer-Encoding:\tchunked\r\n") + clte,
			want: refused(400), std: tookByStd},
		{name: "TE upper case", in: rawHead("HTTP/1.1", clField(len(clte)), "TRANSFER-ENCODING: CHUNKED\r\n") + clte,
			want: refused(400), std: tookByStd},
		{name: "TE with a space before the colon", in: rawHead("HTTP/1.1", clField(len(clte)), "Transfer-Encoding : chunked\r\n") + clte,
			want: refused(400)},
		{name: "TE twice", in: rawHead("HTTP/1.1", clField(len(clte)), teChunked, teChunked) + clte,
			want: refused(400), std: &outcome{status: []int{501}}},
		{name: "TE folded into another field", in: rawHead("HTTP/1.1", clField(len(clte)), "X-Pad: x\r\n", " Transfer-Encoding: chunked\r\n") + clte,
			want: refused(400), std: &outcome{status: []int{400}}},
		{name: "TE xchunked without a length", in: rawHead("HTTP/1.1", "Transfer-Encoding: xchunked\r\n") + clte,
			want: refused(501)},
		{name: "TE in HTTP/1.0 with a length", in: rawHead("HTTP/1.0", "Connection: keep-alive\r\n", teChunked, clField(len(clte))) + clte,
			want: refused(400), std: &outcome{status: []int{400}}},

		// Content-Length: duplicated, conflicting, signed, listed.
		{name: "CL twice, equal", in: rawPost(callBody, "Connection: close\r\n", clField(len(callBody))), want: outcome{[]int{200}, []backendRequest{fwdCall}}},
		{name: "CL twice, conflicting", in: rawHead("HTTP/1.1", clField(len(callBody)), clField(len(callBody)+len(hiddenRequest))) + callBody + hiddenRequest,
			want: refused(400)},
		{name: "CL as a list", in: rawHead("HTTP/1.1", "Content-Length: "+strconv.Itoa(len(callBody))+", "+strconv.Itoa(len(callBody))+"\r\n") + callBody + hiddenRequest,
			want: refused(400)},
		{name: "CL +", in: rawHead("HTTP/1.1", "Content-Length: +"+strconv.Itoa(len(callBody))+"\r\n") + callBody + hiddenRequest, want: refused(400)},
		{name: "CL -", in: rawHead("HTTP/1.1", "Content-Length: -"+strconv.Itoa(len(callBody))+"\r\n") + callBody + hiddenRequest, want: refused(400)},
		{name: "CL spelt two ways", in: rawHead("HTTP/1.1", clField(len(callBody)), "Content-Length: 0"+strconv.Itoa(len(callBody))+"\r\n") + callBody + hiddenRequest,
			want: refused(400)},

		// Chunked framing (CVE-2025-22871 and its kin).
		// 1<<64 in 17 digits: a parser that wraps reads the last chunk.
		{name: "chunk size over 16 hex digits", in: rawHead("HTTP/1.1", teChunked) + "10000000000000000\r\n\r\n" + hiddenRequest, want: refused(400)},
		// net/http takes a size of 1<<63 and waits for its bytes.
		{name: "chunk size past int64", in: rawHead("HTTP/1.1", teChunked) + "8000000000000000\r\n" + clte, want: refused(400), std: &outcome{}},
		{name: "bare LF ending a chunk-size line", in: rawHead("HTTP/1.1", teChunked) + fmt.Sprintf("%x\n%s\r\n", len(callBody), callBody) + clte, want: refused(400)},
		{name: "bare LF after chunk data", in: rawHead("HTTP/1.1", teChunked) + fmt.Sprintf("%x\r\n%s\n", len(callBody), callBody) + clte, want: refused(400)},
		{name: "bare CR after chunk data", in: rawHead("HTTP/1.1", teChunked) + fmt.Sprintf("%x\r\n%s\r", len(callBody), callBody) + clte, want: refused(400)},
		{name: "bare LF ending an extension", in: rawHead("HTTP/1.1", teChunked) + "2;\n" + "\r\n" + "xx\r\n" + clte, want: refused(400)},
		{name: "bare LF inside an extension (CVE-2025-22871)", in: rawHead("HTTP/1.1", teChunked) + lfInExtension, want: refused(400)},
		{name: "bare CR in an extension", in: rawHead("HTTP/1.1", teChunked) + fmt.Sprintf("%x;a\rb\r\n%s\r\n", len(callBody), callBody) + clte, want: refused(400)},
		{name: "bare LF ending the last chunk", in: rawHead("HTTP/1.1", teChunked) + rawChunk(callBody) + "0\n\r\n" + hiddenRequest, want: refused(400)},
		// net/http takes a bare LF for the CRLF that ends the trailer
		// section (when a CRLF CRLF follows within 4 KiB), so the hidden
		// request would be the next one, but the std server closes after a
		// chunked request; h1 refuses, as RFC 9112 section 7.1 asks for
		// CRLF there.
		{name: "bare LF ending the trailers", in: rawHead("HTTP/1.1", teChunked) + rawChunk(callBody) + "0\r\n\n" + hiddenRequest,
			want: refused(400), std: &outcome{[]int{200}, []backendRequest{fwdCall}}},
		{name: "chunk-size line over 4 KiB", in: rawHead("HTTP/1.1", teChunked) + fmt.Sprintf("%x;%s\r\n%s\r\n", len(callBody), strings.Repeat("e", 5000), callBody) + clte, want: refused(400)},

		// Field syntax.
		{name: "NUL in a field value", in: rawPost(callBody, "X-A: a\x00b\r\n") + hiddenRequest, want: refused(400)},
		{name: "NUL in a field name", in: rawPost(callBody, "X-\x00A: b\r\n") + hiddenRequest, want: refused(400)},
		{name: "NUL in the target", in: "POST /mcp\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n" + clField(len(callBody)) + "\r\n" + callBody + hiddenRequest, want: refused(400)},
		{name: "obs-fold continuation line", in: rawPost(callBody, "Connection: close\r\n", "X-Folded: a\r\n b\r\n"),
			want: refused(400), std: &outcome{[]int{200}, []backendRequest{fwdCall}}},
		{name: "obs-fold hiding a Content-Length", in: rawHead("HTTP/1.1", "Connection: close\r\n", "X-Folded: a\r\n Content-Length: 0\r\n", clField(len(callBody))) + callBody,
			want: refused(400), std: &outcome{[]int{200}, []backendRequest{fwdCall}}},
		{name: "empty line before the request line", in: "\r\n" + rawPost(callBody, "Connection: close\r\n"), want: refused(400)},

		// Request targets.
		{name: "absolute-form target", in: strings.Replace(rawPost(callBody, "Connection: close\r\n"), "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1", "POST http://127.0.0.1/mcp HTTP/1.1\r\nHost: evil.example", 1),
			want: outcome{[]int{200}, []backendRequest{fwdCall}}},
		{name: "absolute-form target naming another host", in: strings.Replace(rawPost(callBody, "Connection: close\r\n"), "POST /mcp", "POST http://evil.example/mcp", 1),
			want: refused(403)},

		// HTTP/1.0 keep-alive, and a pipelined request after it.
		{name: "HTTP/1.0 keep-alive, then another", in: rawHead("HTTP/1.0", "Connection: keep-alive\r\n", clField(len(callBody))) + callBody + rawHead("HTTP/1.0", clField(len(call2Body))) + call2Body,
			want: outcome{[]int{200, 200}, []backendRequest{fwdCall, fwdCall2}}},
		{name: "HTTP/1.0 without keep-alive, then another", in: rawHead("HTTP/1.0", clField(len(callBody))) + callBody + hiddenRequest,
			want: outcome{[]int{200}, []backendRequest{fwdCall}}},

		// Requests hidden in bodies.
		{name: "GET with a body holding a request", in: "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: 127.0.0.1\r\n" + clField(len(hiddenRequest)) + "\r\n" + hiddenRequest + rawPost(call2Body, "Connection: close\r\n"),
			want: outcome{[]int{200, 200}, []backendRequest{fwdDiscovery, fwdCall2}}},
		{name: "GET /mcp with a body holding a request", in: "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" + clField(len(hiddenRequest)) + "\r\n" + hiddenRequest + rawPost(call2Body, "Connection: close\r\n"),
			want: outcome{[]int{405, 200}, []backendRequest{{"GET", "/mcp", ""}, fwdCall2}}},
		{name: "chunked body holding a request", in: rawHead("HTTP/1.1", teChunked, "Connection: close\r\n") + rawChunk(hiddenRequest) + "0\r\n\r\n", want: refused(400)},
		{name: "JSON string holding a request", in: rawPost(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":`+strconv.Quote(hiddenRequest)+`}}}`, "Connection: close\r\n"),
			want: outcome{[]int{200}, []backendRequest{{"POST", "/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":` + strconv.Quote(hiddenRequest) + `}}}`}}}},

		// Oversized lines (a head of 1 MiB by default on both servers).
		{name: "request line over the limit", in: "POST /mcp?" + big + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + clField(len(callBody)) + "\r\n" + callBody, want: refused(431)},
		{name: "header line over the limit", in: rawPost(callBody, "X-Big: "+big+"\r\n"), want: refused(431)},
	}
}

// TestSmugglingCorpus runs the corpus through the gateway behind each
// front server.
func TestSmugglingCorpus(t *testing.T) {
	for _, server := range []string{"h1", "std"} {
		t.Run(server, func(t *testing.T) {
			for _, tc := range smugglingCorpus() {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					want := tc.want
					if server == "std" && tc.std != nil {
						want = *tc.std
					}
					got := runSmuggleCase(t, server, tc.in)
					if diff := cmp.Diff(want.status, got.status); diff != "" {
						t.Errorf("answers (-want +got):\n%s", diff)
					}
					if diff := cmp.Diff(want.backend, got.backend); diff != "" {
						t.Errorf("requests the backend parsed (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

// runSmuggleCase starts a backend, a gateway in front of it and the named
// front server, sends in on one connection, and reads the answers until the
// connection ends or stays quiet.
func runSmuggleCase(t *testing.T, server, in string) outcome {
	t.Helper()
	b := startParsingBackend(t)
	gw := startGatewayOn(t, []upstream.Spec{{Name: "b", URL: "http://" + b.ln.Addr().String() + "/mcp"}}, nil, io.Discard)
	front := newFrontOn(server, gw)
	t.Cleanup(front.Close)

	c, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	written := make(chan error, 1)
	go func() {
		_, err := io.WriteString(c, in)
		written <- err
	}()
	var got outcome
	br := bufio.NewReader(c)
	for {
		// The first answer may take a busy machine a while (a 1 MiB head
		// written and read under -race); later ones come at once, or the
		// connection is done.
		wait := 3 * time.Second
		if len(got.status) == 0 {
			wait = 10 * time.Second
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Logf("no answer for %s after %d", wait, len(got.status))
			}
			break
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got.status = append(got.status, resp.StatusCode)
	}
	c.Close()
	<-written
	got.backend = b.requests()
	return got
}

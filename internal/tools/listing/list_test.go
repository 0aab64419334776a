package listing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/mcpfleet/mcpfleet/internal/tools"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// seen is one request a recorder saw.
type seen struct {
	method   string // HTTP method
	rpc      string // JSON-RPC method of a POST
	version  string // Mcp-Protocol-Version
	session  string // Mcp-Session-Id
	auth     string // Authorization
	mcpMeth  string // Mcp-Method
	metaVers string // params._meta["io.modelcontextprotocol/protocolVersion"]
}

// recorder wraps a handler and keeps what each request was.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	reqs []seen
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := seen{method: r.Method, version: r.Header.Get("Mcp-Protocol-Version"), session: r.Header.Get("Mcp-Session-Id"),
		auth: r.Header.Get("Authorization"), mcpMeth: r.Header.Get("Mcp-Method")}
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var m struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &m) == nil {
			s.rpc = m.Method
			s.metaVers, _ = m.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string)
		}
	}
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, s)
	rec.mu.Unlock()
	rec.next.ServeHTTP(w, r)
}

func (rec *recorder) requests() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.reqs...)
}

// serve runs h on a loopback port until the test ends and returns the URL
// of its /mcp endpoint.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func newTestserver(t *testing.T, opts *testserver.Options) *testserver.Server {
	t.Helper()
	s, err := testserver.New("replica-1", opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sdkListing lists the endpoint with the official Go SDK's client: what
// the server declares, read by another implementation.
func sdkListing(t *testing.T, url string) []tools.Definition {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "sdk-client", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("SDK client connecting to %s: %v", url, err)
	}
	defer cs.Close()
	var defs []tools.Definition
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("SDK client listing %s: %v", url, err)
		}
		b, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		var d tools.Definition
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		defs = append(defs, d)
	}
	return defs
}

func mustSet(t *testing.T, defs []tools.Definition) *tools.Set {
	t.Helper()
	s, err := tools.NewSet(defs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestListTestserver lists the repository's test server in each of its
// eras: List answers in 2026-07-28 where the server serves it and falls
// back to a 2025-11-25 session where it does not, every definition is the
// one the SDK's own client reads (name, description, schemas,
// annotations), two listings give the same set digest, and every era gives
// the same set.
func TestListTestserver(t *testing.T) {
	tests := []struct {
		name    string
		opts    *testserver.Options
		era     string
		session bool // the 2025-11-25 listing runs in a session, deleted at the end
	}{
		{"both eras", &testserver.Options{Era: testserver.EraBoth}, "2026-07-28", false},
		{"2026 only", &testserver.Options{Era: testserver.Era2026}, "2026-07-28", false},
		{"2025 only", &testserver.Options{Era: testserver.Era2025}, "2025-11-25", true},
		{"2025 stateless", &testserver.Options{Era: testserver.Era2025, Stateless: true}, "2025-11-25", false},
	}
	digests := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{next: newTestserver(t, tt.opts).Handler()}
			url := serve(t, rec)
			defs, era, err := List(t.Context(), url, ListOptions{})
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if era != tt.era {
				t.Errorf("era %q, want %q", era, tt.era)
			}
			var deleted bool
			lists := 0
			for _, r := range rec.requests() {
				switch {
				case r.method == http.MethodDelete:
					deleted = r.session != ""
				case r.rpc != "tools/list" || r.version == "2026-07-28" && era == "2025-11-25":
					// The refused request, or not a listing.
				case r.version != era || (r.session != "") != tt.session:
					t.Errorf("tools/list sent with version %q, session %q; want version %s, a session: %v", r.version, r.session, era, tt.session)
				default:
					lists++
				}
			}
			if deleted != tt.session || lists != 1 {
				t.Errorf("%d tools/list in era %s, session deleted: %v; want 1, %v", lists, era, deleted, tt.session)
			}
			got := mustSet(t, defs)
			want := mustSet(t, sdkListing(t, url))
			if len(defs) < 8 || got.Len() != want.Len() {
				t.Errorf("List found %d tools, the SDK client %d; want the same, at least 8", len(defs), want.Len())
			}
			if ch := tools.Compare(want, got); len(ch) != 0 {
				t.Errorf("List's definitions differ from the SDK client's: %v", ch)
			}
			echo, ok := got.Get("echo")
			if !ok || echo.Description != "Returns its text." || !bytes.Contains(echo.InputSchema, []byte(`"text"`)) || len(echo.Annotations) == 0 {
				t.Errorf("echo listed as %+v, want its description, input schema and annotations", echo.Definition)
			}
			again, _, err := List(t.Context(), url, ListOptions{})
			if err != nil {
				t.Fatalf("second List: %v", err)
			}
			if d := mustSet(t, again).Digest(); d != got.Digest() {
				t.Errorf("two listings give digests %s and %s", got.Digest(), d)
			}
			digests[got.Digest()] = true
		})
	}
	if len(digests) != 1 {
		t.Errorf("the eras give %d different sets, want 1: %v", len(digests), digests)
	}
}

// TestListRequests checks the requests themselves: a 2026-07-28 tools/list
// carries the version and the method in headers and _meta, and a
// 2025-11-25 fallback initializes, confirms, lists in the session with the
// version header and deletes the session.
func TestListRequests(t *testing.T) {
	rec := &recorder{next: newTestserver(t, &testserver.Options{Era: testserver.Era2026}).Handler()}
	if _, _, err := List(t.Context(), serve(t, rec), ListOptions{}); err != nil {
		t.Fatal(err)
	}
	want := seen{method: "POST", rpc: "tools/list", version: "2026-07-28", mcpMeth: "tools/list", metaVers: "2026-07-28"}
	if got := rec.requests(); len(got) != 1 || got[0] != want {
		t.Errorf("2026-07-28 requests %+v, want one %+v", got, want)
	}

	// The headers every 2026-07-28 request carries.
	var hdr http.Header
	var meta map[string]any
	fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr = r.Header.Clone()
		var m struct {
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		meta = m.Params.Meta
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}}`)
	})
	if _, _, err := List(t.Context(), serve(t, fake), ListOptions{}); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"} {
		if hdr.Get(k) != v {
			t.Errorf("header %s: %q, want %q", k, hdr.Get(k), v)
		}
	}
	if caps, ok := meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any); !ok || len(caps) != 0 || meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" {
		t.Errorf("_meta %v, want the protocol version and empty client capabilities", meta)
	}

	rec = &recorder{next: newTestserver(t, &testserver.Options{Era: testserver.Era2025}).Handler()}
	if _, _, err := List(t.Context(), serve(t, rec), ListOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	session := ""
	for _, r := range rec.requests() {
		got = append(got, r.method+" "+r.rpc)
		switch {
		case r.rpc == "initialize" || r.method == "POST" && r.version == "2026-07-28":
		case session == "":
			session = r.session
			fallthrough
		default:
			if r.session == "" || r.session != session || r.version != "2025-11-25" {
				t.Errorf("%s %s in session %q, version %q; want session %q, version 2025-11-25", r.method, r.rpc, r.session, r.version, session)
			}
		}
	}
	wantSeq := []string{"POST tools/list", "POST initialize", "POST notifications/initialized", "POST tools/list", "DELETE "}
	if fmt.Sprint(got) != fmt.Sprint(wantSeq) {
		t.Errorf("2025-11-25 fallback sent %q, want %q", got, wantSeq)
	}
}

// sdkServer is an official Go SDK server of n tools, pageSize a page.
func sdkServer(n, pageSize int, description func(i int) string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "1"}, &mcp.ServerOptions{PageSize: pageSize})
	for i := range n {
		s.AddTool(&mcp.Tool{
			Name:        fmt.Sprintf("tool-%03d", i),
			Description: description(i),
			InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"arg%d":{"type":"integer","maximum":%d}}}`, i, i)),
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	return s
}

// TestListPages lists an SDK server of 250 tools, 7 a page, in both eras:
// List follows nextCursor over all 36 pages, keeps the server's order and
// every definition, and stops at MaxPages.
func TestListPages(t *testing.T) {
	const n, pageSize = 250, 7
	srv := sdkServer(n, pageSize, func(i int) string { return fmt.Sprintf("Tool number %d.", i) })
	for _, tt := range []struct {
		name string
		opts *mcp.StreamableHTTPOptions
		era  string
	}{
		{"stateless 2026-07-28", &mcp.StreamableHTTPOptions{Stateless: true}, "2026-07-28"},
		{"sessions 2025-11-25", nil, "2025-11-25"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, tt.opts)}
			url := serve(t, rec)
			defs, era, err := List(t.Context(), url, ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if era != tt.era {
				t.Errorf("era %q, want %q", era, tt.era)
			}
			if len(defs) != n {
				t.Fatalf("%d tools, want %d", len(defs), n)
			}
			for i, d := range defs {
				wantSchema := fmt.Sprintf(`{"properties":{"arg%d":{"maximum":%d,"type":"integer"}},"type":"object"}`, i, i)
				c, err := canonicalSchema(d.InputSchema)
				if d.Name != fmt.Sprintf("tool-%03d", i) || d.Description != fmt.Sprintf("Tool number %d.", i) || err != nil || string(c) != wantSchema {
					t.Fatalf("tool %d is %s %q %s, want tool-%03d with its description and %s", i, d.Name, d.Description, d.InputSchema, i, wantSchema)
				}
			}
			pages := 0
			for _, r := range rec.requests() {
				if r.rpc == "tools/list" && r.version == tt.era {
					pages++
				}
			}
			if want := (n + pageSize - 1) / pageSize; pages != want {
				t.Errorf("%d tools/list requests in %s, want %d", pages, tt.era, want)
			}
			if d := mustSet(t, sdkListing(t, url)).Digest(); d != mustSet(t, defs).Digest() {
				t.Errorf("List's set %s, the SDK client's %s", mustSet(t, defs).Digest(), d)
			}
			_, _, err = List(t.Context(), url, ListOptions{MaxPages: 10})
			if err == nil || !strings.Contains(err.Error(), "more than 10 pages") {
				t.Errorf("MaxPages 10: error %v, want more than 10 pages", err)
			}
		})
	}
}

// requireAuth answers 401, quoting the credential it got, unless the
// request carries want.
func requireAuth(want string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != want {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "credential %q refused", got)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TestListAuthorization lists servers that want a credential, in both
// eras: with ListOptions.Authorization every request carries it; without
// it, or with a wrong one, the error says 401 and holds no credential.
func TestListAuthorization(t *testing.T) {
	const token = "Bearer s3cret-token-0123456789"
	for _, era := range []string{testserver.EraBoth, testserver.Era2025} {
		t.Run(era, func(t *testing.T) {
			rec := &recorder{next: requireAuth(token, newTestserver(t, &testserver.Options{Era: era}).Handler())}
			url := serve(t, rec)
			defs, _, err := List(t.Context(), url, ListOptions{Authorization: token})
			if err != nil {
				t.Fatalf("with the credential: %v", err)
			}
			if len(defs) < 8 {
				t.Errorf("%d tools, want at least 8", len(defs))
			}
			for _, r := range rec.requests() {
				if r.auth != token {
					t.Errorf("%s %s sent Authorization %q", r.method, r.rpc, r.auth)
				}
			}
			for _, auth := range []string{"", "Bearer wrong-secret-9876543210", "wrong-secret-9876543210"} {
				_, _, err := List(t.Context(), url, ListOptions{Authorization: auth})
				if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), url) {
					t.Errorf("Authorization %q: error %v, want a 401 naming %s", auth, err, url)
					continue
				}
				if strings.Contains(err.Error(), "wrong-secret") || strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error holds the credential: %v", err)
				}
			}
		})
	}
}

// TestListRedactsCut checks that a credential cut off by an excerpt does
// not leak its beginning either.
func TestListRedactsCut(t *testing.T) {
	token := "Bearer " + strings.Repeat("k", 40) + "secret-end"
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		// The credential straddles the excerpt's end.
		io.WriteString(w, strings.Repeat("x", maxExcerpt-20)+r.Header.Get("Authorization"))
	})
	_, _, err := List(t.Context(), serve(t, h), ListOptions{Authorization: token})
	if err == nil || strings.Contains(err.Error(), "kkkk") || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error %v, want the cut credential redacted", err)
	}
}

// TestListFailures lists servers that answer wrong: each is an error that
// names the URL and says what was wrong.
func TestListFailures(t *testing.T) {
	jsonAnswer := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		}
	}
	many := make([]string, maxTools+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"name":"t%d"}`, i)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/mcp"
	closed.Close()
	tests := []struct {
		name string
		h    http.Handler // nil: url is used as it is
		url  string
		want []string
	}{
		{"500", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}), "", []string{"HTTP 500", "boom"}},
		{"garbage JSON", jsonAnswer("garbage{"), "", []string{"not a JSON-RPC message", "garbage"}},
		{"HTML", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>hello</html>")
		}), "", []string{`"text/html"`, "neither JSON nor an event stream"}},
		{"JSON-RPC error", jsonAnswer(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"database down"}}`), "",
			[]string{"-32603", "database down"}},
		{"another response", jsonAnswer(`{"jsonrpc":"2.0","id":7,"result":{}}`), "", []string{"not the response to request 1"}},
		{"no tools", jsonAnswer(`{"jsonrpc":"2.0","id":1,"result":{}}`), "", []string{"has no tools"}},
		{"bad tool", jsonAnswer(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":3}]}}`), "", []string{"tools[0]"}},
		{"too many tools", jsonAnswer(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + strings.Join(many, ",") + `]}}`), "",
			[]string{"more than 10000 tools"}},
		{"too large", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			pad := bytes.Repeat([]byte(" "), 1<<20)
			for range 17 {
				if _, err := w.Write(pad); err != nil {
					return
				}
			}
		}), "", []string{"larger than 16 MiB"}},
		{"stream without the response", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
		}), "", []string{"ended without the response"}},
		{"cursor loop", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var m struct {
				ID int `json:"id"`
			}
			json.NewDecoder(r.Body).Decode(&m)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"tools":[],"nextCursor":"again"}}`, m.ID)
		}), "", []string{"page 2", "same nextCursor twice"}},
		{"refused in both eras", http.NotFoundHandler(), "", []string{"refused era 2026-07-28 (HTTP 404", "era 2025-11-25: initialize: HTTP 404"}},
		{"connection refused", nil, closedURL, []string{"connection refused"}},
		{"not http", nil, "ftp://127.0.0.1/mcp", []string{"scheme must be http or https"}},
		{"no host", nil, "http:///mcp", []string{"has no host"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if tt.h != nil {
				url = serve(t, tt.h)
			}
			_, _, err := List(t.Context(), url, ListOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range append(tt.want, url) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestListEventStream reads a JSON-RPC response from an event stream in
// which notifications, a comment and another id come first.
func TestListEventStream(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": keep-alive\n\n"+
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"+
			"data: {\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{\"tools\":[]}}\n\n"+
			"id: 5\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\r\ndata: \"result\":{\"tools\":[{\"name\":\"only\",\"title\":\"Only\"}]}}\r\n\r\n")
	})
	defs, era, err := List(t.Context(), serve(t, h), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if era != "2026-07-28" || len(defs) != 1 || defs[0].Name != "only" || defs[0].Title != "Only" {
		t.Errorf("got %+v in era %s, want the tool only in 2026-07-28", defs, era)
	}
}

// TestListRefusedByJSONRPC falls back to 2025-11-25 when the refusal of
// the 2026-07-28 era comes as a JSON-RPC error in a 200 answer: the
// version unsupported, or a session required.
func TestListRefusedByJSONRPC(t *testing.T) {
	for _, refusal := range []string{
		`{"code":-32022,"message":"unsupported protocol version"}`,
		`{"code":-32600,"message":"Bad Request: No valid session ID provided"}`,
		`{"code":-32000,"message":"Server not initialized"}`,
	} {
		ts := newTestserver(t, &testserver.Options{Era: testserver.Era2025}).Handler()
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Protocol-Version") == "2026-07-28" {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"error":%s}`, refusal)
				return
			}
			ts.ServeHTTP(w, r)
		})
		defs, era, err := List(t.Context(), serve(t, h), ListOptions{})
		if err != nil || era != "2025-11-25" || len(defs) < 8 {
			t.Errorf("refused with %s: %d tools in era %q, error %v; want the tools in 2025-11-25", refusal, len(defs), era, err)
		}
	}
}

// canonicalSchema re-encodes a schema with sorted keys and no space.
func canonicalSchema(raw json.RawMessage) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

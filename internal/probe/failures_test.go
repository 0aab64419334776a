package probe

import (
	"context"
	"errors"
	"fmt"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// refusedURL returns an endpoint on a loopback port nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	return "http://" + testproc.RefusedAddr(t) + "/mcp" // held, never listening: refused for the whole test
}

// fakeServer serves h on loopback and returns its /mcp endpoint.
func fakeServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// hang answers nothing until the client goes away. It reads the body
// first: only then does the server notice a closed connection.
func hang(_ http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// TestFailuresAreCountedNotFatal runs against endpoints that fail in
// different ways: every request is counted as an error of the right kind,
// and the run itself succeeds.
func TestFailuresAreCountedNotFatal(t *testing.T) {
	// A second for the requests that answer, which a loaded machine may
	// take a good part of; the hang is the one that times out.
	tests := []struct {
		name     string
		endpoint func(t *testing.T) string
		kind     string
		timeout  time.Duration
	}{
		{"unreachable", refusedURL, "connect", time.Second},
		{"http 502", func(t *testing.T) string {
			return fakeServer(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no upstream", http.StatusBadGateway) })
		}, "http 502", time.Second},
		{"json-rpc error", func(t *testing.T) string {
			return fakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, rpcErrJSON)
			})
		}, "json-rpc -32602", time.Second},
		{"tool error", func(t *testing.T) string {
			return fakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "event: message\ndata: "+toolErrJSON+"\n\n")
			})
		}, "tool error", time.Second},
		{"timeout", func(t *testing.T) string {
			return fakeServer(t, hang)
		}, "timeout", 200 * time.Millisecond},
		{"not mcp", func(t *testing.T) string {
			return fakeServer(t, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "<html>hello</html>") })
		}, "bad answer", time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(t.Context(), &Options{URL: tt.endpoint(t), Identities: 4, Requests: 2, Timeout: tt.timeout})
			if err != nil {
				t.Fatalf("Run: %v, want the failures counted", err)
			}
			s := Summarize(res.Observations)
			if s.Errors != 8 || s.ErrorIdentities != 4 || s.Requests != 8 {
				t.Errorf("errors %d in %d identities of %d requests; want all 8 in 4", s.Errors, s.ErrorIdentities, s.Requests)
			}
			if len(res.Failures) != 1 || res.Failures[0].Kind != tt.kind || res.Failures[0].Count != 8 || res.Failures[0].Example == "" {
				t.Errorf("failures %+v, want 8 of kind %q with an example", res.Failures, tt.kind)
			}
			if err := s.ExpectSticky(); !errors.Is(err, ErrNotSticky) {
				t.Errorf("ExpectSticky() = %v, want ErrNotSticky", err)
			}
		})
	}
}

// TestRequestsAreStatelessWhoamiCalls checks the request a balancer sees:
// method, headers, a bearer token per identity, and the body.
func TestRequestsAreStatelessWhoamiCalls(t *testing.T) {
	var mu sync.Mutex
	tokens := make(map[string]int)
	endpoint := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		want := map[string]string{
			"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "whoami",
		}
		for k, v := range want {
			if got := r.Header.Get(k); got != v {
				http.Error(w, fmt.Sprintf("%s: %q", k, got), http.StatusBadRequest)
				return
			}
		}
		if r.Method != http.MethodPost || !strings.Contains(string(body), `"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`) {
			http.Error(w, "bad request "+string(body), http.StatusBadRequest)
			return
		}
		mu.Lock()
		tokens[r.Header.Get("Authorization")]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, okJSON) // a JSON answer, as some servers send
	})
	res, err := Run(t.Context(), &Options{URL: endpoint, Identities: 3, Requests: 2, TokenPrefix: "tok-"})
	if err != nil {
		t.Fatal(err)
	}
	if s := Summarize(res.Observations); s.Errors != 0 || s.Stickiness != 1 {
		t.Fatalf("errors %d, stickiness %v; failures %+v", s.Errors, s.Stickiness, res.Failures)
	}
	want := map[string]int{"Bearer tok-0": 2, "Bearer tok-1": 2, "Bearer tok-2": 2}
	if diff := cmp.Diff(want, tokens); diff != "" {
		t.Errorf("tokens sent (-want +got):\n%s", diff)
	}
}

// TestCancelStopsTheRun cancels a run against a server that never answers:
// Run returns promptly with the partial result, and the requests cut off
// are not counted as failures of the balancer.
func TestCancelStopsTheRun(t *testing.T) {
	var arrived atomic.Int32
	endpoint := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		hang(w, r)
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for arrived.Load() < 4 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	res, err := Run(ctx, &Options{URL: endpoint, Identities: 1000, Requests: 1000, Concurrency: 4, Timeout: time.Minute})
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("Run = %v, %v; want a partial result and context.Canceled", res, err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Run took %v after cancel", elapsed)
	}
	if !res.Interrupted() || res.Done != 0 || Summarize(res.Observations).Errors != 0 {
		t.Errorf("interrupted %v, done %d, errors %d; want interrupted, nothing counted", res.Interrupted(), res.Done, Summarize(res.Observations).Errors)
	}
}

// TestProgress checks that progress is reported, never backwards, and
// ends at the total.
func TestProgress(t *testing.T) {
	endpoint := fakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(2 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, okJSON)
	})
	var calls [][2]int
	_, err := Run(t.Context(), &Options{URL: endpoint, Identities: 50, Requests: 10, Concurrency: 2,
		Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) < 2 {
		t.Fatalf("progress called %d times over a run of 500 slow requests, want several", len(calls))
	}
	for i, c := range calls {
		if c[1] != 500 || (i > 0 && c[0] < calls[i-1][0]) {
			t.Fatalf("progress calls %v: want total 500, never backwards", calls)
		}
	}
	if last := calls[len(calls)-1]; last[0] != 500 {
		t.Errorf("last progress %v, want 500 of 500", last)
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := "http://127.0.0.1:1/mcp"
	tests := []struct {
		name string
		opts *Options
		want string // "" for valid
	}{
		{"defaults", &Options{URL: ok}, ""},
		{"nil", nil, "URL is required"},
		{"no url", &Options{}, "url: required"},
		{"relative url", &Options{URL: "/mcp"}, "scheme"},
		{"ftp", &Options{URL: "ftp://host/mcp"}, "scheme"},
		{"no host", &Options{URL: "http:///mcp"}, "no host"},
		{"too many identities", &Options{URL: ok, Identities: MaxIdentities + 1}, "identities"},
		{"negative requests", &Options{URL: ok, Requests: -1}, "requests"},
		{"too many requests", &Options{URL: ok, Requests: MaxRequests + 1}, "requests"},
		{"too many in total", &Options{URL: ok, Identities: 100_000, Requests: 11}, "at most 1000000"},
		{"most in total", &Options{URL: ok, Identities: 100_000, Requests: 10}, ""},
		{"concurrency", &Options{URL: ok, Concurrency: MaxConcurrency + 1}, "concurrency"},
		{"timeout", &Options{URL: ok, Timeout: -time.Second}, "timeout"},
		{"prefix with space", &Options{URL: ok, TokenPrefix: "a b"}, "token prefix"},
		{"host", &Options{URL: ok, Host: "mcp.internal.example"}, ""},
		{"host and port", &Options{URL: ok, Host: "mcp.internal.example:8443"}, ""},
		{"host with a path", &Options{URL: ok, Host: "a.example/x"}, "want a host name"},
		{"host with a user", &Options{URL: ok, Host: "u@a.example"}, "want a host name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestPasswordsStayOutOfTheResult probes a URL with a password: neither
// the result's URL nor its failure examples repeat it.
func TestPasswordsStayOutOfTheResult(t *testing.T) {
	u := strings.Replace(refusedURL(t), "http://", "http://user:s3cret@", 1)
	res, err := Run(t.Context(), &Options{URL: u, Identities: 1, Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := NewReport(res, nil).WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "s3cret") {
		t.Errorf("report repeats the password:\n%s", out.String())
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	res, err := Run(t.Context(), &Options{URL: "ftp://x/"})
	if err == nil || res != nil {
		t.Errorf("Run(ftp URL) = %v, %v; want no result and an error", res, err)
	}
}

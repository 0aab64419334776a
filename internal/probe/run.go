package probe

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Headers of the 2026-07-28 era of the Streamable HTTP transport: the
// protocol version on every request, and the method and name mirrored from
// the body (SEP-2243).
const (
	protocolVersion = "2026-07-28"
	headerVersion   = "Mcp-Protocol-Version"
	headerMethod    = "Mcp-Method"
	headerName      = "Mcp-Name"
	maxAnswer       = 4 << 20 // bytes read of one answer, at most
)

// StatusError reports an HTTP answer other than 200 OK.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
}

// Error returns the status.
func (e *StatusError) Error() string {
	return fmt.Sprintf("http status %d %s", e.Code, http.StatusText(e.Code))
}

// Failure groups the failed requests of one kind.
type Failure struct {
	// Kind names the failure: "timeout", "connect", "transport",
	// "http 502", "json-rpc -32602", "tool error" or "bad answer".
	Kind string `json:"kind"`
	// Count is the number of requests that failed this way.
	Count int `json:"count"`
	// Example is the first such error's message.
	Example string `json:"example"`
}

// Result is what a run observed.
type Result struct {
	// URL, Identities, Requests, Concurrency and TokenPrefix are the run's
	// parameters, defaults applied; a password in URL is redacted.
	URL         string
	Identities  int
	Requests    int
	Concurrency int
	TokenPrefix string
	// Started is when the run began, and Elapsed how long it took.
	Started time.Time
	Elapsed time.Duration
	// Done counts the requests made, answered or failed. It is short of
	// Identities*Requests only when the run was interrupted.
	Done int
	// Observations holds what identity i saw at index i.
	Observations []Observation
	// Failures groups the failed requests by kind, most frequent first.
	Failures []Failure
}

// Interrupted reports whether the run stopped before making every request.
func (r *Result) Interrupted() bool { return r.Done < r.Identities*r.Requests }

// Run calls whoami as opts.Identities identities, opts.Requests times each,
// with opts.Concurrency requests in flight. Failed requests are counted in
// the result, never returned as errors. Run returns an error for invalid
// options, and, with the partial result, when ctx ends before the last
// request.
func Run(ctx context.Context, opts *Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("validating probe options: %w", err)
	}
	o := opts.withDefaults()
	if o.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = o.Concurrency
		defer tr.CloseIdleConnections()
		o.Client = &http.Client{Transport: tr}
	}
	p := &prober{opts: o, total: o.Identities * o.Requests, obs: make([]Observation, o.Identities), failures: make(map[string]*Failure)}
	start := time.Now()
	stop := p.watch()
	var wg sync.WaitGroup
	for range min(o.Concurrency, p.total) {
		wg.Go(func() { p.work(ctx) })
	}
	wg.Wait()
	stop()
	res := p.result(start)
	if err := ctx.Err(); err != nil && res.Interrupted() {
		return res, fmt.Errorf("probing %s: interrupted after %d of %d requests: %w", o.URL, res.Done, p.total, err)
	}
	return res, nil
}

// prober is the state of one run.
type prober struct {
	opts  Options
	total int
	next  atomic.Int64 // the next request to make, from 0 to total
	done  atomic.Int64 // requests made, answered or failed

	mu       sync.Mutex // guards obs and failures
	obs      []Observation
	failures map[string]*Failure
}

// work makes requests until all are taken or ctx ends. Request k is call
// k/Identities of identity k%Identities, so every identity's calls spread
// over the run rather than coming in a burst.
func (p *prober) work(ctx context.Context) {
	for ctx.Err() == nil {
		k := int(p.next.Add(1) - 1)
		if k >= p.total {
			return
		}
		id := k % p.opts.Identities
		replica, err := p.call(ctx, id, k+1)
		if err != nil && ctx.Err() != nil {
			return // cut off by the end of the run, not a failure of the balancer
		}
		p.record(id, replica, err)
		p.done.Add(1)
	}
}

// call makes one whoami call as identity id, with JSON-RPC id seq, and
// returns the name of the replica that answered.
func (p *prober) call(ctx context.Context, id, seq int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.opts.URL, bytes.NewReader(callBody(seq)))
	if err != nil {
		return "", fmt.Errorf("building request: %w", err)
	}
	if p.opts.Host != "" {
		req.Host = p.opts.Host
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Authorization", "Bearer "+p.opts.TokenPrefix+strconv.Itoa(id))
	h.Set(headerVersion, protocolVersion)
	h.Set(headerMethod, "tools/call")
	h.Set(headerName, "whoami")
	resp, err := p.opts.Client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // to reuse the connection
		return "", &StatusError{Code: resp.StatusCode}
	}
	return ParseAnswer(resp.Header.Get("Content-Type"), io.LimitReader(resp.Body, maxAnswer))
}

// callBody returns the body of a stateless whoami call (SEP-2575: the
// protocol version and client capabilities travel in _meta).
func callBody(seq int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"whoami","arguments":{},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		seq, protocolVersion)
}

// record counts the outcome of one request of identity id.
func (p *prober) record(id int, replica string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.obs[id].record(replica)
		return
	}
	p.obs[id].Errors++
	kind := failureKind(err)
	f := p.failures[kind]
	if f == nil {
		f = &Failure{Kind: kind, Example: err.Error()}
		p.failures[kind] = f
	}
	f.Count++
}

// failureKind sorts a failed request into a few kinds a reader can act on.
func failureKind(err error) string {
	var status *StatusError
	var rpc *RPCError
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.As(err, &status):
		return "http " + strconv.Itoa(status.Code)
	case errors.As(err, &rpc):
		return "json-rpc " + strconv.FormatInt(rpc.Code, 10)
	case errors.Is(err, ErrToolError):
		return "tool error"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return "connect"
	case errors.Is(err, ErrNoResponse), errors.Is(err, ErrNoText):
		return "bad answer"
	case errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "transport"
	}
	return "bad answer"
}

// watch calls the Progress option every ProgressInterval from a goroutine
// of its own, until the returned stop is called; stop waits for it to end
// and reports the final count.
func (p *prober) watch() (stop func()) {
	if p.opts.Progress == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				p.opts.Progress(int(p.done.Load()), p.total)
			}
		}
	})
	return func() {
		close(quit)
		wg.Wait()
		p.opts.Progress(int(p.done.Load()), p.total)
	}
}

// result returns the run's result; the workers must be done.
func (p *prober) result(start time.Time) *Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	fs := make([]Failure, 0, len(p.failures))
	for _, f := range slices.Sorted(maps.Keys(p.failures)) {
		fs = append(fs, *p.failures[f])
	}
	slices.SortStableFunc(fs, func(a, b Failure) int { return cmp.Compare(b.Count, a.Count) })
	shown := p.opts.URL
	if u, err := url.Parse(shown); err == nil {
		shown = u.Redacted() // a password in the URL is a credential
	}
	return &Result{
		URL:          shown,
		Identities:   p.opts.Identities,
		Requests:     p.opts.Requests,
		Concurrency:  p.opts.Concurrency,
		TokenPrefix:  p.opts.TokenPrefix,
		Started:      start,
		Elapsed:      time.Since(start),
		Done:         int(p.done.Load()),
		Observations: p.obs,
		Failures:     fs,
	}
}

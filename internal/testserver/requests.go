package testserver

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerRequest carries, on the request handed to the SDK, the token that
// links a JSON-RPC request back to the HTTP request that carried it (the SDK
// gives method handlers the HTTP request's headers as RequestExtra.Header).
// Any value the client sent is overwritten.
const headerRequest = "Mcpfleet-Request"

// requests links the JSON-RPC requests the SDK hands to method handlers to
// the /mcp HTTP requests that carried them, for what the SDK does not give
// handlers: the response writer, whose keep-alives a handler arms, and the
// HTTP request's context. The zero value links without keep-alives.
type requests struct {
	keepAlive time.Duration // Options.KeepAlive; 0: responses are not wrapped

	mu      sync.Mutex              // guards next and byToken
	next    uint64                  // last token handed out
	byToken map[string]*httpRequest // the requests being served
}

// httpRequest is what a method handler may use of its HTTP request.
type httpRequest struct {
	ctx context.Context // the HTTP request's context
	w   *sseWriter      // its response writer; nil without keep-alives
}

// wrap returns next, which sees each request with its token, and with
// keep-alive comments on its SSE responses when q.keepAlive is positive.
func (q *requests) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hr := &httpRequest{ctx: r.Context()}
		if q.keepAlive > 0 {
			hr.w = newSSEWriter(w, q.keepAlive)
			defer hr.w.close()
			w = hr.w
		}
		token := q.add(hr)
		defer q.remove(token)
		r = r.Clone(r.Context()) // handlers must not change the request they are given
		r.Header.Set(headerRequest, token)
		next.ServeHTTP(w, r)
	})
}

// add registers hr and returns its token.
func (q *requests) add(hr *httpRequest) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.byToken == nil {
		q.byToken = make(map[string]*httpRequest)
	}
	q.next++
	token := strconv.FormatUint(q.next, 10)
	q.byToken[token] = hr
	return token
}

// remove forgets the request of token.
func (q *requests) remove(token string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.byToken, token)
}

// of returns the HTTP request that carried req, or nil when q is nil or req
// came some other way.
func (q *requests) of(req mcp.Request) *httpRequest {
	if q == nil {
		return nil
	}
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.byToken[extra.Header.Get(headerRequest)]
}

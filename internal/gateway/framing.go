package gateway

import (
	"net/http"
	"slices"
)

// CloseAfterChunked wraps a handler served by net/http's server (serve's
// server: std): every answer to an HTTP/1.x request whose body came
// chunked says Connection: close, so the server ends the connection after
// it. net/http reads a few framings more leniently than internal/h1 does
// (Content-Length together with Transfer-Encoding read as chunked, a bare
// LF ending the trailers); whatever follows such a body on the same
// connection, a request a stricter hop in front saw as body bytes, is then
// never read as a request of its own. RFC 9112 section 6.1 asks a server
// to close after a message with both fields. Chunked uploads lose
// keep-alive; MCP clients send a Content-Length.
func CloseAfterChunked(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 1 && slices.Contains(r.TransferEncoding, "chunked") {
			w = &closingWriter{ResponseWriter: w}
		}
		h.ServeHTTP(w, r)
	})
}

// closingWriter sets Connection: close as the answer's header goes out,
// after the handler set (and the relay cleaned) its fields.
type closingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (c *closingWriter) WriteHeader(code int) {
	if !c.wrote && code >= 200 {
		c.wrote = true
		c.Header().Set("Connection", "close")
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *closingWriter) Write(p []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.NewResponseController reach the server's writer
// (flushes, deadlines).
func (c *closingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

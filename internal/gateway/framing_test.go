package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestCloseAfterChunked: behind net/http's server, an answer to a chunked
// request says Connection: close and the connection ends; one to a request
// with a Content-Length keeps it.
func TestCloseAfterChunked(t *testing.T) {
	f := newFrontOn("std", CloseAfterChunked(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Connection", "keep-alive") // a relay may copy anything; close wins
		io.WriteString(w, "ok")
	})))
	t.Cleanup(f.Close)
	for _, tc := range []struct {
		framing string
		closes  bool
	}{
		{"Content-Length: 2\r\n\r\nhi", false},
		{"Transfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", true},
	} {
		c, err := net.Dial("tcp", strings.TrimPrefix(f.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\n%s", tc.framing)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close != tc.closes {
			t.Errorf("%.20q: Connection close = %v, want %v", tc.framing, resp.Close, tc.closes)
		}
		c.Close()
	}
}

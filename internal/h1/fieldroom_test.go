package h1

import (
	"bufio"
	"net/http"
	"net/textproto"
	"reflect"
	"strings"
	"testing"
)

// roomHead is a header section with values of every kind: common ones
// (no bytes), short ones, a long one that no room holds, a repeated field
// and an empty value.
const roomHead = "Host: gw.example:8443\r\n" +
	"Content-Type: application/json\r\n" +
	"Authorization: Bearer " + "eyJhbGciOiJFUzI1NiJ9." + "abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789" + "\r\n" +
	"Mcp-Name: echo\r\n" +
	"X-Empty:\r\n" +
	"Set-Cookie: a=1\r\n" +
	"Set-Cookie: b=2\r\n" +
	"Content-Length: 160\r\n\r\n"

// TestReadFieldsRoom: whatever the room holds (nothing, a few bytes, a few
// values, plenty), the header is the one net/textproto reads.
func TestReadFieldsRoom(t *testing.T) {
	want, err := textproto.NewReader(bufio.NewReader(strings.NewReader(roomHead))).ReadMIMEHeader()
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []struct{ vals, raw int }{{0, 0}, {2, 8}, {8, 0}, {0, 40}, {10, 88}, {16, 512}} {
		room := roomFor(make([]string, size.vals), make([]byte, size.raw))
		budget := MaxHeadBytes
		got, err := readFields(bufio.NewReader(strings.NewReader(roomHead)), &budget, &room)
		if err != nil {
			t.Fatalf("room %+v: %v", size, err)
		}
		if !reflect.DeepEqual(got, http.Header(want)) {
			t.Errorf("room %+v: header\n%q\nwant\n%q", size, got, want)
		}
	}
}

// TestFieldRoomWriteOnce: a second head read into the same room (an
// interim answer, then the final one) leaves the first one's values as
// they were, and an append to a value does not reach its neighbour.
func TestFieldRoomWriteOnce(t *testing.T) {
	var f answerFields
	room := f.room()
	read := func(s string) http.Header {
		t.Helper()
		budget := MaxHeadBytes
		h, err := readFields(bufio.NewReader(strings.NewReader(s)), &budget, &room)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	first := read("Link: </a.css>\r\nX-A: one\r\n\r\n")
	second := read("Link: </b.css>\r\nX-A: two\r\nDate: Mon, 01 Dec 2025 02:16:00 GMT\r\n\r\n")
	second.Add("Link", "</c.css>")
	want := http.Header{"Link": {"</a.css>"}, "X-A": {"one"}}
	if !reflect.DeepEqual(first, want) {
		t.Errorf("first head after the second: %q, want %q", first, want)
	}
	if got := second.Get("X-A"); got != "two" {
		t.Errorf("second head's X-A after an Add to Link: %q", got)
	}
}

// TestServerValuesOutliveTheirRequest: values a handler keeps stay what the
// client sent while later requests on the connection are read.
func TestServerValuesOutliveTheirRequest(t *testing.T) {
	t.Parallel()
	kept := make(chan http.Header, 4)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		kept <- r.Header
	})
	c := srvDial(t, st.addr)
	for _, tok := range []string{"tok-1", "tok-22", "tok-333", strings.Repeat("x", 300)} {
		c.send("GET / HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer " + tok + "\r\nX-Id: " + tok + "\r\n\r\n")
		c.response(http.MethodGet)
	}
	for _, tok := range []string{"tok-1", "tok-22", "tok-333", strings.Repeat("x", 300)} {
		h := srvRecv(t, kept, "a request's header")
		if h.Get("Authorization") != "Bearer "+tok || h.Get("X-Id") != tok {
			t.Errorf("kept header %q, want the token %.10s", h, tok)
		}
	}
}

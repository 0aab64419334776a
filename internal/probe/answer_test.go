package probe

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

const (
	okJSON      = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"r1"}]}}`
	sseType     = "text/event-stream"
	jsonType    = "application/json"
	rpcErrJSON  = `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool"}}`
	toolErrJSON = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}`
	notifyJSON  = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`
)

// answerCases are ParseAnswer's table, and the fuzz target's seeds.
var answerCases = []struct {
	name        string
	contentType string
	body        string
	want        string
	wantErr     error // checked with errors.Is; nil with wantAnyErr false means success
	wantAnyErr  bool
}{
	{name: "json", contentType: jsonType, body: okJSON, want: "r1"},
	{name: "json with charset", contentType: "application/json; charset=utf-8", body: " \n" + okJSON + "\n", want: "r1"},
	{name: "sse", contentType: sseType, body: "event: message\ndata: " + okJSON + "\n\n", want: "r1"},
	{name: "sse without event type", contentType: sseType, body: "data: " + okJSON + "\n\n", want: "r1"},
	{name: "sse without space after colon", contentType: sseType, body: "data:" + okJSON + "\n\n", want: "r1"},
	{
		name: "sse with keep-alive, priming event and notification", contentType: sseType,
		body: ": keep-alive\n\nid: 0\ndata:\n\nevent: message\ndata: " + notifyJSON + "\n\n: keep-alive\n\nid: 1\nevent: message\ndata: " + okJSON + "\n\n",
		want: "r1",
	},
	{name: "sse with crlf", contentType: sseType, body: "event: message\r\ndata: " + okJSON + "\r\n\r\n", want: "r1"},
	{
		name: "sse with data over lines", contentType: sseType,
		body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\ndata: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"r2\"}]}}\n\n",
		want: "r2",
	},
	{name: "sse other event type skipped", contentType: sseType, body: "event: ping\ndata: " + okJSON + "\n\n", wantErr: ErrNoResponse},
	{name: "sse unterminated last event", contentType: sseType, body: "event: message\ndata: " + okJSON, want: "r1"},
	{name: "sse empty", contentType: sseType, body: "", wantErr: ErrNoResponse},
	{name: "sse only comments", contentType: sseType, body: ": keep-alive\n\n: keep-alive\n\n", wantErr: ErrNoResponse},
	{name: "json empty", contentType: jsonType, body: "", wantErr: ErrNoResponse},
	{name: "json-rpc error", contentType: jsonType, body: rpcErrJSON, wantErr: &RPCError{}},
	{name: "json-rpc error in sse", contentType: sseType, body: "data: " + rpcErrJSON + "\n\n", wantErr: &RPCError{}},
	{name: "tool error", contentType: jsonType, body: toolErrJSON, wantErr: ErrToolError},
	{name: "no content", contentType: jsonType, body: `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, wantErr: ErrNoText},
	{name: "image content", contentType: jsonType, body: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"image","data":"AA=="}]}}`, wantErr: ErrNoText},
	{name: "empty text", contentType: jsonType, body: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""}]}}`, wantErr: ErrNoText},
	{name: "notification only", contentType: jsonType, body: notifyJSON, wantErr: ErrNoResponse},
	{name: "null result", contentType: jsonType, body: `{"jsonrpc":"2.0","id":1,"result":null}`, wantErr: ErrNoResponse},
	{name: "garbage json", contentType: jsonType, body: "{nope", wantAnyErr: true},
	{name: "result not an object", contentType: jsonType, body: `{"jsonrpc":"2.0","id":1,"result":7}`, wantAnyErr: true},
	{name: "no content type, json", contentType: "", body: "\n" + okJSON, want: "r1"},
	{name: "no content type, sse", contentType: "", body: "event: message\ndata: " + okJSON + "\n\n", want: "r1"},
	{name: "html error page", contentType: "text/html", body: "<html>bad gateway</html>", wantAnyErr: true},
}

func TestParseAnswer(t *testing.T) {
	for _, tt := range answerCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAnswer(tt.contentType, strings.NewReader(tt.body))
			switch {
			case tt.wantErr != nil || tt.wantAnyErr:
				if err == nil || (tt.wantErr != nil && !errorIs(err, tt.wantErr)) {
					t.Fatalf("ParseAnswer() = %q, %v; want error %v", got, err, tt.wantErr)
				}
			case err != nil || got != tt.want:
				t.Fatalf("ParseAnswer() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// errorIs is errors.Is, except that a *RPCError target matches any
// *RPCError.
func errorIs(err, target error) bool {
	if _, ok := target.(*RPCError); ok {
		var rpc *RPCError
		return errors.As(err, &rpc)
	}
	return errors.Is(err, target)
}

// TestParseAnswerStopsAtResponse checks that a stream held open after its
// response does not hold ParseAnswer.
func TestParseAnswerStopsAtResponse(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		_, _ = io.WriteString(pw, ": keep-alive\n\nevent: message\ndata: "+okJSON+"\n\n")
	}()
	done := make(chan string, 1)
	go func() {
		name, _ := ParseAnswer(sseType, pr)
		done <- name
	}()
	select {
	case name := <-done:
		if name != "r1" {
			t.Errorf("ParseAnswer() = %q, want r1", name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ParseAnswer still reading after the response event")
	}
}

// TestParseAnswerBounds checks that a line longer than the bound is an
// error, not an unbounded read.
func TestParseAnswerBounds(t *testing.T) {
	long := "data: " + strings.Repeat("x", maxLine+1) + "\n\n"
	if _, err := ParseAnswer(sseType, strings.NewReader(long)); err == nil {
		t.Error("ParseAnswer(long sse line) succeeded, want error")
	}
	huge := `{"a":"` + strings.Repeat("x", maxLine) + `"}`
	if _, err := ParseAnswer(jsonType, strings.NewReader(huge)); err == nil {
		t.Error("ParseAnswer(huge json) succeeded, want error")
	}
}

// FuzzParseAnswer checks that ParseAnswer never panics, that success
// always names a replica, and that a one-line JSON answer means the same
// whether sent as JSON or as one SSE event.
func FuzzParseAnswer(f *testing.F) {
	for _, tt := range answerCases {
		f.Add(tt.contentType, []byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		name, err := ParseAnswer(contentType, bytes.NewReader(body))
		if err == nil && name == "" {
			t.Fatalf("ParseAnswer(%q, %q) succeeded with no name", contentType, body)
		}
		if bytes.ContainsAny(body, "\r\n") {
			return
		}
		jName, jErr := ParseAnswer(jsonType, bytes.NewReader(body))
		sName, sErr := ParseAnswer(sseType, strings.NewReader("event: message\ndata: "+string(body)+"\n\n"))
		if jName != sName || errText(jErr) != errText(sErr) {
			t.Fatalf("body %q: as JSON %q, %v; as SSE %q, %v", body, jName, jErr, sName, sErr)
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

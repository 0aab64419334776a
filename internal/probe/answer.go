package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
)

// Errors ParseAnswer reports for answers that name no replica.
var (
	// ErrNoResponse reports an answer with no JSON-RPC response in it: an
	// empty body, or an SSE stream that ended before its response event.
	ErrNoResponse = errors.New("answer holds no JSON-RPC response")
	// ErrNoText reports a successful result whose first content is not a
	// non-empty text item, so it names no replica.
	ErrNoText = errors.New("result has no text content naming a replica")
	// ErrToolError reports a result with isError set: the tool failed.
	ErrToolError = errors.New("tool returned an error result")
)

// RPCError is a JSON-RPC error response (JSON-RPC 2.0 §5.1).
type RPCError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// Error returns the code and message.
func (e *RPCError) Error() string {
	return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message)
}

// response is the part of a JSON-RPC message ParseAnswer reads.
type response struct {
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

// callResult is the part of a tools/call result ParseAnswer reads.
type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// maxLine bounds one line of an SSE answer, and a whole JSON answer.
const maxLine = 1 << 20

// ParseAnswer returns the replica name in the answer to a whoami
// tools/call: the text of result.content[0]. The body is read as Server-Sent
// Events when contentType says text/event-stream and as one JSON object
// otherwise; an answer without a usable Content-Type is sniffed.
//
// The SSE reading is tolerant, as a probe of unknown balancers must be:
// comment lines (": keep-alive"), events of other types, priming events with
// empty data (Streamable HTTP, 2025-11-25 §Resumability) and notifications
// before the response are skipped. The first JSON-RPC response wins, and
// ParseAnswer stops reading there, so a stream left open after it does not
// hold the probe.
func ParseAnswer(contentType string, body io.Reader) (string, error) {
	br := bufio.NewReader(body)
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = sniff(br)
	}
	if mt == "text/event-stream" {
		return parseEvents(br)
	}
	b, err := io.ReadAll(io.LimitReader(br, maxLine+1))
	if err != nil {
		return "", fmt.Errorf("reading answer: %w", err)
	}
	if len(b) > maxLine {
		return "", fmt.Errorf("reading answer: longer than %d bytes", maxLine)
	}
	return parseMessage(bytes.TrimSpace(b))
}

// sniff guesses the media type of a body sent without a usable
// Content-Type: a JSON object starts with '{'.
func sniff(br *bufio.Reader) string {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return "application/json" // empty: ErrNoResponse either way
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.ReadByte()
		case '{':
			return "application/json"
		default:
			return "text/event-stream"
		}
	}
}

// events splits an SSE stream into the data of its message events (WHATWG
// HTML, "Event stream interpretation"). An event left unterminated at the
// end of the stream is still dispatched.
type events struct {
	sc    *bufio.Scanner
	event string   // the current event's type
	data  []string // the current event's data lines
}

// next returns the data of the next message event with non-empty data, or
// io.EOF at the end of the stream.
func (e *events) next() (string, error) {
	for e.sc.Scan() {
		line := e.sc.Text()
		if line == "" {
			if payload, ok := e.dispatch(); ok {
				return payload, nil
			}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			e.event = value
		case "data":
			e.data = append(e.data, value)
		}
	}
	if err := e.sc.Err(); err != nil {
		return "", fmt.Errorf("reading event stream: %w", err)
	}
	if payload, ok := e.dispatch(); ok {
		return payload, nil
	}
	return "", io.EOF
}

// dispatch ends the current event and returns its data if it is a message
// event with non-empty data.
func (e *events) dispatch() (string, bool) {
	event, data := e.event, e.data
	e.event, e.data = "", nil
	if event != "" && event != "message" {
		return "", false
	}
	payload := strings.TrimSpace(strings.Join(data, "\n"))
	return payload, payload != ""
}

// parseEvents reads an SSE body up to the first event that carries a
// JSON-RPC response, and parses it.
func parseEvents(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	e := &events{sc: sc}
	for {
		payload, err := e.next()
		if errors.Is(err, io.EOF) {
			return "", ErrNoResponse
		}
		if err != nil {
			return "", err
		}
		name, err := parseMessage([]byte(payload))
		if !errors.Is(err, ErrNoResponse) {
			return name, err
		}
	}
}

// parseMessage parses one JSON-RPC message. A message that is not a
// response (a notification or a request) is ErrNoResponse.
func parseMessage(b []byte) (string, error) {
	if len(b) == 0 {
		return "", ErrNoResponse
	}
	var r response
	if err := json.Unmarshal(b, &r); err != nil {
		return "", fmt.Errorf("decoding json-rpc message: %w", err)
	}
	if r.Error != nil {
		return "", r.Error
	}
	if r.Method != "" || len(r.Result) == 0 || string(r.Result) == "null" {
		return "", ErrNoResponse
	}
	var res callResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return "", fmt.Errorf("decoding tools/call result: %w", err)
	}
	if res.IsError {
		return "", ErrToolError
	}
	if len(res.Content) == 0 || res.Content[0].Type != "text" || res.Content[0].Text == "" {
		return "", ErrNoText
	}
	return res.Content[0].Text, nil
}

package sse

import "bytes"

// Event is the parsed form of one event block: what a client would dispatch.
type Event struct {
	ID    string
	HasID bool
	Type  string // the "event" field; "" means "message"
	Data  []byte // data lines joined by LF
	Retry string
	// Comment reports a block of comments only (keep-alives), which
	// dispatches nothing.
	Comment bool
}

// Parse reads one event block (as Reader.Next returns it) following the
// field rules of the WHATWG event-stream format: "field: value" with one
// optional space after the colon; lines starting with a colon are comments.
func Parse(block []byte) Event {
	var ev Event
	var hasData, hasField bool
	for len(block) > 0 {
		var line []byte
		line, block, _ = bytes.Cut(block, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 || line[0] == ':' {
			continue
		}
		hasField = true
		name, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(name) {
		case "id":
			if bytes.IndexByte(value, 0) < 0 { // an id with NUL is ignored
				ev.ID, ev.HasID = string(value), true
			}
		case "event":
			ev.Type = string(value)
		case "data":
			if hasData {
				ev.Data = append(ev.Data, '\n')
			}
			ev.Data = append(ev.Data, value...)
			hasData = true
		case "retry":
			ev.Retry = string(value)
		}
	}
	ev.Comment = !hasField
	return ev
}

package gateway

import (
	"bytes"
	"strconv"
	"sync"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/sse"
)

// A replica lost mid-call (docs/GATEWAY.md, "A replica lost mid-call").
// When a replica's answer ends, its stream or its connection, before the
// final response of a request the gateway relays, nobody will ever answer
// that request: the replica is gone (killed, crashed, its host lost), and
// the gateway never sends a delivered request again unless running it twice
// is safe. A client would wait for its own timeout. So the gateway answers
// each such request itself, with the error replicaLost makes, where the
// client waits for it: on the stream it holds (an event, sealed and kept
// like the replica's, so that a resume finds it too), or as the JSON answer
// when nothing was sent yet; then the stream ends. supergateway does the
// same for the calls of a stdio child that dies.

// replicaLost is the gateway's answer to a request whose replica went away
// before its final response (mcpmsg.ReplicaLost): stdio children get the
// same one.
func replicaLost(replica string, mayHaveRun bool) *mcpmsg.Error {
	return mcpmsg.ReplicaLost(replica, mayHaveRun)
}

// lostBody is the JSON answer of lost calls: e for the request's id, or for
// a batch an array with one error response per request in it (JSON-RPC
// 2.0, "Batch"). A batch of notifications alone, or a request without an
// id, gets one error with a null id.
func lostBody(e *mcpmsg.Error, ids [][]byte, batch bool) []byte {
	if !batch || len(ids) == 0 {
		var id []byte
		if len(ids) > 0 {
			id = ids[0]
		}
		return e.AppendResponse(nil, id)
	}
	b := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = bytes.TrimSuffix(e.AppendResponse(b, id), []byte{'\n'})
	}
	return append(b, "]\n"...)
}

// lostEvents are the SSE events of lost calls: one message event with e
// for each id.
func lostEvents(e *mcpmsg.Error, ids [][]byte) [][]byte {
	evs := make([][]byte, len(ids))
	for i, id := range ids {
		evs[i] = jsonEvent(e.AppendResponse(nil, id))
	}
	return evs
}

// requestIDs returns the ids of the requests a POST carries: its own, or
// those of the requests in its batch; none for notifications, responses
// and other methods.
func requestIDs(q *request) [][]byte {
	if q == nil || q.msg.Kind != mcpmsg.KindRequest {
		return nil
	}
	if !q.msg.Batch {
		return [][]byte{q.msg.ID}
	}
	var ids [][]byte
	for i := range q.batch {
		if q.batch[i].Kind == mcpmsg.KindRequest {
			ids = append(ids, q.batch[i].ID)
		}
	}
	return ids
}

// maxCalls bounds the calls followed on one relayed answer: a 2024-11-05
// session's stream takes every call POSTed to it, and a client could POST
// calls that its replica never answers. Calls past the bound are not
// followed, and so not answered if the replica goes.
const maxCalls = 1024

// calls are the requests waiting for their final response on one answer
// the gateway relays: a POST's, or a 2024-11-05 session's stream.
type calls struct {
	mu  sync.Mutex // guards ids
	ids [][]byte   // raw JSON ids, in the order the requests came
}

// callsOf returns the calls of a POST's answer; nil when it carries no
// request.
func callsOf(q *request) *calls {
	ids := requestIDs(q)
	if len(ids) == 0 {
		return nil
	}
	return &calls{ids: ids}
}

// add follows a request; false when maxCalls are followed already.
func (c *calls) add(id []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ids) >= maxCalls {
		return false
	}
	c.ids = append(c.ids, id)
	return true
}

// drop stops following a request (one of its ids, if a client reused it).
func (c *calls) drop(id []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
}

func (c *calls) dropLocked(id []byte) {
	for i, w := range c.ids {
		if sameID(w, id) {
			c.ids = append(c.ids[:i], c.ids[i+1:]...)
			return
		}
	}
}

// waiting reports whether any request still waits for its final response.
func (c *calls) waiting() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids) > 0
}

// see notes the final responses an event of the relayed answer carries.
// Most events are notifications (progress, logs), passed over on a glance
// at the raw bytes.
func (c *calls) see(block []byte) {
	if !bytes.Contains(block, []byte(`"result"`)) && !bytes.Contains(block, []byte(`"error"`)) {
		return
	}
	answered := answeredIDs(sse.Parse(block).Data)
	if len(answered) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range answered {
		c.dropLocked(id)
	}
}

// take returns the requests still waiting and stops following them.
func (c *calls) take() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.ids
	c.ids = nil
	return ids
}

// answeredIDs returns the ids of the JSON-RPC responses in msg: one
// response, or a batch of them (JSON-RPC 2.0, "Batch").
func answeredIDs(msg []byte) [][]byte {
	m, err := mcpmsg.Parse(msg)
	switch {
	case err != nil:
		return nil
	case !m.Batch:
		if m.Kind == mcpmsg.KindResponse {
			return [][]byte{m.ID}
		}
		return nil
	}
	all, err := mcpmsg.SplitBatch(msg, 0)
	if err != nil {
		return nil
	}
	var ids [][]byte
	for i := range all {
		if all[i].Kind == mcpmsg.KindResponse {
			ids = append(ids, all[i].ID)
		}
	}
	return ids
}

// sameID reports whether two raw JSON-RPC ids are the same id: the same
// bytes, or numbers of the same value (a server may write 1.0 back as 1).
func sameID(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if len(a) == 0 || len(b) == 0 || a[0] == '"' || b[0] == '"' {
		return false
	}
	x, errA := strconv.ParseFloat(string(a), 64)
	y, errB := strconv.ParseFloat(string(b), 64)
	return errA == nil && errB == nil && x == y
}

package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/sse"
)

// Lists filtered per caller (docs/GATEWAY.md, "Authorization"): a
// tools/list, prompts/list, resources/list or resources/templates/list
// answer leaves out the entries whose use the rules would deny this
// caller, so that a model never sees a tool it cannot call. Each entry is
// put to the rules as the operation that uses it: tools/call with its
// name, prompts/get with its name, resources/read with its uri (or uri
// template). What the replicas said is what the cache keeps and the tool
// watcher reads; only the copy on its way to this client is filtered.

// listOp is how a list's entries are used.
type listOp struct {
	member string // the result's member that holds the entries
	method string // the operation an entry is put to
}

var listOps = map[string]listOp{
	"tools/list":               {"tools", "tools/call"},
	"prompts/list":             {"prompts", "prompts/get"},
	"resources/list":           {"resources", "resources/read"},
	"resources/templates/list": {"resourceTemplates", "resources/read"},
}

// filtersList reports whether a request's answer is a list to filter.
func filtersList(q *request) bool {
	if q.policy == nil || q.msg.Batch {
		return false
	}
	_, ok := listOps[q.msg.Method]
	return ok
}

// listEntry is what names an entry of a list.
type listEntry struct {
	Name        string `json:"name"`
	URI         string `json:"uri"`
	URITemplate string `json:"uriTemplate"`
}

// filterList returns msg, the answer to a list request, without the
// entries the caller may not use; msg itself when it keeps them all, or is
// not a result of that list (an error, a notification).
func (g *Gateway) filterList(q *request, msg []byte) []byte {
	op, ok := listOps[q.msg.Method]
	if !ok || q.policy == nil || !mcpmsg.IsResponseTo(msg, q.msg.ID) {
		return msg
	}
	var top, result map[string]json.RawMessage
	var entries []json.RawMessage
	if json.Unmarshal(msg, &top) != nil || json.Unmarshal(top["result"], &result) != nil ||
		json.Unmarshal(result[op.member], &entries) != nil {
		return msg
	}
	in := *q.authz
	kept := make([]json.RawMessage, 0, len(entries))
	for _, e := range entries {
		var le listEntry
		if json.Unmarshal(e, &le) != nil {
			continue // an entry that names nothing is no entry this caller may use
		}
		name := le.Name
		if op.method == "resources/read" {
			name = le.URI
			if q.msg.Method == "resources/templates/list" {
				name = le.URITemplate
			}
		}
		in.MCP = g.operation(q, op.method, name)
		if q.policy.Decide(&in).Allowed {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(entries) {
		return msg
	}
	var err error
	if result[op.member], err = json.Marshal(kept); err != nil {
		return msg
	}
	if top["result"], err = json.Marshal(result); err != nil {
		return msg
	}
	out, err := json.Marshal(top)
	if err != nil {
		return msg
	}
	return append(out, '\n')
}

// filterEvent is filterList for one SSE event block: the block as it is,
// or the filtered message as an event with the block's own id.
func (g *Gateway) filterEvent(q *request, block []byte) []byte {
	ev := sse.Parse(block)
	if ev.Comment || len(ev.Data) == 0 {
		return block
	}
	out := g.filterList(q, ev.Data)
	if bytes.Equal(out, ev.Data) {
		return block
	}
	var b []byte
	if ev.HasID {
		b = append(b, "id: "...)
		b = append(b, ev.ID...)
		b = append(b, '\n')
	}
	return append(b, jsonEvent(out)...)
}

// maxList bounds a JSON list answer the gateway reads whole to filter it.
const maxList = 16 << 20

// readList reads the rest of a JSON answer after its first bytes; err is
// io.EOF once it is all read.
func (g *Gateway) readList(body io.Reader, first []byte, ferr error) ([]byte, error) {
	all := append([]byte(nil), first...)
	if ferr != nil {
		return all, ferr
	}
	rest, err := io.ReadAll(io.LimitReader(body, maxList))
	all = append(all, rest...)
	if err != nil {
		return all, err
	}
	if len(rest) == maxList {
		return all, errListTooLarge
	}
	return all, io.EOF
}

// errListTooLarge is a list answer over maxList: relayed unread past it,
// it would be relayed unfiltered, so it is cut.
var errListTooLarge = errors.New("list answer over 16 MiB")

// relayList writes a whole list answer, filtered, with the replica's
// headers.
func (g *Gateway) relayList(w http.ResponseWriter, q *request, resp *http.Response, rec *record, msg []byte) {
	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = vv
	}
	removeHop(h)
	h.Set("Content-Length", strconv.Itoa(len(msg)))
	rec.status, rec.upstreamStatus = resp.StatusCode, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	cw := newClientWriter(w, g.opts.WriteTimeout)
	n, err := cw.Write(msg)
	rec.bytes = int64(n)
	if err != nil {
		rec.clientGone = true
	}
}

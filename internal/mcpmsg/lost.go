package mcpmsg

import (
	"encoding/json"
	"strconv"
)

// statusBadGateway is HTTP 502, spelled here so that this package, which
// the decision packages import, brings no net/http along.
const statusBadGateway = 502

// LostMessage is the message of the replica_lost error.
const LostMessage = "the replica went away before the final response"

// ReplicaLost is the answer to a request whose replica went away before
// its final response (an HTTP replica whose answer ended, a stdio child
// that exited): -32603 (JSON-RPC 2.0, "Internal error") with data naming
// the reason, the replica, and whether the request may have run there
// (false only when it provably never reached the replica). Its status is
// the answer's when nothing was sent yet: 502, as a gateway whose upstream
// failed answers (RFC 9110 section 15.6.3).
func ReplicaLost(replica string, mayHaveRun bool) *Error {
	name, _ := json.Marshal(replica) // a string always marshals
	data := make([]byte, 0, 64+len(name))
	data = append(data, `{"reason":"replica_lost","replica":`...)
	data = append(data, name...)
	data = append(data, `,"may_have_run":`...)
	data = strconv.AppendBool(data, mayHaveRun)
	data = append(data, '}')
	return &Error{Status: statusBadGateway, Code: CodeInternalError, Message: LostMessage, Data: data}
}

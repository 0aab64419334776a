package mcpmsg

import "strconv"

// Outcome is what an answer says of how its request went: a JSON-RPC
// error's code, or a tool result's isError.
type Outcome struct {
	HasError bool  // the answer is a JSON-RPC error
	Code     int64 // its code
	IsError  bool  // result.isError: the tool ran and failed
}

// AnswerOutcome reads one JSON-RPC response object (an answer the gateway
// relays, bytes a replica controls) for its outcome. ok is false when body
// is not one response object; members other than result.isError and
// error.code are skipped unread. An error member makes it an error even
// beside a result; of duplicate members the last counts, as with
// encoding/json.
func AnswerOutcome(body []byte) (o Outcome, ok bool) {
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return Outcome{}, false
	}
	var answered bool
	end, err := eachMember(body, i, 1, func(key []byte, s, e int) error {
		switch string(key) {
		case "error":
			// An answer that carries an error is an error, whatever else
			// it holds; of two error members the last counts.
			answered = true
			if body[s] != '{' {
				return errSyntax
			}
			o.HasError, o.Code = true, 0
			_, err := eachMember(body[s:e], 0, 2, func(k []byte, cs, ce int) error {
				if string(k) != "code" {
					return nil
				}
				n, err := strconv.ParseInt(string(body[s+cs:s+ce]), 10, 64)
				if err != nil {
					return errSyntax
				}
				o.Code = n
				return nil
			})
			return err
		case "result":
			answered = true
			o.IsError = false
			if body[s] != '{' {
				return nil
			}
			_, err := eachMember(body[s:e], 0, 2, func(k []byte, rs, re int) error {
				if string(k) == "isError" {
					o.IsError = string(body[s+rs:s+re]) == "true"
				}
				return nil
			})
			return err
		}
		return nil
	})
	if err != nil || !answered || skipWS(body, end) != len(body) {
		return Outcome{}, false
	}
	return o, true
}

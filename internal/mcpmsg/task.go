package mcpmsg

import (
	"bytes"
	"strconv"
)

var resultTypeKey = []byte(`"resultType"`)

// ParseTaskResult reads a JSON-RPC response and, if its result creates a
// task of the tasks extension (SEP-2663: "resultType":"task" with the task's
// fields at the top level of the result), returns the task id and its ttlMs
// (0 when absent). It skips everything else unparsed.
func ParseTaskResult(body []byte) (taskID string, ttlMs int64, ok bool) {
	// Most answers create no task: one that names no resultType, and has
	// no escape that could spell it, is not read further.
	if bytes.IndexByte(body, '\\') < 0 && !bytes.Contains(body, resultTypeKey) {
		return "", 0, false
	}
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return "", 0, false
	}
	var result []byte
	_, err := eachMember(body, i, 1, func(key []byte, s, e int) error {
		if string(key) == "result" && body[s] == '{' {
			result = body[s:e]
		}
		return nil
	})
	if err != nil || result == nil {
		return "", 0, false
	}
	var isTask bool
	_, err = eachMember(result, 0, 2, func(key []byte, s, e int) error {
		v := result[s:e]
		switch string(key) {
		case "resultType":
			t, err := rawStringIf(v)
			isTask = err == nil && t == "task"
		case "taskId":
			if id, err := rawStringIf(v); err == nil {
				taskID = id
			}
		case "ttlMs":
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n > 0 {
				ttlMs = n
			}
		}
		return nil
	})
	if err != nil || !isTask || taskID == "" {
		return "", 0, false
	}
	return taskID, ttlMs, true
}

// rawStringIf decodes v if it is a JSON string.
func rawStringIf(v []byte) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		return "", errSyntax
	}
	return rawString(v)
}

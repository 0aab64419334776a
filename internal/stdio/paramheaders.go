package stdio

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// paramHeaderPrefix starts the header that mirrors a tool argument
// annotated with x-mcp-header (SEP-2243, "Custom headers").
const paramHeaderPrefix = "Mcp-Param-"

// The wrapper of a Base64-encoded Mcp-Param-* value (SEP-2243, "Value
// encoding").
const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// maxSafeInteger bounds the integers a JSON number carries exactly (IEEE
// 754 doubles), the only integers an Mcp-Param-* header may mirror.
const maxSafeInteger = 1<<53 - 1

// A paramBinding is one argument of a tool mirrored into a header: the
// path of property names to it in the arguments, and the header's name
// after paramHeaderPrefix.
type paramBinding struct {
	Path   []string
	Header string
}

// schemaProperty is what the bindings need of an input schema property.
type schemaProperty struct {
	XMCPHeader json.RawMessage           `json:"x-mcp-header"`
	Properties map[string]schemaProperty `json:"properties"`
}

// toolBindings returns the Mcp-Param-* bindings of each tool of a
// tools/list result, by tool name; a tool without any is left out.
func toolBindings(result json.RawMessage) (map[string][]paramBinding, error) {
	var r struct {
		Tools []struct {
			Name        string `json:"name"`
			InputSchema struct {
				Properties map[string]schemaProperty `json:"properties"`
			} `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, fmt.Errorf("decoding the child's tools: %w", err)
	}
	out := map[string][]paramBinding{}
	for _, t := range r.Tools {
		if bs := collectBindings(t.InputSchema.Properties, nil, nil); len(bs) > 0 {
			out[t.Name] = bs
		}
	}
	return out, nil
}

// collectBindings walks properties, at any depth, for x-mcp-header
// annotations (SEP-2243 allows them on nested properties).
func collectBindings(props map[string]schemaProperty, prefix []string, out []paramBinding) []paramBinding {
	for name, p := range props {
		path := append(append([]string(nil), prefix...), name)
		var header string
		if json.Unmarshal(p.XMCPHeader, &header) == nil && header != "" {
			out = append(out, paramBinding{Path: path, Header: header})
		}
		out = collectBindings(p.Properties, path, out)
	}
	return out
}

// checkParamHeaders returns why the Mcp-Param-* headers of a tools/call
// do not mirror its arguments (params) as bindings say they must, nil
// when they do: an argument that is present and not null needs its header,
// whose value (decoded when Base64-wrapped) equals the argument's; an
// absent or null argument must have none. These are the checks the Go
// SDK's HTTP server makes (SEP-2243, "Server validation"); the server
// answers a failure with 400 and -32020. The error names the header, never
// its value.
func checkParamHeaders(h http.Header, params json.RawMessage, bindings []paramBinding) error {
	var p struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil // the child refuses params it cannot read
	}
	for _, b := range bindings {
		name := paramHeaderPrefix + b.Header
		value := h.Get(name)
		arg, ok := lookupArgument(p.Arguments, b.Path)
		switch {
		case !ok || string(arg) == "null":
			if value != "" {
				return fmt.Errorf("header mismatch: unexpected %s header for absent or null parameter %q", name, strings.Join(b.Path, "."))
			}
			continue
		case value == "":
			return fmt.Errorf("header mismatch: missing %s header for parameter %q", name, strings.Join(b.Path, "."))
		}
		decoded, err := decodeParamHeader(value)
		if err != nil {
			return fmt.Errorf("header mismatch: %s header: %w", name, err)
		}
		body, ok := argumentString(arg)
		if !ok {
			return fmt.Errorf("header mismatch: %s header present but parameter %q is not a string, integer or boolean", name, strings.Join(b.Path, "."))
		}
		if !headerMatches(decoded, body, arg) {
			return fmt.Errorf("header mismatch: %s header does not match parameter %q", name, strings.Join(b.Path, "."))
		}
	}
	return nil
}

// lookupArgument returns the value at path in args.
func lookupArgument(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	if len(path) == 0 {
		return nil, false
	}
	v, ok := args[path[0]]
	for _, k := range path[1:] {
		if !ok {
			break
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return nil, false
		}
		v, ok = obj[k]
	}
	return v, ok
}

// errBase64 is a Base64-wrapped header value that does not decode.
var errBase64 = errors.New("invalid Base64 encoding")

// decodeParamHeader returns a header value as its argument's text: the
// standard Base64 (RFC 4648, padded) between =?base64? and ?= decoded, any
// other value as it is.
func decodeParamHeader(v string) (string, error) {
	inner, ok := strings.CutPrefix(v, base64Prefix)
	if ok {
		inner, ok = strings.CutSuffix(inner, base64Suffix)
	}
	if !ok {
		return v, nil
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", errBase64
	}
	return string(b), nil
}

// argumentString returns an argument as its header spells it: a string as
// it is, a boolean as true or false, an integer within the safe range in
// decimal; false for any other value (SEP-2243 mirrors only those).
func argumentString(arg json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(arg, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > maxSafeInteger {
			return "", false
		}
		return strconv.FormatInt(int64(v), 10), true
	}
	return "", false
}

// headerMatches reports whether a decoded header value mirrors an
// argument spelled body: equal text, or for a number the same integer
// however the header writes it (1e2 is 100), as the Go SDK compares them.
func headerMatches(header, body string, arg json.RawMessage) bool {
	if header == body {
		return true
	}
	if len(arg) == 0 || arg[0] == '"' || arg[0] == 't' || arg[0] == 'f' {
		return false
	}
	n, err := strconv.ParseFloat(header, 64)
	if err != nil || n != math.Trunc(n) || math.Abs(n) > maxSafeInteger {
		return false
	}
	return strconv.FormatInt(int64(n), 10) == body
}

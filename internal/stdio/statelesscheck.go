package stdio

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// JSON-RPC error codes of the 2026-07-28 era's refusals (SEP-2575) that
// the bridge gives itself, for a child that does not speak it.
const (
	codeMethodNotFound     = -32601
	codeInvalidParams      = -32602
	codeMissingCapability  = -32021
	codeUnsupportedVersion = -32022
)

// Members of a 2026-07-28 request's params._meta (SEP-2575).
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
)

// removedMethods are the methods the 2026-07-28 era has no more (SEP-2575):
// a server that no longer has a method answers 404 and -32601.
var removedMethods = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
}

// checkStateless returns how a 2026-07-28 server refuses a request before
// it serves it, nil when it may be served: the version in the
// Mcp-Protocol-Version header (header) and in params._meta must both be
// there and agree (400, -32020 or -32602), be one of supported (400,
// -32022, naming them), the client's capabilities must be declared (400,
// -32602), and the method must not be one the era removed (404, -32601).
// These are the checks the SDKs' HTTP servers make (SEP-2575); a child
// of an older version, served by translation, cannot make them.
func checkStateless(method string, body []byte, header string, supported []string) *mcpmsg.Error {
	meta := eraMetaOf(body)
	version := meta.version
	bad := func(code int, msg string) *mcpmsg.Error {
		return &mcpmsg.Error{Status: http.StatusBadRequest, Code: code, Message: msg}
	}
	switch {
	case header == "":
		return bad(mcpmsg.CodeHeaderMismatch, "the Mcp-Protocol-Version header is required for a request carrying "+metaProtocolVersion)
	case version == "":
		return bad(codeInvalidParams, "missing or invalid _meta field "+metaProtocolVersion)
	case version != header:
		return bad(mcpmsg.CodeHeaderMismatch, "the Mcp-Protocol-Version header "+header+" does not match the request's "+metaProtocolVersion+" "+version)
	case !slices.Contains(supported, version):
		e := bad(codeUnsupportedVersion, "protocol version "+version+" is not supported")
		e.Data, _ = json.Marshal(map[string]any{"supported": supported, "requested": version})
		return e
	case !meta.caps:
		return bad(codeInvalidParams, "missing or invalid _meta field "+metaClientCapabilities)
	case removedMethods[method]:
		return &mcpmsg.Error{Status: http.StatusNotFound, Code: codeMethodNotFound, Message: method + " is not a method of protocol version " + version}
	}
	return nil
}

// eraMeta is what a request's params._meta says of its era.
type eraMeta struct {
	version string // the protocol version it names; "" for none
	caps    bool   // it carries a client capabilities object
}

// eraMetaOf reads a request's params._meta as strictly as the mux reads
// a message (one scan, each member named once, names as written); the
// zero eraMeta when it has none, or the body does not parse.
func eraMetaOf(body []byte) eraMeta {
	f, err := parseFrame(body)
	if err != nil {
		return eraMeta{}
	}
	at, err := f.param("_meta")
	if err != nil || !at.present() || f.b[at.start] != '{' {
		return eraMeta{}
	}
	var m eraMeta
	meta := f.raw(at)
	err = mcpmsg.Members(meta, func(k []byte, s, e int) error {
		switch string(k) {
		case metaProtocolVersion:
			m.version, _ = mcpmsg.String(meta[s:e])
		case metaClientCapabilities:
			m.caps = meta[s] == '{'
		}
		return nil
	})
	if err != nil {
		return eraMeta{}
	}
	return m
}

// metaVersion returns the protocol version a request names in its
// params._meta; "" when it names none.
func metaVersion(body []byte) string { return eraMetaOf(body).version }

// statelessStatus is the HTTP status of a 2026-07-28 answer sent as JSON
// (SEP-2575): 404 for a method not found, 400 for invalid params, an
// unsupported version or a missing client capability, else 200.
func statelessStatus(msg []byte) int {
	f, err := parseFrame(msg)
	if err != nil {
		return http.StatusOK
	}
	at, err := memberOf(f.b, f.error, "code")
	code, aerr := strconv.Atoi(string(f.raw(at)))
	if err != nil || aerr != nil {
		return http.StatusOK
	}
	switch code {
	case codeMethodNotFound:
		return http.StatusNotFound
	case codeInvalidParams, codeUnsupportedVersion, codeMissingCapability:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

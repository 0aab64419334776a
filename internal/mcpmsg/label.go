package mcpmsg

// knownMethods are the MCP methods (both eras) that metrics name; any other
// method string counts as "other", so a client cannot grow label cardinality.
var knownMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true,
	"tools/list": true, "tools/call": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true,
	"completion/complete": true, "logging/setLevel": true,
	"subscriptions/listen": true,
	"tasks/get":            true, "tasks/result": true, "tasks/list": true, "tasks/cancel": true,
	"notifications/initialized": true, "notifications/cancelled": true,
	"notifications/progress": true, "notifications/roots/list_changed": true,
	"sampling/createMessage": true, "elicitation/create": true, "roots/list": true,
}

// MethodLabel returns method if it is a known MCP method, "response" for a
// body without one, and "other" for anything else.
func MethodLabel(method string) string {
	switch {
	case method == "":
		return "response"
	case knownMethods[method]:
		return method
	}
	return "other"
}

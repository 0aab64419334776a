package testserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test resources and their cache scopes (SEP-2549): the catalog and the
// items are the same for every caller, the profile depends on who asks.
const (
	// CatalogURI is a public resource: "catalog from REPLICA".
	CatalogURI = "mcpfleet://catalog"
	// ProfileURI is a private resource: "profile of CALLER from REPLICA",
	// where CALLER identifies the request's Authorization header (see
	// [CallerTag]).
	ProfileURI = "mcpfleet://profile"
	// ItemTemplate is a public resource template: reading
	// mcpfleet://item/ID answers "item ID from REPLICA".
	ItemTemplate = "mcpfleet://item/{id}"
)

// methodReadResource is the method whose requests [Gauge.Read] counts by URI.
const methodReadResource = "resources/read"

// itemPrefix is what ItemTemplate's URIs start with.
var itemPrefix = strings.TrimSuffix(ItemTemplate, "{id}")

// addResources registers the test resources and the resource template on
// the MCP server.
func (s *Server) addResources() {
	s.mcp.AddResource(&mcp.Resource{
		URI:         CatalogURI,
		Name:        "catalog",
		Description: "The same for every caller: names the replica. Public.",
		MIMEType:    "text/plain",
	}, s.catalog)
	s.mcp.AddResource(&mcp.Resource{
		URI:         ProfileURI,
		Name:        "profile",
		Description: "Depends on the caller's Authorization header: names a digest of it and the replica. Private.",
		MIMEType:    "text/plain",
	}, s.profile)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: ItemTemplate,
		Name:        "item",
		Description: "The same for every caller: names the item and the replica. Public.",
		MIMEType:    "text/plain",
	}, s.item)
}

// catalog reads CatalogURI.
func (s *Server) catalog(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return resourceText(req, scopePublic, "catalog from "+s.name), nil
}

// profile reads ProfileURI. Its text depends on the caller, so its result is
// private: a shared cache must not answer one caller with another's.
func (s *Server) profile(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	var auth string
	if req.Extra != nil {
		auth = req.Extra.Header.Get("Authorization")
	}
	return resourceText(req, scopePrivate, fmt.Sprintf("profile of %s from %s", CallerTag(auth), s.name)), nil
}

// item reads a URI of ItemTemplate.
func (s *Server) item(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	id, ok := strings.CutPrefix(req.Params.URI, itemPrefix)
	if !ok || id == "" {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	return resourceText(req, scopePublic, fmt.Sprintf("item %s from %s", id, s.name)), nil
}

// resourceText returns a result of scope whose only content is t.
func resourceText(req *mcp.ReadResourceRequest, scope, t string) *mcp.ReadResourceResult {
	return &mcp.ReadResourceResult{
		Cacheable: mcp.Cacheable{CacheScope: scope},
		Contents:  []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: t}},
	}
}

// CallerTag returns how mcpfleet://profile names the caller whose
// Authorization header is auth: the first 12 hex digits of its SHA-256, or
// "anonymous" when auth is empty. The raw header never appears.
func CallerTag(auth string) string {
	if auth == "" {
		return "anonymous"
	}
	sum := sha256.Sum256([]byte(auth))
	return hex.EncodeToString(sum[:])[:12]
}

// readURI returns the resource a resources/read request names, and "" for
// any other request.
func readURI(req mcp.Request) string {
	if r, ok := req.(*mcp.ReadResourceRequest); ok && r.Params != nil {
		return r.Params.URI
	}
	return ""
}

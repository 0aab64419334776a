package testserver

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallerTag checks how mcpfleet://profile names a caller.
func TestCallerTag(t *testing.T) {
	tests := []struct{ auth, want string }{
		{"", "anonymous"},
		{"abc", "ba7816bf8f01"}, // SHA-256("abc") = ba7816bf8f01cfea...
		{"Bearer abc", CallerTag("Bearer abc")},
	}
	for _, tt := range tests {
		t.Run(tt.auth, func(t *testing.T) {
			got := CallerTag(tt.auth)
			if got != tt.want {
				t.Errorf("CallerTag(%q) = %q, want %q", tt.auth, got, tt.want)
			}
			if tt.auth != "" && (len(got) != 12 || strings.Contains(got, tt.auth)) {
				t.Errorf("CallerTag(%q) = %q, want 12 hex digits that do not hold the header", tt.auth, got)
			}
		})
	}
}

// TestResourcesBothEras reads the resources through SDK clients of each
// era, as three callers, and checks their texts and, in the 2026-07-28 era,
// their cache scopes.
func TestResourcesBothEras(t *testing.T) {
	callers := []string{"Bearer alpha-secret", "Bearer beta-secret", ""}
	for _, version := range clientEras {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, base := startWith(t, "replica-r", &Options{CacheTTL: time.Minute})
			profiles := map[string]bool{}
			for _, auth := range callers {
				cs, err := dial(ctx, base, version, nil, &http.Client{Transport: withAuth{auth}})
				if err != nil {
					t.Fatalf("connecting as %q: %v", auth, err)
				}
				t.Cleanup(func() { _ = cs.Close() })
				reads := []struct{ uri, wantText, wantScope string }{
					{CatalogURI, "catalog from replica-r", "public"},
					{"mcpfleet://item/42", "item 42 from replica-r", "public"},
					{ProfileURI, "profile of " + CallerTag(auth) + " from replica-r", "private"},
				}
				for _, r := range reads {
					text, scope := readText(t, ctx, cs, r.uri)
					if text != r.wantText {
						t.Errorf("as %q, %s = %q, want %q", auth, r.uri, text, r.wantText)
					}
					if auth != "" && strings.Contains(text, strings.TrimPrefix(auth, "Bearer ")) {
						t.Errorf("as %q, %s = %q holds the raw credential", auth, r.uri, text)
					}
					if version == modernVersion && scope != r.wantScope {
						t.Errorf("as %q, %s cacheScope = %q, want %q", auth, r.uri, scope, r.wantScope)
					}
					if r.uri == ProfileURI {
						profiles[text] = true
					}
				}
			}
			if len(profiles) != len(callers) {
				t.Errorf("%d callers read %d distinct profiles, want %d: %v", len(callers), len(profiles), len(callers), profiles)
			}
		})
	}
}

// readText reads uri through cs and returns the text of its only content
// and its cacheScope.
func readText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, uri string) (string, string) {
	t.Helper()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("reading %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("reading %s: %d contents, want 1", uri, len(res.Contents))
	}
	return res.Contents[0].Text, res.CacheScope
}

// TestProfileRaw checks on the wire that the profile answers each
// Authorization header with its tag, privately, and never echoes it.
func TestProfileRaw(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, base := startWith(t, "replica-p", nil)
	for _, auth := range []string{"Bearer alpha-secret", "Bearer beta-secret", ""} {
		res, body := rawCall(t, ctx, base, "resources/read", map[string]any{"uri": ProfileURI}, auth)
		if auth != "" && strings.Contains(body, "secret") {
			t.Errorf("as %q, the answer holds the raw header: %s", auth, body)
		}
		if res["cacheScope"] != "private" {
			t.Errorf("as %q, cacheScope = %v, want private", auth, res["cacheScope"])
		}
		want := "profile of " + CallerTag(auth) + " from replica-p"
		if !strings.Contains(body, want) {
			t.Errorf("as %q, the answer lacks %q: %s", auth, want, body)
		}
	}
}

// TestListsAndPrompt checks what resources/list, resources/templates/list
// and prompts/list name, and the greet prompt, in each era.
func TestListsAndPrompt(t *testing.T) {
	for _, version := range clientEras {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, base := startServer(t, "replica-l", EraBoth)
			cs := connect(t, ctx, base, version, nil)
			resources, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatalf("ListResources: %v", err)
			}
			templates, err := cs.ListResourceTemplates(ctx, nil)
			if err != nil {
				t.Fatalf("ListResourceTemplates: %v", err)
			}
			prompts, err := cs.ListPrompts(ctx, nil)
			if err != nil {
				t.Fatalf("ListPrompts: %v", err)
			}
			got := map[string][]string{}
			for _, r := range resources.Resources {
				got["resources"] = append(got["resources"], r.URI)
			}
			for _, rt := range templates.ResourceTemplates {
				got["templates"] = append(got["templates"], rt.URITemplate)
			}
			for _, p := range prompts.Prompts {
				got["prompts"] = append(got["prompts"], p.Name)
			}
			slices.Sort(got["resources"])
			want := map[string][]string{
				"resources": {CatalogURI, ProfileURI},
				"templates": {ItemTemplate},
				"prompts":   {"greet"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("lists (-want +got):\n%s", diff)
			}
			checkGreet(t, ctx, cs)
		})
	}
}

// checkGreet gets the greet prompt with and without a name.
func checkGreet(t *testing.T, ctx context.Context, cs *mcp.ClientSession) {
	t.Helper()
	tests := []struct {
		args map[string]string
		want string
	}{
		{nil, "Greet world on behalf of replica-l."},
		{map[string]string{"name": "Ada"}, "Greet Ada on behalf of replica-l."},
	}
	for _, tt := range tests {
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: tt.args})
		if err != nil {
			t.Fatalf("GetPrompt(greet, %v): %v", tt.args, err)
		}
		if len(res.Messages) != 1 {
			t.Fatalf("greet %v: %d messages, want 1", tt.args, len(res.Messages))
		}
		if tc, ok := res.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != tt.want {
			t.Errorf("greet %v = %+v, want text %q", tt.args, res.Messages[0].Content, tt.want)
		}
	}
}

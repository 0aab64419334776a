package gateway

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/authz"
	"github.com/mcpfleet/mcpfleet/internal/identity"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// BenchmarkAuthorize is the authorization step of a verified caller's
// tools/call through no rules and through ten, none of which matches (the
// most a call pays): the difference is what the rules cost a call.
//
//	go test -run '^$' -bench Authorize -benchtime 200000x ./internal/gateway
func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{0, 10} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			fl, err := upstream.New([]upstream.Spec{{Name: "a", URL: "http://127.0.0.1:1/mcp"}})
			if err != nil {
				b.Fatal(err)
			}
			o := &Options{}
			if n > 0 {
				var rules []authz.Rule
				for i := range n {
					rules = append(rules, authz.Rule{Name: fmt.Sprintf("r%d", i), Effect: authz.Deny, Scopes: []string{"mcp:write"},
						Match: fmt.Sprintf(`mcp.tool == "tool%d" && !("mcp:write" in caller.scopes)`, i)})
				}
				if o.Authz, err = authz.Compile(rules, authz.Allow); err != nil {
					b.Fatal(err)
				}
			}
			gw, err := New(fl, nil, o)
			if err != nil {
				b.Fatal(err)
			}
			defer gw.Close()
			r := benchRequest("http://gw/mcp")
			w := httptest.NewRecorder()
			v := &identity.Verified{Issuer: "https://idp", Subject: "alice", Claims: map[string]any{"scope": "mcp:read", "sub": "alice"}}
			msg := mcpmsg.Message{Kind: mcpmsg.KindRequest, Method: "tools/call", Name: "echo", ID: []byte("1")}
			b.ReportAllocs()
			for b.Loop() {
				q := &request{msg: msg, era: mcpmsg.EraStateless, verified: v}
				if !gw.authorize(w, r, q, &record{}) {
					b.Fatal("denied")
				}
			}
		})
	}
}

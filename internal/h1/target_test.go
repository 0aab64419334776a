package h1

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseTargetIsParseRequestURIs checks that the server's reading of a
// request target is url.ParseRequestURI's, on the plain paths it reads
// itself and on the targets it hands over.
func TestParseTargetIsParseRequestURIs(t *testing.T) {
	for _, target := range []string{
		"/", "/mcp", "/a/b.c_d~e-f/", "/a/../b", "/mcp?x=1", "/m%63p", "/a b", "//host/x",
		"http://example.com/mcp", "*", "mcp", "", "/mcp#frag", "/ü", "/a;b",
	} {
		want, werr := url.ParseRequestURI(target)
		var got url.URL
		ok := parseTarget(target, &got)
		if ok != (werr == nil) {
			t.Errorf("%q: parsed %v, url.ParseRequestURI's error %v", target, ok, werr)
			continue
		}
		if ok {
			if diff := cmp.Diff(*want, got, cmp.AllowUnexported(url.URL{})); diff != "" {
				t.Errorf("%q: (-url.ParseRequestURI +parseTarget)\n%s", target, diff)
			}
		}
	}
}

// FuzzParseTarget compares parseTarget with url.ParseRequestURI on any
// target.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"/mcp", "/a/b", "/x?y", "http://h/p", "/%41"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		want, werr := url.ParseRequestURI(target)
		var got url.URL
		if ok := parseTarget(target, &got); ok != (werr == nil) {
			t.Fatalf("%q: parsed %v, url.ParseRequestURI's error %v", target, ok, werr)
		} else if ok {
			// By value: a target with userinfo has a *url.Userinfo of its
			// own in each.
			if diff := cmp.Diff(*want, got, cmp.AllowUnexported(url.URL{}, url.Userinfo{})); diff != "" {
				t.Fatalf("%q: (-url.ParseRequestURI +parseTarget)\n%s", target, diff)
			}
		}
	})
}

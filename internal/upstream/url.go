package upstream

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// severalForm is how several replicas are given: one URL each.
const severalForm = "--upstream http://a/mcp --upstream http://b/mcp"

// ParseURL checks that raw is one absolute http(s) URL with a host and no
// credentials, query, fragment, comma or whitespace, and returns it parsed.
// A comma or whitespace is most often two URLs in one string, a fragment
// or credentials a URL that was never meant for a replica: each is refused
// with the repeated-flag form in the message. An error quotes raw only when
// it cannot hold credentials.
func ParseURL(raw string) (*url.URL, error) {
	if i := strings.IndexFunc(raw, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }); i >= 0 {
		what := "a comma"
		if raw[i] != ',' {
			what = "whitespace"
		}
		return nil, fmt.Errorf("url %s holds %s: give one URL per replica (%s, or one upstreams[] entry each)",
			quoteSafe(raw), what, repeatedForm(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message quotes raw, credentials and all
		}
		return nil, fmt.Errorf("parsing url %s: %w", quoteSafe(raw), err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("url %q: scheme must be http or https", u.Redacted())
	case u.Host == "":
		return nil, fmt.Errorf("url %q: no host", u.Redacted())
	case u.User != nil:
		return nil, fmt.Errorf("url: credentials in a url are not allowed (a replica that needs them gets them from the caller's request); one plain URL per replica: %s", severalForm)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("url %q: a fragment is never sent to a server; one plain URL per replica: %s", u.Redacted(), severalForm)
	case u.RawQuery != "":
		return nil, fmt.Errorf("url %q: no query allowed", u.Redacted())
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return u, nil
}

// repeatedForm returns the flags that give the URLs of raw, split at its
// commas and whitespace, one each; the generic form when raw may hold
// credentials or splits into fewer than two.
func repeatedForm(raw string) string {
	parts := strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(parts) < 2 || strings.Contains(raw, "@") {
		return severalForm
	}
	return "--upstream " + strings.Join(parts, " --upstream ")
}

// quoteSafe quotes raw, or says "(not shown)" when it may hold
// credentials.
func quoteSafe(raw string) string {
	if strings.Contains(raw, "@") {
		return "(not shown: it may hold credentials)"
	}
	return fmt.Sprintf("%q", raw)
}

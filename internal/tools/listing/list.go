// Package listing lists a replica's tools over the network: tools/list,
// every page, in the replica's own era. It is the I/O half of package tools,
// kept apart so that the decisions there (and the simulator that drives
// them) depend on no network code.
package listing

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcpfleet/mcpfleet/internal/tools"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/sse"
)

// The protocol versions List speaks: the stateless era first, then the
// session era it falls back to.
const (
	version2026 = "2026-07-28"
	version2025 = "2025-11-25"
	// oldestVersion is the first revision with tools/list as List reads it;
	// a 2025-11-25 initialize may settle on any version from it on.
	oldestVersion = "2024-11-05"
)

// Bounds of one listing.
const (
	defaultListTimeout = 5 * time.Second
	defaultMaxPages    = 100
	maxAnswer          = 16 << 20 // bytes read of one answer, at most
	maxTools           = 10000    // tools of one replica, at most
	maxExcerpt         = 200      // bytes of a bad answer quoted in an error
)

// Headers of the Streamable HTTP transport (2025-11-25 and 2026-07-28).
const (
	headerVersion = "Mcp-Protocol-Version"
	headerSession = "Mcp-Session-Id"
	headerMethod  = "Mcp-Method"
)

// codeUnsupportedVersion is the JSON-RPC error of a server that does not
// serve the request's protocol version (2026-07-28, SEP-2575).
const codeUnsupportedVersion = -32022

// errAnswerTooLarge reports an answer longer than maxAnswer.
var errAnswerTooLarge = fmt.Errorf("answer larger than %d MiB", maxAnswer>>20)

// ListOptions configure List.
type ListOptions struct {
	// Client sends the requests; nil means a client with a 5 s timeout.
	Client *http.Client
	// Authorization, when not "", is sent as the Authorization header
	// (tools.probe_authorization_file: servers that want a credential to list tools).
	Authorization string
	// MaxPages bounds pagination; 0 means 100.
	MaxPages int
}

// List returns every tool the MCP endpoint at url declares (tools/list, every page, following nextCursor)
// and the era it answered in ("2026-07-28" or "2025-11-25").
//
// It asks in the 2026-07-28 era first: stateless tools/list requests, the
// protocol version in each one's _meta. A replica that refuses that era (HTTP
// 400, 404 or 405, or a JSON-RPC error that the version is unsupported or
// that a session is required) is asked in the 2025-11-25 era: initialize,
// notifications/initialized, tools/list in the session, and DELETE of the
// session. The era then returned is the version the session settled on:
// 2025-11-25, or an earlier one the server chose. Answers are read as JSON
// or as an event stream, each at most 16 MiB, and a replica may declare at
// most 10,000 tools. No error holds the Authorization value.
func List(ctx context.Context, url string, o ListOptions) ([]tools.Definition, string, error) {
	defs, era, err := list(ctx, url, o)
	if err != nil {
		return nil, "", redact(err, o.Authorization)
	}
	return defs, era, nil
}

func list(ctx context.Context, rawURL string, o ListOptions) ([]tools.Definition, string, error) {
	u, err := url.Parse(rawURL)
	switch {
	case err != nil:
		// url.Error quotes the URL, password and all: only its reason.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, "", fmt.Errorf("listing tools: the URL does not parse: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, "", fmt.Errorf("listing tools of %s: scheme must be http or https", u.Redacted())
	case u.Host == "":
		return nil, "", fmt.Errorf("listing tools of %s: the URL has no host", u.Redacted())
	case strings.ContainsFunc(o.Authorization, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return nil, "", fmt.Errorf("listing tools of %s: the Authorization value holds a line break or a control character", u.Redacted())
	case o.MaxPages < 0:
		return nil, "", fmt.Errorf("listing tools of %s: MaxPages %d is negative", u.Redacted(), o.MaxPages)
	}
	l := &lister{url: rawURL, auth: o.Authorization, client: o.Client, maxPages: cmp.Or(o.MaxPages, defaultMaxPages)}
	if l.client == nil {
		l.client = &http.Client{
			Timeout: defaultListTimeout,
			// A redirected POST turns into a GET, and the credential
			// does not follow it to another host: neither lists tools.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	defs, err := l.pages(ctx, version2026, "")
	if err == nil {
		return defs, version2026, nil
	}
	refused, ok := errors.AsType[*eraRefused](err)
	if !ok {
		return nil, "", fmt.Errorf("listing tools of %s (era %s): %w", u.Redacted(), version2026, err)
	}
	defs, version, err := l.session(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("listing tools of %s: it refused era %s (%v); era %s: %w", u.Redacted(), version2026, refused.err, version2025, err)
	}
	return defs, version, nil
}

// lister lists one endpoint.
type lister struct {
	url      string
	auth     string
	client   *http.Client
	maxPages int
	id       int // of the last request sent
}

// eraRefused reports a replica that does not serve the 2026-07-28 era.
type eraRefused struct{ err error }

func (e *eraRefused) Error() string { return "era refused: " + e.err.Error() }
func (e *eraRefused) Unwrap() error { return e.err }

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("json-rpc error %d %q", e.Code, excerpt([]byte(e.Message)))
}

// statusError is an HTTP answer other than 2xx. rpc is the JSON-RPC error
// its body held, if any; body is an excerpt of it otherwise.
type statusError struct {
	code int
	rpc  *rpcError
	body string
}

func (e *statusError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.code, http.StatusText(e.code))
	switch {
	case e.rpc != nil:
		s += ": " + e.rpc.Error()
	case e.body != "":
		s += fmt.Sprintf(": %q", e.body)
	}
	return s
}

// pages lists every page of tools/list in version, in session (or none):
// each request is stateless in 2026-07-28. A refusal of the era on the
// first page is an *eraRefused.
func (l *lister) pages(ctx context.Context, version, session string) ([]tools.Definition, error) {
	var defs []tools.Definition
	cursor := ""
	seen := map[string]bool{}
	for page := 1; ; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		if version == version2026 {
			params["_meta"] = map[string]any{
				"io.modelcontextprotocol/protocolVersion":    version2026,
				"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			}
		}
		raw, _, err := l.call(ctx, "tools/list", params, version, session)
		if err != nil {
			if page == 1 && version == version2026 && refusesEra(err) {
				return nil, &eraRefused{err}
			}
			return nil, fmt.Errorf("tools/list page %d: %w", page, err)
		}
		var res struct {
			Tools      *[]json.RawMessage `json:"tools"`
			NextCursor string             `json:"nextCursor"`
			ResultType string             `json:"resultType"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("tools/list page %d: result: %w", page, err)
		}
		switch {
		case res.ResultType != "" && res.ResultType != "complete":
			return nil, fmt.Errorf("tools/list page %d: result type %q, want complete", page, excerpt([]byte(res.ResultType)))
		case res.Tools == nil:
			return nil, fmt.Errorf("tools/list page %d: the result has no tools", page)
		case len(defs)+len(*res.Tools) > maxTools:
			return nil, fmt.Errorf("tools/list page %d: more than %d tools", page, maxTools)
		}
		for i, t := range *res.Tools {
			var d tools.Definition
			if err := json.Unmarshal(t, &d); err != nil {
				return nil, fmt.Errorf("tools/list page %d: tools[%d]: %w", page, i, err)
			}
			defs = append(defs, d)
		}
		if res.NextCursor == "" {
			return defs, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("tools/list page %d: the server sent the same nextCursor twice", page)
		}
		if page >= l.maxPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", l.maxPages)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
}

// refusesEra reports an answer to a 2026-07-28 request that says the
// server does not serve that era: HTTP 400, 404 or 405 (a server of the
// session era wants initialize first, or serves no stateless POST), or a
// JSON-RPC error that the version is unsupported or that a session (an
// initialize) is required.
func refusesEra(err error) bool {
	rpc, isRPC := errors.AsType[*rpcError](err)
	if se, ok := errors.AsType[*statusError](err); ok {
		switch se.code {
		case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
			return true
		}
		rpc, isRPC = se.rpc, se.rpc != nil
	}
	if !isRPC {
		return false
	}
	m := strings.ToLower(rpc.Message)
	return rpc.Code == codeUnsupportedVersion || strings.Contains(m, "session") || strings.Contains(m, "initializ")
}

// session lists in the 2025-11-25 era: initialize, notifications/initialized,
// every page of tools/list in the session, then DELETE of it, best effort.
// It returns the version the server settled on.
func (l *lister) session(ctx context.Context) ([]tools.Definition, string, error) {
	raw, hdr, err := l.call(ctx, "initialize", map[string]any{
		"protocolVersion": version2025,
		"clientInfo":      map[string]any{"name": "mcpfleet-tools", "version": "1"},
		"capabilities":    map[string]any{},
	}, "", "")
	if err != nil {
		return nil, "", fmt.Errorf("initialize: %w", err)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(raw, &init); err != nil {
		return nil, "", fmt.Errorf("initialize: result: %w", err)
	}
	version := init.ProtocolVersion
	if !isDate(version) || version < oldestVersion || version >= version2026 {
		return nil, "", fmt.Errorf("initialize: the server chose protocol version %q, not one of %s to %s", excerpt([]byte(version)), oldestVersion, version2025)
	}
	session := hdr.Get(headerSession)
	if strings.ContainsFunc(session, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return nil, "", errors.New("initialize: the session ID holds characters other than visible ASCII")
	}
	if session != "" {
		defer l.end(ctx, version, session)
	}
	if err := l.notify(ctx, "notifications/initialized", version, session); err != nil {
		return nil, "", fmt.Errorf("notifications/initialized: %w", err)
	}
	defs, err := l.pages(ctx, version, session)
	if err != nil {
		return nil, "", err
	}
	return defs, version, nil
}

// isDate reports a version of the form YYYY-MM-DD, which compare as strings.
func isDate(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i, c := range []byte(v) {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// end deletes the session, best effort: for at most a second, even once
// ctx is done, and whatever the answer.
func (l *lister) end(ctx context.Context, version, session string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	req, err := l.request(ctx, http.MethodDelete, nil, version, session)
	if err != nil {
		return
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// request builds a request to the endpoint with the headers every one
// carries.
func (l *lister) request(ctx context.Context, method string, body []byte, version, session string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, l.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("User-Agent", "mcpfleet-tools")
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	if version != "" {
		h.Set(headerVersion, version)
	}
	if session != "" {
		h.Set(headerSession, session)
	}
	if l.auth != "" {
		h.Set("Authorization", l.auth)
	}
	return req, nil
}

// notify sends a notification; any 2xx answer is its acceptance.
func (l *lister) notify(ctx context.Context, method, version, session string) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	if err != nil {
		return err
	}
	req, err := l.request(ctx, http.MethodPost, body, version, session)
	if err != nil {
		return err
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return transportError(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode/100 != 2 {
		return answerStatus(resp.StatusCode, b)
	}
	return nil
}

// call sends one request and returns the result of its answer and the
// answer's headers. version is sent as Mcp-Protocol-Version unless "", and
// in 2026-07-28 the method as Mcp-Method too.
func (l *lister) call(ctx context.Context, method string, params map[string]any, version, session string) (json.RawMessage, http.Header, error) {
	l.id++
	id := l.id
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, nil, err
	}
	req, err := l.request(ctx, http.MethodPost, body, version, session)
	if err != nil {
		return nil, nil, err
	}
	if version == version2026 {
		req.Header.Set(headerMethod, method)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, nil, transportError(err)
	}
	defer resp.Body.Close()
	r := &boundedReader{r: resp.Body, left: maxAnswer}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(r)
		return nil, nil, answerStatus(resp.StatusCode, b)
	}
	raw, err := readAnswer(resp.Header.Get("Content-Type"), r, strconv.Itoa(id))
	if err != nil {
		return nil, nil, err
	}
	return raw, resp.Header, nil
}

// transportError drops the method and URL that the client's *url.Error
// adds: the listing's error names the URL once.
func transportError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// message is one JSON-RPC message as List reads it.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

// readAnswer reads the response to the request of id from a JSON body or
// an event stream, in which it skips the server's notifications and
// requests.
func readAnswer(contentType string, body io.Reader, id string) (json.RawMessage, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/json":
		b, err := io.ReadAll(body)
		if err != nil {
			return nil, fmt.Errorf("reading the answer: %w", err)
		}
		m, err := response(b, id)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, fmt.Errorf("the answer is not the response to request %s: %q", id, excerpt(b))
		}
		return result(m)
	case "text/event-stream":
		sr := sse.NewReader(body, maxAnswer)
		for {
			block, err := sr.Next()
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("the event stream ended without the response to request %s", id)
			}
			if err != nil {
				return nil, fmt.Errorf("reading the event stream: %w", err)
			}
			ev := sse.Parse(block)
			if ev.Comment || len(bytes.TrimSpace(ev.Data)) == 0 {
				continue
			}
			m, err := response(ev.Data, id)
			if err != nil {
				return nil, fmt.Errorf("event stream: %w", err)
			}
			if m != nil {
				return result(m)
			}
		}
	}
	return nil, fmt.Errorf("an answer of type %q, neither JSON nor an event stream", excerpt([]byte(contentType)))
}

// response decodes one message and returns it if it is the response to
// the request of id, nil if it is another message.
func response(b []byte, id string) (*message, error) {
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a JSON-RPC message: %q", excerpt(b))
	}
	if m.JSONRPC != "2.0" {
		return nil, fmt.Errorf("not a JSON-RPC 2.0 message: %q", excerpt(b))
	}
	if m.Method != "" || string(bytes.TrimSpace(m.ID)) != id {
		return nil, nil
	}
	return &m, nil
}

// result returns a response's result, or its error.
func result(m *message) (json.RawMessage, error) {
	switch {
	case m.Error != nil:
		return nil, m.Error
	case len(m.Result) == 0 || string(m.Result) == "null":
		return nil, errors.New("a response with neither result nor error")
	}
	return m.Result, nil
}

// answerStatus describes an answer of a status other than 2xx, with the
// JSON-RPC error its body holds, if any.
func answerStatus(code int, body []byte) error {
	se := &statusError{code: code}
	var m message
	if json.Unmarshal(body, &m) == nil && m.Error != nil {
		se.rpc = m.Error
	} else {
		se.body = excerpt(bytes.TrimSpace(body))
	}
	return se
}

// excerpt returns at most maxExcerpt bytes of b, for an error.
func excerpt(b []byte) string {
	if len(b) > maxExcerpt {
		return string(b[:maxExcerpt]) + "..."
	}
	return string(b)
}

// boundedReader reads at most left bytes, and reports errAnswerTooLarge if
// the body holds more.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			return 0, errAnswerTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// redact removes the Authorization value, and the credential after its
// scheme, from err's text, as written and as %q writes it, and a prefix of
// them that an excerpt cut off ("..."): a server may quote the header in
// its answer. The error's chain goes with it then, since it holds the same
// text.
func redact(err error, auth string) error {
	if auth == "" {
		return err
	}
	var secrets []string
	for _, v := range []string{auth, credential(auth)} {
		if v == "" {
			continue
		}
		q := strconv.Quote(v)
		secrets = append(secrets, v, q[1:len(q)-1])
	}
	s := err.Error()
	was := s
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
		if len(v) < 3 || !strings.Contains(s, v[:3]) || !strings.Contains(s, "...") {
			continue
		}
		for k := len(v) - 1; k >= 3; k-- {
			s = strings.ReplaceAll(s, v[:k]+"...", "[redacted]...")
		}
	}
	if s == was {
		return err
	}
	return errors.New(s)
}

// credential returns what follows the scheme of an Authorization value
// ("Bearer xyz": "xyz"), "" if it has no scheme.
func credential(auth string) string {
	_, cred, ok := strings.Cut(auth, " ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(cred)
}

package upstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/health"
	"github.com/mcpfleet/mcpfleet/internal/sse"
)

// The requests that prove a replica's MCP endpoint (health.Probe). Their
// JSON-RPC id says who asks, in a replica's own log.
const (
	// discoverBody is a 2026-07-28 server/discover: it opens no session.
	discoverBody = `{"jsonrpc":"2.0","id":"mcpfleet-health","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	// initializeBody is a 2025-11-25 initialize; the session it opens is
	// DELETEd as soon as its answer is read.
	initializeBody = `{"jsonrpc":"2.0","id":"mcpfleet-health","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpfleet-health-check","version":"1"}}}`
	// legacyVersion is the revision the probe's session is DELETEd under.
	legacyVersion = "2025-11-25"
)

// maxProbeEvents bounds the events read from a probe's stream before its
// first one with data (a SEP-1699 priming event comes first).
const maxProbeEvents = 4

// proveMCP sends the probes of health.Order until one proves the replica's
// MCP endpoint, the one that proved it last time first. A replica none of
// them proves is down with the reason "no MCP endpoint at <url> (HTTP 404,
// text/html)", told by the answer of its MCP endpoint. A draining answer or
// a server error ends the proof at once, as does a failure to reach the
// replica at all.
func (c *Checker) proveMCP(ctx context.Context, r *Replica) (Result, string) {
	var discover *health.Answer
	for _, p := range health.Order(health.Probe(r.lastProbe.Load())) {
		if !health.Worth(p, discover) {
			continue
		}
		a, err := c.send(ctx, r, p)
		if err != nil {
			if discover == nil || ctx.Err() != nil {
				return ResultFail, failReason(err, c.timeout)
			}
			continue // the MCP endpoint answered; this probe's URL did not
		}
		if p == health.ProbeDiscover {
			discover = &a
		}
		switch health.Judge(p, a) {
		case health.VerdictMCP:
			r.lastProbe.Store(int32(p))
			r.mcpProven.Store(true)
			return ResultOK, "MCP endpoint answered " + p.String()
		case health.VerdictDraining:
			return ResultDraining, "status 503 draining"
		case health.VerdictFail:
			return ResultFail, fmt.Sprintf("status %d to %s", a.Status, p)
		}
	}
	if discover == nil { // cannot be: Order always holds discover
		return ResultFail, "no probe sent"
	}
	return ResultFail, health.NoEndpoint(r.url.Redacted(), *discover)
}

// probeMCP is the check of mode mcp: a server/discover alone, which opens
// no session.
func (c *Checker) probeMCP(ctx context.Context, r *Replica) (Result, string) {
	a, err := c.send(ctx, r, health.ProbeDiscover)
	if err != nil {
		return ResultFail, failReason(err, c.timeout)
	}
	switch health.Judge(health.ProbeDiscover, a) {
	case health.VerdictMCP:
		return ResultOK, fmt.Sprintf("MCP answer, status %d", a.Status)
	case health.VerdictDraining:
		return ResultDraining, "status 503 draining"
	case health.VerdictFail:
		return ResultFail, fmt.Sprintf("status %d", a.Status)
	}
	return ResultFail, health.NoEndpoint(r.url.Redacted(), a)
}

// send sends probe p to r and returns its answer. The session an
// initialize opens is DELETEd before send returns.
func (c *Checker) send(ctx context.Context, r *Replica, p health.Probe) (health.Answer, error) {
	req, err := probeRequest(ctx, r, p)
	if err != nil {
		return health.Answer{}, fmt.Errorf("building check: %w", err)
	}
	req.Host = cmp.Or(c.host, req.URL.Host)
	req.Header.Set("User-Agent", "mcpfleet-health-check")
	resp, err := c.client.Do(req)
	if err != nil {
		return health.Answer{}, err
	}
	a, err := readAnswer(resp)
	resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" && p == health.ProbeInitialize {
		c.endSession(ctx, r, id)
	}
	if err != nil {
		return health.Answer{}, fmt.Errorf("reading answer: %w", err)
	}
	return a, nil
}

// probeRequest builds the request of probe p to r.
func probeRequest(ctx context.Context, r *Replica, p health.Probe) (*http.Request, error) {
	if p == health.ProbeSSE {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.sseURL.String(), nil)
		if err == nil {
			req.Header.Set("Accept", "text/event-stream")
		}
		return req, err
	}
	body := discoverBody
	if p == health.ProbeInitialize {
		body = initializeBody
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url.String(), strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if p == health.ProbeDiscover {
		// An initialize carries no version header: it negotiates one.
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "server/discover")
	}
	return req, nil
}

// endSession DELETEs the session an initialize opened (Streamable HTTP,
// "Session Management"), so that checks leave no session behind on the
// replica. It has a timeout of its own: the check's may be spent. Its
// outcome changes nothing; a replica that refuses it (405) ends idle
// sessions by itself.
func (c *Checker) endSession(ctx context.Context, r *Replica, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, r.url.String(), nil)
	if err != nil {
		return
	}
	req.Host = cmp.Or(c.host, r.url.Host)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", legacyVersion)
	req.Header.Set("User-Agent", "mcpfleet-health-check")
	if resp, err := c.client.Do(req); err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxCheckBody))
		resp.Body.Close()
	}
}

// readAnswer reads what health.Judge needs of resp: of an event stream its
// first event with data (the stream is left there: the caller closes it),
// of anything else its first maxCheckBody bytes.
func readAnswer(resp *http.Response) (health.Answer, error) {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	a := health.Answer{Status: resp.StatusCode, MediaType: mt, Challenge: resp.Header.Get("WWW-Authenticate") != ""}
	if mt != "text/event-stream" {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxCheckBody))
		a.Body = b
		return a, err
	}
	rd := sse.NewReader(resp.Body, maxCheckBody)
	for range maxProbeEvents {
		block, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return a, nil // a stream without an event proves nothing
		}
		if err != nil {
			return a, err
		}
		if len(sse.Parse(block).Data) > 0 {
			a.Body = block
			break
		}
	}
	return a, nil
}

package gateway

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
)

// The audit log (docs/GATEWAY.md, "Audit log") answers "who called
// delete_branch yesterday": one JSON line per authorization decision and
// per tools/call, prompts/get and resources/read, through Options.Audit
// (the access log's non-blocking writer, or a file's). A line names the
// caller by the salted digest its limits are keyed by (a verified token's
// iss and sub, else the credential, else the client address: never a
// token), and by sub only with Options.AuditSubject; it names the tool,
// prompt or resource, never an argument or a result.

// auditLine is what the audit log says of one message of a request.
type auditLine struct {
	service, caller, sub string
	method               string
	nameKey, name        string // tool, prompt or resource, and its name; "" for other methods
	decision, rule       string // the authorization step's; "" when it did not decide
	replica, outcome     string
	status               int
	durationMS           float64
}

// auditedName is the key an audited method's name goes under: tool,
// prompt or resource; "" for a method audited only when authorization
// decided it.
func auditedName(method string) string {
	switch method {
	case "tools/call":
		return "tool"
	case "prompts/get":
		return "prompt"
	case "resources/read":
		return "resource"
	}
	return ""
}

// audit writes the audit lines of rec's request, in one Write: one per
// message of it that is a tools/call, prompts/get or resources/read, or
// every message when authorization decided the request. It may be called
// at any point of the request's way, once; finish calls it.
func (g *Gateway) audit(rec *record) {
	w, q := g.opts.Audit, rec.q
	if w == nil || q == nil {
		return
	}
	msgs := q.batch
	if msgs == nil {
		msgs = []mcpmsg.Message{q.msg}
	}
	var base *auditLine
	bp := lineBufs.Get().(*[]byte)
	b, now := (*bp)[:0], time.Now()
	for i := range msgs {
		key := auditedName(msgs[i].Method)
		if key == "" && rec.authzDecision == "" {
			continue
		}
		if base == nil {
			base = g.auditBase(rec, now)
		}
		l := *base
		l.method, l.nameKey = msgs[i].Method, key
		if key != "" {
			l.name = msgs[i].Name
		}
		b = l.appendJSON(b, now)
	}
	if len(b) > 0 {
		_, _ = w.Write(b)
	}
	*bp = b
	lineBufs.Put(bp)
}

// auditBase is what every audit line of rec says: who, where, how it
// ended.
func (g *Gateway) auditBase(rec *record, now time.Time) *auditLine {
	q := rec.q
	l := &auditLine{service: g.opts.Service, caller: g.limitKey(rec.r, q),
		decision: rec.authzDecision, rule: rec.authzRule, replica: rec.replica, outcome: rec.outcome(),
		status: rec.status, durationMS: float64(now.Sub(rec.start).Microseconds()) / 1000}
	if g.opts.AuditSubject && q.verified != nil {
		l.sub = q.verified.Subject
	}
	if l.replica == "" {
		l.replica = "none"
	}
	return l
}

// appendJSON appends the line in the shape of slog's JSON handler's
// records, at Info with message "audit": time, level, msg, then the
// line's members in their order (sub and the name only when there are
// ones), and the newline.
func (l *auditLine) appendJSON(b []byte, now time.Time) []byte {
	b = append(b, `{"time":"`...)
	b = now.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"audit"`...)
	if l.service != "" {
		b = appendAuditStr(b, "service", l.service)
	}
	b = appendAuditStr(b, "caller", l.caller)
	if l.sub != "" {
		b = appendAuditStr(b, "sub", l.sub)
	}
	b = appendAuditStr(b, "method", l.method)
	if l.nameKey != "" {
		b = appendAuditStr(b, l.nameKey, l.name)
	}
	b = appendAuditStr(b, "decision", l.decision)
	b = appendAuditStr(b, "rule", l.rule)
	b = appendAuditStr(b, "replica", l.replica)
	b = appendAuditStr(b, "outcome", l.outcome)
	b = appendInt(b, "status", int64(l.status))
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, l.durationMS, 'f', -1, 64)
	return append(b, "}\n"...)
}

// appendAuditStr appends ,"key":v with v escaped as encoding/json does,
// bytes that are not UTF-8 as U+FFFD: a name is the client's to choose.
func appendAuditStr(b []byte, key, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	return mcpmsg.AppendString(b, v)
}

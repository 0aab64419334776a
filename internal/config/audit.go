package config

// Audit configures the audit log (docs/GATEWAY.md, "Audit log"): one JSON
// line per authorization decision and per tools/call, prompts/get and
// resources/read, naming the caller by its salted digest, never a token,
// an argument or a result. Read at start: a reload keeps it.
type Audit struct {
	// Log is off, stderr (among the log's own lines) or the path of a file
	// the lines are appended to.
	Log string `yaml:"log"`
	// IncludeSubject adds the verified token's sub to each line.
	IncludeSubject bool `yaml:"include_subject"`
}

// Audit log destinations besides a file.
const (
	AuditOff    = "off"
	AuditStderr = "stderr"
)

// On reports whether the audit log is written.
func (a Audit) On() bool { return a.Log != AuditOff }

func (c *Config) validateAudit(bad func(string, string, ...any)) {
	a := c.Audit
	if a.Log == "" {
		bad("audit.log", "want off, stderr or the path of a file, got an empty string")
	}
	if a.IncludeSubject && !a.On() {
		bad("audit.include_subject", "true with audit.log off writes nothing: set audit.log too")
	}
}

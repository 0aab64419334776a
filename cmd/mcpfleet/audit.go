package main

import (
	"fmt"
	"io"
	"os"

	"github.com/mcpfleet/mcpfleet/internal/config"
	"github.com/mcpfleet/mcpfleet/internal/logwriter"
)

// logSinks are where a gateway's own lines go besides its log.
type logSinks struct {
	// access is the writer under the log's JSON handler, where the
	// gateway puts its access log lines together itself; nil: through
	// the log.
	access io.Writer
	// audit gets the audit log's lines; nil: no audit log.
	audit io.Writer
	// auditSubject puts the verified sub in the audit lines.
	auditSubject bool
}

// auditLog is the audit log's writer as audit.log says, and how many of
// its lines were dropped: off is nil; stderr is the log's own writer
// (its drops already counted); a file gets a writer of its own, as
// non-blocking as the log's, appending (so a rotation by copy and truncate
// loses nothing the gateway wrote; the file is not reopened), mode 0600.
// The closer writes out what is buffered and closes the file.
type auditLog struct {
	w       io.Writer
	dropped func() uint64
	close   func() error
}

// openAudit opens the audit log of a; log is the log's own writer.
func openAudit(a config.Audit, log io.Writer) (*auditLog, error) {
	none := func() uint64 { return 0 }
	switch a.Log {
	case config.AuditOff:
		return &auditLog{dropped: none, close: func() error { return nil }}, nil
	case config.AuditStderr:
		return &auditLog{w: log, dropped: none, close: func() error { return nil }}, nil
	}
	f, err := os.OpenFile(a.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit.log: %w", err)
	}
	lw := logwriter.New(f, logwriter.Options{})
	return &auditLog{w: lw, dropped: lw.Dropped, close: func() error {
		err := lw.Close()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}}, nil
}

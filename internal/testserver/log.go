package testserver

import (
	"context"
	"log/slog"
)

// quiet returns a logger for the SDK that passes only warnings and errors to
// l, so the SDK's per-session info lines ("server connecting", "session
// initialized") stay out of the log: a stateless request is a session.
func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{Handler: l.Handler(), min: slog.LevelWarn})
}

// minLevel is a slog.Handler that drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

// Enabled reports whether records at level pass both min and the wrapped
// handler.
func (h minLevel) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.min && h.Handler.Enabled(ctx, level)
}

// WithAttrs keeps the level filter on the derived handler.
func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

// WithGroup keeps the level filter on the derived handler.
func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}

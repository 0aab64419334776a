package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// SetLogger sends go-redis's own messages (dial failures while the store is
// down, say) to log at Warn, instead of the standard logger on stderr.
// go-redis has one process-wide logger, so this is called once, by cmd.
func SetLogger(log *slog.Logger) {
	redis.SetLogger(slogAdapter{log})
}

type slogAdapter struct{ log *slog.Logger }

func (a slogAdapter) Printf(ctx context.Context, format string, v ...any) {
	a.log.WarnContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

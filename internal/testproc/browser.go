package testproc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser is a headless Chromium driven over the Chrome DevTools protocol
// (chromedp), with its page's console errors and uncaught exceptions
// collected.
type Browser struct {
	// Ctx runs actions in the browser's one tab (chromedp.Run, Do).
	Ctx context.Context

	mu   sync.Mutex // guards errs
	errs []string
	done chan struct{} // closed when the console reader ends
	stop func()
}

// StartBrowser starts Debian's Chromium, headless, with a window of width
// by height pixels, for at most limit; it is stopped when the test ends.
// Without Chromium the test is skipped, or fails with
// MCPFLEET_REQUIRE_CHROMIUM=1.
func StartBrowser(t testing.TB, width, height int, limit time.Duration) *Browser {
	t.Helper()
	exe := FindBinary(t, "chromium", "chromium", "MCPFLEET_REQUIRE_CHROMIUM")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.Flag("no-sandbox", true),
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", false),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	b := &Browser{Ctx: bctx, done: make(chan struct{})}
	b.stop = func() {
		cancelBrowser()
		cancelAlloc()
		cancel()
	}
	// Subscribe to the console before any page loads; read it until the
	// browser ends.
	messages := chromedp.Console(bctx)
	go func() {
		defer close(b.done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errs = append(b.errs, m.String())
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(b.Close)
	return b
}

// Close stops the browser and waits for its console reader; it may be
// called more than once.
func (b *Browser) Close() {
	b.stop()
	<-b.done
}

// ConsoleErrors returns the console errors and exceptions seen so far.
func (b *Browser) ConsoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

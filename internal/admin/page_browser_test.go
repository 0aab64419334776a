package admin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// layoutProblems is a page expression: every way the fleet table breaks
// at the window's width. The first text of every cell must sit under its
// own header's text (inside the header's column, overlapping the header's
// text from left to right), nothing may be wider than the window, every
// Drain or Resume button must be inside it, and every sparkline tall
// enough to read with its value on the same line.
const layoutProblems = `(() => {
  const firstText = (el) => {
    const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) {
      const s = n.textContent, start = s.search(/\S/);
      if (start < 0 || !n.parentElement.getClientRects().length) continue;
      const r = document.createRange();
      r.setStart(n, start);
      r.setEnd(n, s.trimEnd().length);
      return {text: s.trim(), box: r.getBoundingClientRect()};
    }
    return null;
  };
  const out = [];
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width) out.push("the page is " + document.documentElement.scrollWidth + " px wide in a window of " + width);
  const ths = [...document.querySelectorAll("#fleet thead th")];
  const rows = [...document.querySelectorAll("#rows tr.replica")];
  if (rows.length === 0) out.push("no replica rows");
  for (const tr of rows) {
    [...tr.cells].forEach((td, i) => {
      const th = ths[i];
      if (!th || !td.getClientRects().length) return;
      const head = firstText(th), cell = firstText(td), col = th.getBoundingClientRect();
      if (!head || !cell) return;
      const where = tr.dataset.replica + ": " + JSON.stringify(cell.text) + " under " + JSON.stringify(head.text);
      if (cell.box.left < col.left - 0.5 || cell.box.left >= col.right) out.push(where + ": starts outside its column");
      if (cell.box.right <= head.box.left || cell.box.left >= head.box.right) out.push(where + ": not under the header's text");
    });
    for (const b of tr.querySelectorAll("button")) {
      const r = b.getBoundingClientRect();
      if (!b.getClientRects().length || r.left < 0 || r.right > width) out.push(tr.dataset.replica + ": the " + b.textContent + " button is outside the window");
    }
    for (const s of tr.querySelectorAll("svg.spark")) {
      const r = s.getBoundingClientRect(), v = s.parentElement.querySelector(".v").getBoundingClientRect();
      if (r.height < 24) out.push(tr.dataset.replica + ": a sparkline " + r.height + " px high");
      if (v.bottom <= r.top || v.top >= r.bottom || v.right > r.left) out.push(tr.dataset.replica + ": a value not beside its sparkline");
    }
  }
  return out;
})()`

// TestPageInChromium loads the page the handler serves over the fixture
// fleet in headless Chromium, at 1,280 and 1,920 px wide: every value
// under its own header, nothing wider than the window, the actions in
// it; narrower, the less important columns fold and nothing overflows
// either. A replica's row opens its detail: its last checks with their
// reasons, its recent errors, its tools' digest, and its standard error
// only for the replica that has one.
func TestPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	srv := serve(t, newFixture(), &Options{Tools: fixtureTools})
	b := testproc.StartBrowser(t, 1280, 900, 90*time.Second)
	ctx := b.Ctx
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// redrawn waits for two more polls, so that what a step changed is drawn.
	redrawn := func(what string) {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.fleetPolls`))
		if err == nil {
			_, err = chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`window.fleetPolls >= %d`, n+2), chromedp.WithPollingTimeout(10*time.Second)))
		}
		if err != nil {
			t.Fatalf("waiting for the page to redraw after %s: %v", what, err)
		}
	}
	do("loading the page", chromedp.Navigate(srv.URL+"/"))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.fleetPolls >= 3`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("three polls of /api/fleet: %v", err)
	}

	for _, w := range []int64{1280, 1920, 1024, 820} {
		do(fmt.Sprintf("a window %d px wide", w), chromedp.EmulateViewport(w, 900))
		redrawn("resizing")
		problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](layoutProblems))
		if err != nil {
			t.Fatalf("%d px: %v", w, err)
		}
		for _, p := range problems {
			t.Errorf("%d px: %s", w, p)
		}
		saveShot(t, ctx, fmt.Sprintf("admin-%d.png", w))
	}

	do("back to 1,280 px", chromedp.EmulateViewport(1280, 900))
	do("opening replica-b", chromedp.Click(`tr.replica[data-replica="replica-b"] td.name`))
	redrawn("opening replica-b")
	detail := func(name string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector('tr.detail[data-replica=%q]') || {}).innerText || ""`, name)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	got := detail("replica-b")
	for _, want := range []string{"connection refused (3 checks since", "timeout after 1s (2 checks since", "ok status 200", "connect_failed", "502", "upstream_cut", "not listed: connect failed"} {
		if !strings.Contains(got, want) {
			t.Errorf("replica-b's detail lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "stderr") {
		t.Errorf("replica-b's detail has a stderr block, and no standard error:\n%s", got)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('tr.detail[data-replica="replica-b"] .checks li').length`)); n != 3 {
		t.Errorf("replica-b's detail lists %d lines of checks, want the fixture's 6 checks in 3 runs", n)
	}
	do("opening github-stdio", chromedp.Click(`tr.replica[data-replica="github-stdio"] td.name`))
	redrawn("opening github-stdio")
	got = detail("github-stdio")
	for _, want := range []string{"stderr", "GitHub MCP Server running on stdio", "sha256:9e77d2a1", "create_issue", "added"} {
		if !strings.Contains(got, want) {
			t.Errorf("github-stdio's detail lacks %q:\n%s", want, got)
		}
	}
	if detail("replica-b") == "" {
		t.Error("opening a second replica closed the first")
	}
	problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](layoutProblems))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("with two details open: %s", p)
	}
	saveShot(t, ctx, "admin-detail.png")
	do("closing replica-b by keyboard", chromedp.Focus(`tr.replica[data-replica="replica-b"]`), chromedp.KeyEvent("\r"))
	redrawn("closing replica-b")
	if got := detail("replica-b"); got != "" {
		t.Errorf("Enter on an open row left its detail open:\n%s", got)
	}

	do("draining replica-a", chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(`tr.replica[data-replica="replica-a"] button.drain`))
	redrawn("draining replica-a")
	st, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('tr.replica[data-replica="replica-a"] td.state').innerText + "|" + document.querySelector('tr.replica[data-replica="replica-a"] button').className + "|" + !!document.querySelector('tr.detail[data-replica="replica-a"]')`))
	if err != nil || st != "draining\nby hand|resume|false" && st != "draining by hand|resume|false" {
		t.Errorf("after Drain, replica-a reads %q (%v); want draining by hand, a Resume button, no detail opened by the click", st, err)
	}
	for _, e := range b.ConsoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// saveShot keeps a full-page screenshot in the test's temporary
// directory, named in the log; MCPFLEET_ADMIN_SHOTS=DIR keeps it there
// as well.
func saveShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dirs := []string{t.TempDir()}
	if d := os.Getenv("MCPFLEET_ADMIN_SHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
}

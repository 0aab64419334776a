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
// it; narrower (1,024 and 820 px), the less important columns fold and
// nothing overflows either. A replica's row opens its detail, and Drain
// turns a row draining by hand.
func TestPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	p := openPage(t)
	for _, w := range []int64{1280, 1920, 1024, 820} {
		p.do(fmt.Sprintf("a window %d px wide", w), chromedp.EmulateViewport(w, 900))
		p.redrawn("resizing")
		p.layout(fmt.Sprintf("%d px", w))
		saveShot(t, p.b.Ctx, fmt.Sprintf("admin-%d.png", w))
	}
	p.do("back to 1,280 px", chromedp.EmulateViewport(1280, 900))
	checkDetails(t, p)
	checkDrain(t, p)
	for _, e := range p.b.ConsoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}

// checkDetails opens two replicas' details: their last checks with their
// reasons (in runs), recent errors, tools' digest, and the process (pid,
// uptime, restarts, sessions) and standard error blocks only for the
// replica that is a child process; Enter on a row closes it.
func checkDetails(t *testing.T, p *pageDriver) {
	t.Helper()
	p.do("opening replica-b", chromedp.Click(`tr.replica[data-replica="replica-b"] td.name`))
	p.redrawn("opening replica-b")
	got := p.detail("replica-b")
	for _, want := range []string{"connection refused (3 checks since", "timeout after 1s (2 checks since", "ok status 200", "connect_failed", "502", "upstream_cut", "not listed: connect failed"} {
		if !strings.Contains(got, want) {
			t.Errorf("replica-b's detail lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "stderr") || strings.Contains(got, "process") {
		t.Errorf("replica-b's detail has a stderr or process block, and is no child process:\n%s", got)
	}
	if n := p.text(`document.querySelectorAll('tr.detail[data-replica="replica-b"] .checks li').length`); n != "3" {
		t.Errorf("replica-b's detail lists %s lines of checks, want the fixture's 6 checks in 3 runs", n)
	}
	p.do("opening github-stdio", chromedp.Click(`tr.replica[data-replica="github-stdio"] td.name`))
	p.redrawn("opening github-stdio")
	got = p.detail("github-stdio")
	for _, want := range []string{"stderr", "GitHub MCP Server running on stdio", "sha256:9e77d2a1", "create_issue", "added",
		"children of its sessions (1)", "github-s-0a1b2c3d4e, pid 4343", "session child ready",
		"process", "pid\n48213", "up\n2.5 h", "restarts\n2", "sessions on it\n3"} {
		if !strings.Contains(got, want) {
			t.Errorf("github-stdio's detail lacks %q:\n%s", want, got)
		}
	}
	if p.detail("replica-b") == "" {
		t.Error("opening a second replica closed the first")
	}
	p.layout("with two details open")
	saveShot(t, p.b.Ctx, "admin-detail.png")
	// While text in the table is selected, it stays as it is, to be copied.
	p.do("selecting replica-b's checks", chromedp.Evaluate[chromedp.Void](`getSelection().selectAllChildren(document.querySelector('tr.detail[data-replica="replica-b"] .checks'))`))
	before := p.text(`document.getElementById("rows").innerHTML`)
	p.redrawn("selecting")
	if p.text(`document.getElementById("rows").innerHTML`) != before {
		t.Error("the table was redrawn under a selection")
	}
	p.do("clearing the selection", chromedp.Evaluate[chromedp.Void](`getSelection().removeAllRanges()`))
	p.redrawn("clearing the selection")
	if p.text(`document.getElementById("rows").innerHTML`) == before {
		t.Error("the table is not redrawn once the selection is gone (the fixture's counts grow with every poll)")
	}
	p.do("closing replica-b by keyboard", chromedp.Focus(`tr.replica[data-replica="replica-b"]`), chromedp.KeyEvent("\r"))
	p.redrawn("closing replica-b")
	if got := p.detail("replica-b"); got != "" {
		t.Errorf("Enter on an open row left its detail open:\n%s", got)
	}
}

// checkDrain clicks replica-a's Drain: the row reads draining by hand,
// its button is Resume, and the click opened no detail.
func checkDrain(t *testing.T, p *pageDriver) {
	t.Helper()
	p.do("draining replica-a", chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(`tr.replica[data-replica="replica-a"] button.drain`))
	p.redrawn("draining replica-a")
	const row = `document.querySelector('tr.replica[data-replica="replica-a"]')`
	st := p.text(row + `.querySelector("td.state").innerText.replace(/\s+/g, " ") + "|" + ` + row + `.querySelector("button").className + "|" + !!document.querySelector('tr.detail[data-replica="replica-a"]')`)
	if st != "draining by hand|resume|false" {
		t.Errorf("after Drain, replica-a reads %q; want draining by hand, a Resume button, no detail opened by the click", st)
	}
}

// pageDriver is the fleet page of the fixture in a headless Chromium.
type pageDriver struct {
	t *testing.T
	b *testproc.Browser
}

// openPage serves the fixture with its tools and loads the page in a
// browser 1,280 px wide, once it has polled three times.
func openPage(t *testing.T) *pageDriver {
	t.Helper()
	srv := serve(t, newFixture(), &Options{Tools: fixtureTools})
	p := &pageDriver{t: t, b: testproc.StartBrowser(t, 1280, 900, 90*time.Second)}
	p.do("loading the page", chromedp.Navigate(srv.URL+"/"))
	if _, err := chromedp.Run(p.b.Ctx, chromedp.Poll[bool](`window.fleetPolls >= 3`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("three polls of /api/fleet: %v", err)
	}
	return p
}

func (p *pageDriver) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.b.Ctx, steps...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// redrawn waits for two more polls, so that what a step changed is drawn.
func (p *pageDriver) redrawn(what string) {
	p.t.Helper()
	n, err := chromedp.Run(p.b.Ctx, chromedp.Evaluate[int](`window.fleetPolls`))
	if err == nil {
		_, err = chromedp.Run(p.b.Ctx, chromedp.Poll[bool](fmt.Sprintf(`window.fleetPolls >= %d`, n+2), chromedp.WithPollingTimeout(10*time.Second)))
	}
	if err != nil {
		p.t.Fatalf("waiting for the page to redraw after %s: %v", what, err)
	}
}

// layout fails the test with every problem layoutProblems finds now.
func (p *pageDriver) layout(when string) {
	p.t.Helper()
	problems, err := chromedp.Run(p.b.Ctx, chromedp.Evaluate[[]string](layoutProblems))
	if err != nil {
		p.t.Fatalf("%s: %v", when, err)
	}
	for _, s := range problems {
		p.t.Errorf("%s: %s", when, s)
	}
}

// text evaluates a page expression as a string.
func (p *pageDriver) text(expr string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.b.Ctx, chromedp.Evaluate[string](`String(`+expr+`)`))
	if err != nil {
		p.t.Fatalf("%s: %v", expr, err)
	}
	return s
}

// detail is the text of the replica's open detail; "" when it is closed.
func (p *pageDriver) detail(name string) string {
	p.t.Helper()
	return p.text(fmt.Sprintf(`(document.querySelector('tr.detail[data-replica=%q]') || {}).innerText || ""`, name))
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

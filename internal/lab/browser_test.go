package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// chromiumPath finds Debian's headless-capable Chromium, or skips the test
// unless MCPFLEET_REQUIRE_CHROMIUM=1.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if os.Getenv("MCPFLEET_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium not found (apt-get install chromium) and MCPFLEET_REQUIRE_CHROMIUM=1")
	}
	t.Skip("chromium not found; apt-get install chromium, or set MCPFLEET_REQUIRE_CHROMIUM=1 to fail")
	return ""
}

// consoleErrors collects the page's console errors and uncaught exceptions.
type consoleErrors struct {
	mu   sync.Mutex
	msgs []string // guarded by mu
}

func (c *consoleErrors) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

// TestBrowserMissionOne plays mission 1 in headless Chromium: load the
// broken fleet (0 stars), set the keep-alive to 30 s (3 stars), and check the
// tiles against sim.Run of the same scenario.
func TestBrowserMissionOne(t *testing.T) {
	exe := chromiumPath(t)
	srv := httptest.NewServer(New(nil))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
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
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	// Subscribe to the console before the page loads; read it until the
	// browser context ends.
	errs := &consoleErrors{}
	messages := chromedp.Console(bctx)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				errs.mu.Lock()
				errs.msgs = append(errs.msgs, m.String())
				errs.mu.Unlock()
			}
		}
	}()

	// act runs steps that change a setting and waits until the page has
	// redrawn after them: at least one more run finished, none pending.
	act := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		before, err := chromedp.Run(bctx, chromedp.Evaluate[int](`window.labRuns || 0`))
		if err != nil {
			t.Fatalf("%s: reading window.labRuns: %v", what, err)
		}
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		expr := fmt.Sprintf("window.labIdle === true && window.labRuns > %d", before)
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("waiting for the redraw after %s: %v", what, err)
		}
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	stars := func() string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("stars").dataset.stars`))
		if err != nil {
			t.Fatalf("reading stars: %v", err)
		}
		return v
	}

	act("loading the page", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("mission-1")))

	act("loading mission 1", chromedp.Click(chromedp.ID("mission-1")), chromedp.Click(chromedp.ID("load-mission")))
	if got := stars(); got != "0" {
		t.Errorf("mission 1's broken setup shows %q stars, want 0", got)
	}

	do("pinning the broken fleet as A", chromedp.Click(chromedp.ID("pin")))

	act("setting keep-alive to 30 s",
		chromedp.SetValue(chromedp.ID("keep_alive_s"), ""),
		chromedp.SendKeys(chromedp.ID("keep_alive_s"), "30\t"))
	if got := stars(); got != "3" {
		t.Errorf("mission 1 with keep-alive 30 s shows %q stars, want 3", got)
	}
	cuts, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`["#tiles-a", "#tiles-b"].map((s) => document.querySelector(s + ' [data-figure="idle_cuts"] .value').dataset.raw)`))
	if err != nil || len(cuts) != 2 || cuts[0] == "0" || cuts[1] != "0" {
		t.Errorf("compare: idle cuts A, B = %q (%v), want A > 0 and B 0", cuts, err)
	}

	checkTiles(t, bctx)

	ms, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`window.lastRedrawMs`))
	if err != nil {
		t.Fatalf("reading window.lastRedrawMs: %v", err)
	}
	t.Logf("change to redraw (fetch + mission evaluation + draw): %.1f ms", ms)

	act("leaving the mission and adding a replica", chromedp.Click(chromedp.ID("leave-mission")))
	act("adding a replica", chromedp.Focus(chromedp.ID("replicas")), chromedp.SendKeys(chromedp.ID("replicas"), kb.ArrowRight))
	plain, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`window.lastRedrawMs`))
	if err != nil {
		t.Fatalf("reading window.lastRedrawMs: %v", err)
	}
	t.Logf("change to redraw (fetch + one run + draw): %.1f ms", plain)
	for range 4 {
		act("adding a replica", chromedp.SendKeys(chromedp.ID("replicas"), kb.ArrowRight))
		ms, _ := chromedp.Run(bctx, chromedp.Evaluate[float64](`window.lastRedrawMs`))
		t.Logf("change to redraw (fetch + one run + draw): %.1f ms", ms)
	}
	act("back to 4 replicas", chromedp.SendKeys(chromedp.ID("replicas"), kb.ArrowLeft+kb.ArrowLeft+kb.ArrowLeft+kb.ArrowLeft))
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#tiles [data-figure=replicas] .value")[0].textContent.split("·").length`)); err != nil || n != 4 {
		t.Errorf("after the arrow key on the replicas slider: %d replicas shown (%v), want 4", n, err)
	}

	act("loading mission 1 again", chromedp.Click(chromedp.ID("load-mission")))
	act("setting keep-alive to 30 s again",
		chromedp.SetValue(chromedp.ID("keep_alive_s"), ""),
		chromedp.SendKeys(chromedp.ID("keep_alive_s"), "30\t"))
	do("leaving the field", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	saveScreenshot(t, png)

	do("narrowing to phone width", chromedp.EmulateViewport(390, 844))
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.documentElement.scrollWidth <= window.innerWidth`, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		w, _ := chromedp.Run(bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		t.Errorf("at 390 px wide the page is %d px wide: it does not stack (%v)", w, err)
	}
	if phone, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)); err == nil {
		if err := os.WriteFile(filepath.Join(t.TempDir(), "lab-phone.png"), phone, 0o644); err != nil {
			t.Errorf("saving phone screenshot: %v", err)
		}
	}

	cancelBrowser()
	<-readDone
	for _, m := range errs.list() {
		t.Errorf("browser console: %s", m)
	}
}

// checkTiles compares tiles by data-figure with sim.Run of the scenario the
// page shows: mission 1's broken setup with keep-alive 30 s.
func checkTiles(t *testing.T, ctx context.Context) {
	t.Helper()
	m, err := sim.MissionByNumber(1)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Broken
	s.KeepAlive = 30
	res, err := sim.Run(s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	var want map[string]any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	keys := []string{"calls_issued", "completed", "failed", "idle_cuts", "resumes", "not_found",
		"duplicate_mutations", "executions_killed", "latency_p50_s", "latency_p95_s", "latency_p99_s", "utilization"}
	for _, key := range keys {
		sel := fmt.Sprintf(`document.querySelector('#tiles [data-figure="%s"] .value')`, key)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](
			fmt.Sprintf(`({raw: %[1]s.dataset.raw, text: %[1]s.textContent})`, sel)))
		if err != nil {
			t.Errorf("tile %s: %v", key, err)
			continue
		}
		w, ok := want[key].(float64)
		if !ok {
			t.Fatalf("result has no figure %q", key)
		}
		raw, err := strconv.ParseFloat(got["raw"], 64)
		if err != nil || raw != w {
			t.Errorf("tile %s holds %q, sim.Run gives %v", key, got["raw"], w)
		}
		var shown float64
		if _, err := fmt.Sscan(got["text"], &shown); err != nil {
			t.Errorf("tile %s shows %q: no number", key, got["text"])
		}
		if key == "utilization" {
			shown /= 100
		}
		if d := shown - w; d > 0.001 || d < -0.001 {
			t.Errorf("tile %s shows %q, sim.Run gives %v", key, got["text"], w)
		}
	}
}

// saveScreenshot keeps the page's picture in the test's temporary directory
// and, with MCPFLEET_LAB_SCREENSHOT=1, as docs/lab.png.
func saveScreenshot(t *testing.T, png []byte) {
	t.Helper()
	paths := []string{filepath.Join(t.TempDir(), "lab.png")}
	if os.Getenv("MCPFLEET_LAB_SCREENSHOT") == "1" {
		paths = append(paths, filepath.Join("..", "..", "docs", "lab.png"))
	}
	for _, p := range paths {
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatalf("saving screenshot: %v", err)
		}
		t.Logf("screenshot: %s", p)
	}
}

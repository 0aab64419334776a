package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// browser is a headless Chromium on the lab's page, with the page's
// console errors collected.
type browser struct {
	t    *testing.T
	ctx  context.Context
	url  string
	errs *consoleErrors
	done chan struct{} // closed when the console reader ends
	stop func()
	// expected are console errors a test provokes on purpose (the
	// browser logs a refused request); a message containing one passes.
	expected []string
}

// newBrowser starts Chromium against a fresh lab server; close checks the
// console.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromiumPath(t)
	srv := httptest.NewServer(New(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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
	bctx, cancelBrowser := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: bctx, url: srv.URL, errs: &consoleErrors{}, done: make(chan struct{})}
	b.stop = func() {
		cancelBrowser()
		cancelAlloc()
		cancel()
		srv.Close()
	}
	// Subscribe to the console before the page loads; read it until the
	// browser context ends.
	messages := chromedp.Console(bctx)
	go func() {
		defer close(b.done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.errs.mu.Lock()
				b.errs.msgs = append(b.errs.msgs, m.String())
				b.errs.mu.Unlock()
			}
		}
	}()
	return b
}

// close ends the browser and fails on any console error or exception.
func (b *browser) close() {
	b.t.Helper()
	b.stop()
	<-b.done
	for _, m := range b.errs.list() {
		if !slices.ContainsFunc(b.expected, func(e string) bool { return strings.Contains(m, e) }) {
			b.t.Errorf("browser console: %s", m)
		}
	}
}

// act runs steps that change a setting and waits until the page has
// redrawn after them: at least one more run finished, none pending.
func (b *browser) act(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	before, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`window.labRuns || 0`))
	if err != nil {
		b.t.Fatalf("%s: reading window.labRuns: %v", what, err)
	}
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	expr := fmt.Sprintf("window.labIdle === true && window.labRuns > %d", before)
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		b.t.Fatalf("waiting for the redraw after %s: %v", what, err)
	}
}

// do runs steps that need no redraw.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// stars reads the stars the page shows for the mission played.
func (b *browser) stars() string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById("stars").dataset.stars`))
	if err != nil {
		b.t.Fatalf("reading stars: %v", err)
	}
	return v
}

// TestBrowserMissionOne plays mission 1 in headless Chromium: load the
// broken fleet (0 stars), set the keep-alive to 30 s (3 stars), and check the
// tiles against sim.Run of the same scenario.
func TestBrowserMissionOne(t *testing.T) {
	b := newBrowser(t)
	defer b.close()
	bctx, act, do, stars := b.ctx, b.act, b.do, b.stars

	act("loading the page", chromedp.Navigate(b.url+"/"), chromedp.WaitVisible(chromedp.ID("mission-1")))

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

// TestBrowserRunawayAgent checks the gateway and limit controls and plays
// mission 7: loading it sets them to its broken fleet (0 stars), and the
// shared store with two gateways earns 3 stars.
func TestBrowserRunawayAgent(t *testing.T) {
	b := newBrowser(t)
	defer b.close()
	m, err := sim.MissionByNumber(7)
	if err != nil {
		t.Fatal(err)
	}

	// Mission 7 unlocks once mission 6 has a star.
	b.act("loading the page", chromedp.Navigate(b.url+"/"), chromedp.WaitVisible(chromedp.ID("mission-1")))
	b.do("remembering a star for mission 6", chromedp.Evaluate[chromedp.Void](`localStorage.setItem("mcpfleet.lab.stars", JSON.stringify({"6": 1}))`))
	b.do("reloading the page", chromedp.Reload(), chromedp.WaitEnabled(chromedp.ID("mission-7")))
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`window.labIdle === true && window.labRuns > 0`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("waiting for the first run after the reload: %v", err)
	}

	controls := []string{"gateways", "limit_store", "limit_rate", "limit_burst", "limit_concurrency", "runaway_rate", "runaway"}
	for _, id := range controls {
		labelled, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](fmt.Sprintf(
			`(() => { const el = document.getElementById(%q); return !!el && (el.tagName === "BUTTON" || !!document.querySelector('label[for=%q]')); })()`, id, id)))
		if err != nil || !labelled {
			t.Errorf("control %s missing or without a label (%v)", id, err)
		}
	}

	b.act("loading mission 7", chromedp.Click(chromedp.ID("mission-7")), chromedp.Click(chromedp.ID("load-mission")))
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[map[string]string](`({
		gateways: document.getElementById("gateways").value,
		gatewaysShown: document.getElementById("gateways-out").textContent,
		limit_store: document.getElementById("limit_store").value,
		limit_rate: document.getElementById("limit_rate").value,
		limit_burst: document.getElementById("limit_burst").value,
		limit_concurrency: document.getElementById("limit_concurrency").value,
		runaway_rate: document.getElementById("runaway_rate").value,
		runaway: document.getElementById("runaway").getAttribute("aria-pressed"),
	})`))
	if err != nil {
		t.Fatalf("reading the controls: %v", err)
	}
	s := m.Broken
	want := map[string]string{
		"gateways": strconv.Itoa(s.Gateways), "gatewaysShown": strconv.Itoa(s.Gateways),
		"limit_store": s.LimitStore, "limit_rate": strconv.FormatFloat(s.LimitRate, 'g', -1, 64),
		"limit_burst": strconv.Itoa(s.LimitBurst), "limit_concurrency": strconv.Itoa(s.LimitConcurrency),
		"runaway_rate": strconv.FormatFloat(s.RunawayRate, 'g', -1, 64), "runaway": strconv.FormatBool(s.Runaway),
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("after loading mission 7, %s shows %q, want %q", k, got[k], w)
		}
	}
	if st := b.stars(); st != "0" {
		t.Errorf("mission 7's broken setup shows %q stars, want 0", st)
	}
	res := sim.MustRun(s)
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('#tiles [data-figure="runaway_admitted_rate"] .value').dataset.raw`))
	if err != nil || raw != strconv.FormatFloat(res.RunawayAdmittedRate, 'g', -1, 64) {
		t.Errorf("runaway tile holds %q (%v), sim.Run gives %v", raw, err, res.RunawayAdmittedRate)
	}

	b.act("sharing the limit store", chromedp.Evaluate[chromedp.Void](
		`(() => { const el = document.getElementById("limit_store"); el.value = "shared"; el.dispatchEvent(new Event("change", {bubbles: true})); })()`))
	if st := b.stars(); st != "2" {
		t.Errorf("mission 7 with a shared store behind 3 gateways shows %q stars, want 2", st)
	}
	b.act("two gateways", chromedp.Focus(chromedp.ID("gateways")), chromedp.SendKeys(chromedp.ID("gateways"), kb.ArrowLeft))
	if st := b.stars(); st != "3" {
		t.Errorf("mission 7 with a shared store behind 2 gateways shows %q stars, want 3", st)
	}
	story, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById("story").textContent`))
	if err != nil || !strings.Contains(story, "runaway agent") {
		t.Errorf("the story does not tell of the runaway agent (%v): %s", err, story)
	}
}

// pageState is what loading a real run may change: the tiles, the
// timeline's pixels and the run header.
type pageState struct {
	Tiles    string `json:"tiles"`
	Timeline string `json:"timeline"`
	Header   bool   `json:"header"`
	Error    string `json:"error"`
}

func (b *browser) pageState() pageState {
	b.t.Helper()
	st, err := chromedp.Run(b.ctx, chromedp.Evaluate[pageState](`({
		tiles: document.getElementById("tiles").innerHTML,
		timeline: document.getElementById("timeline").toDataURL(),
		header: !document.getElementById("real-run").hidden,
		error: document.getElementById("real-error").hidden ? "" : document.getElementById("real-error").textContent,
	})`))
	if err != nil {
		b.t.Fatalf("reading the page: %v", err)
	}
	return st
}

// upload puts file in the real-run input and waits until the page has
// read it.
func (b *browser) upload(what, file string) {
	b.t.Helper()
	before, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`window.labRealLoads`))
	if err != nil {
		b.t.Fatalf("%s: reading window.labRealLoads: %v", what, err)
	}
	b.do(what, chromedp.SetUploadFiles(chromedp.ID("real-file"), []string{file}))
	expr := fmt.Sprintf("window.labRealLoads > %d", before)
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		b.t.Fatalf("waiting for the page to read %s: %v", what, err)
	}
}

// TestBrowserRealRun loads a real run's JSON beside the simulated run: the
// tiles show both values, the timeline draws the real series dashed, the
// run header shows speed, fleet, era and the CPU verdict; a file that is
// not a result shows an error and changes nothing else.
func TestBrowserRealRun(t *testing.T) {
	b := newBrowser(t)
	defer b.close()
	// Each refused file is a 400 from /api/validate, which the browser logs.
	b.expected = []string{"status of 400 (Bad Request)"}
	dir := t.TempDir()
	write := func(name string, body []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s := sim.Default()
	want := sim.MustRun(s)
	realJSON := realRunJSON(t, s, 7)
	good := write("load.json", realJSON)
	bad := write("bad.json", []byte(strings.Replace(string(realJSON), `"era":"2025"`, `"era":"2025","host":"ci"`, 1)))
	wrapped := write("mission.json", []byte(`{"mission": 1, "goal_met": false, "result": `+string(realJSON)+`}`))

	b.act("loading the page", chromedp.Navigate(b.url+"/"), chromedp.WaitVisible(chromedp.ID("mission-1")))
	label, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('label[for="real-file"]').textContent`))
	if err != nil || label != "Load a real run (mcpfleet load --json)" {
		t.Errorf("the file input's label is %q (%v)", label, err)
	}

	before := b.pageState()
	b.upload("a file that is not a result", bad)
	after := b.pageState()
	if !strings.Contains(after.Error, "Not loaded") || !strings.Contains(after.Error, "host") {
		t.Errorf("the error shown for an unknown member is %q, want it to name host", after.Error)
	}
	if after.Tiles != before.Tiles || after.Timeline != before.Timeline || after.Header {
		t.Error("a file that is not a result changed the tiles, the timeline or the header")
	}

	b.upload("a real run", good)
	loaded := b.pageState()
	if loaded.Error != "" || !loaded.Header {
		t.Errorf("after a real run: error %q, header shown %v; want no error and the header", loaded.Error, loaded.Header)
	}
	if loaded.Timeline == before.Timeline {
		t.Error("the timeline did not change with the real run")
	}
	checkRealTiles(t, b, want, want)
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[map[string]string](`({
		sim: document.getElementById("timeline").dataset.simSeries,
		real: document.getElementById("timeline").dataset.realSeries,
		legend: document.getElementById("timeline-legend").textContent,
		desc: document.getElementById("real-desc").textContent,
		cpu: document.getElementById("real-cpu").textContent,
		latency: document.getElementById("latency-real").textContent,
	})`))
	if err != nil {
		t.Fatalf("reading the charts: %v", err)
	}
	n := strconv.Itoa(s.Replicas)
	if got["sim"] != n || got["real"] != n {
		t.Errorf("timeline draws %s simulated and %s real series, want %s of each", got["sim"], got["real"], n)
	}
	for k, sub := range map[string]string{"legend": "dashed", "desc": "speed 20x", "cpu": "more replicas would help", "latency": "Real run"} {
		if !strings.Contains(got[k], sub) {
			t.Errorf("%s reads %q, want %q in it", k, got[k], sub)
		}
	}
	if !strings.Contains(got["desc"], "era 2025") || !strings.Contains(got["desc"], "3 replicas started") {
		t.Errorf("the run header reads %q, want the era and the fleet", got["desc"])
	}

	b.upload("a file that is not a result, over the real run", bad)
	again := b.pageState()
	if again.Error == "" || again.Tiles != loaded.Tiles || again.Timeline != loaded.Timeline || !again.Header {
		t.Error("a file that is not a result changed the real run shown, or showed no error")
	}

	b.upload("a real run in its mission", wrapped)
	desc, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById("real-desc").textContent`))
	if err != nil || !strings.Contains(desc, "Mission 1: goal not met") || b.pageState().Error != "" {
		t.Errorf("after the wrapped run the header reads %q (%v), want its mission", desc, err)
	}

	b.act("adding a replica with the real run loaded", chromedp.Focus(chromedp.ID("replicas")), chromedp.SendKeys(chromedp.ID("replicas"), kb.ArrowRight))
	more := s
	more.Replicas++
	checkRealTiles(t, b, sim.MustRun(more), want)

	b.do("clearing the real run", chromedp.Click(chromedp.ID("real-clear")))
	if n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("#tiles .real-value").length`)); err != nil || n != 0 {
		t.Errorf("after clearing, %d tiles show a real value (%v)", n, err)
	}
}

// checkRealTiles checks that the tiles show the simulated figures of
// simulated and the real run's: those of base, which realRunJSON made it
// from, with 7 calls moved from completed to failed.
func checkRealTiles(t *testing.T, b *browser, simulated, base *sim.Result) {
	t.Helper()
	real := map[string]int{"calls_issued": base.Issued, "completed": base.Completed - 7, "failed": base.Failed + 7}
	sims := map[string]int{"calls_issued": simulated.Issued, "completed": simulated.Completed, "failed": simulated.Failed}
	for key, r := range real {
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[map[string]string](fmt.Sprintf(`(() => {
			const tile = document.querySelector('#tiles [data-figure="%s"]');
			const rv = tile.querySelector(".real-value");
			return {sim: tile.querySelector(".value").dataset.raw, real: rv ? rv.dataset.raw : "", text: tile.textContent};
		})()`, key)))
		if err != nil {
			t.Fatalf("tile %s: %v", key, err)
		}
		if got["sim"] != strconv.Itoa(sims[key]) || got["real"] != strconv.Itoa(r) {
			t.Errorf("tile %s holds sim %s, real %s; want %d and %d", key, got["sim"], got["real"], sims[key], r)
		}
		if !strings.Contains(got["text"], strconv.Itoa(sims[key])) || !strings.Contains(got["text"], strconv.Itoa(r)) {
			t.Errorf("tile %s reads %q, want both values", key, got["text"])
		}
	}
}

// TestBrowserHalfFinishedDeploy plays mission 8: loading it turns the new
// tool and the deploy on with round-robin (calls fail with unknown tool, 0
// stars); mcpfleet routing, tool-aware, earns 3 stars, and the gateway's
// tool watcher turned off (tools refresh 0) loses them.
func TestBrowserHalfFinishedDeploy(t *testing.T) {
	b := newBrowser(t)
	defer b.close()
	m, err := sim.MissionByNumber(8)
	if err != nil {
		t.Fatal(err)
	}

	// Mission 8 unlocks once mission 7 has a star.
	b.act("loading the page", chromedp.Navigate(b.url+"/"), chromedp.WaitVisible(chromedp.ID("mission-1")))
	b.do("remembering a star for mission 7", chromedp.Evaluate[chromedp.Void](`localStorage.setItem("mcpfleet.lab.stars", JSON.stringify({"7": 1}))`))
	b.do("reloading the page", chromedp.Reload(), chromedp.WaitEnabled(chromedp.ID("mission-8")))
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`window.labIdle === true && window.labRuns > 0`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("waiting for the first run after the reload: %v", err)
	}
	for _, id := range []string{"new_tool", "new_tool_share", "tools_refresh_s"} {
		labelled, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](fmt.Sprintf(
			`(() => { const el = document.getElementById(%q); return !!el && (el.tagName === "BUTTON" || !!document.querySelector('label[for=%q]')); })()`, id, id)))
		if err != nil || !labelled {
			t.Errorf("control %s missing or without a label (%v)", id, err)
		}
	}

	b.act("loading mission 8", chromedp.Click(chromedp.ID("mission-8")), chromedp.Click(chromedp.ID("load-mission")))
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[map[string]string](`({
		name: document.getElementById("mission-name").textContent,
		routing: document.getElementById("routing").value,
		new_tool: document.getElementById("new_tool").getAttribute("aria-pressed"),
		deploy: document.getElementById("deploy").getAttribute("aria-pressed"),
		new_tool_share: document.getElementById("new_tool_share").value,
		tools_refresh_s: document.getElementById("tools_refresh_s").value,
		unknown: document.querySelector('#tiles [data-figure="unknown_tool"] .value').dataset.raw,
	})`))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	s := m.Broken
	broken := sim.MustRun(s)
	want := map[string]string{
		"routing": s.Routing, "new_tool": "true", "deploy": "true",
		"new_tool_share":  strconv.FormatFloat(s.NewToolShare, 'g', -1, 64),
		"tools_refresh_s": strconv.FormatFloat(s.ToolsRefresh, 'g', -1, 64),
		"unknown":         strconv.Itoa(broken.UnknownTool),
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("after loading mission 8, %s shows %q, want %q", k, got[k], w)
		}
	}
	if !strings.Contains(got["name"], "The half-finished deploy") || broken.UnknownTool == 0 {
		t.Errorf("mission 8 is %q with %d unknown tool; want the half-finished deploy, failing", got["name"], broken.UnknownTool)
	}
	if st := b.stars(); st != "0" {
		t.Errorf("mission 8's broken setup shows %q stars, want 0", st)
	}

	setRouting := `(() => { const el = document.getElementById("routing"); el.value = "mcpfleet"; el.dispatchEvent(new Event("change", {bubbles: true})); })()`
	b.act("switching routing to mcpfleet", chromedp.Evaluate[chromedp.Void](setRouting))
	if st := b.stars(); st != "3" {
		t.Errorf("mission 8 with mcpfleet routing shows %q stars, want 3", st)
	}
	read := func() map[string]string {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[map[string]string](`({
			unknown: document.querySelector('#tiles [data-figure="unknown_tool"] .value').dataset.raw,
			failed: document.querySelector('#tiles [data-figure="failed"] .value').dataset.raw,
			story: document.getElementById("story").textContent,
		})`))
		if err != nil {
			t.Fatalf("reading the tiles: %v", err)
		}
		return v
	}
	if v := read(); v["unknown"] != "0" || v["failed"] != "0" || !strings.Contains(v["story"], "declare") {
		t.Errorf("with mcpfleet: unknown tool %s, failed %s, story %q; want 0, 0 and the tool-aware routing told", v["unknown"], v["failed"], v["story"])
	}

	b.act("turning the tool watcher off",
		chromedp.SetValue(chromedp.ID("tools_refresh_s"), ""),
		chromedp.SendKeys(chromedp.ID("tools_refresh_s"), "0\t"))
	if st := b.stars(); st != "0" {
		t.Errorf("mission 8 with mcpfleet and no tool watcher shows %q stars, want 0", st)
	}
	off := m.Reference
	off.ToolsRefresh = 0
	if v := read(); v["unknown"] != strconv.Itoa(sim.MustRun(off).UnknownTool) || v["unknown"] == "0" {
		t.Errorf("without the watcher the unknown tool tile holds %s, sim.Run gives %d", v["unknown"], sim.MustRun(off).UnknownTool)
	}
}

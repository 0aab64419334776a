package load

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfleet/mcpfleet/internal/sim"
	"github.com/mcpfleet/mcpfleet/internal/testserver"
)

// Report is a real run's figures: the simulator's Result, figure for
// figure and in its JSON schema, and the run's own header.
type Report struct {
	*sim.Result
	Run RunInfo `json:"run"`
}

// RunInfo says how a real run was made.
type RunInfo struct {
	// Source is "load": the figures were measured.
	Source string `json:"source"`
	// URL is the endpoint the clients called (the idle cutter's, when one
	// was in front).
	URL string `json:"url"`
	// Fleet is how many replicas the run started; 0 for an existing endpoint.
	Fleet int `json:"fleet"`
	// Speed is the time compression: model seconds per real second.
	Speed float64 `json:"speed"`
	// Era is the clients' protocol era, "2025" or "2026".
	Era string `json:"era"`
	// WallSeconds is how long the run took, start to end.
	WallSeconds float64 `json:"wall_s"`
	// CPU is where the CPU went while the traffic ran.
	CPU *CPUReport `json:"cpu,omitempty"`
	// Audit holds what only a real fleet shows: the ledger against the
	// clients' answers, and the gateways' own retries.
	Audit *Audit `json:"audit,omitempty"`
	// Notes are what the figures cannot show on their own.
	Notes []string `json:"notes,omitempty"`
}

// call is one logical call's fate.
type callState struct {
	done     bool // answered with a success
	failed   bool // given up
	saw404   bool
	reissues int
	attempts int           // sent, the first included
	latency  time.Duration // real, first send to final answer
}

// run is one run's state.
type run struct {
	o       *Options
	calls   []sim.Call
	clients []*client
	m       *meter
	t0      time.Time
	states  []callState

	mu       sync.Mutex // guards failures
	failures []time.Duration

	inFlight atomic.Int64
	issued   atomic.Int64
	finished atomic.Int64
}

// Run sends the scenario's traffic and reports. It binds loopback ports
// only, stops every process it started and removes its files.
func Run(ctx context.Context, opts *Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	s := &o.Scenario
	wallStart := time.Now()
	dir, err := os.MkdirTemp("", "mcpfleet-load-")
	if err != nil {
		return nil, fmt.Errorf("making the run's directory: %w", err)
	}
	defer os.RemoveAll(dir)

	endpoint := o.URL
	var f *fleet
	if o.Fleet {
		if f, err = startFleet(ctx, &o, dir); err != nil {
			return nil, err
		}
		defer f.close()
		endpoint = f.front
	}
	r := &run{o: &o, calls: sim.Traffic(s)}
	r.states = make([]callState, len(r.calls))
	r.t0 = time.Now().Add(100 * time.Millisecond)
	var cut *cutter
	if s.IdleTimeout > 0 {
		if cut, err = startCutter(endpoint, o.real(s.IdleTimeout), r.t0); err != nil {
			return nil, err
		}
		defer cut.close()
		endpoint = cut.url(pathOf(endpoint))
	}
	r.m = newMeter(s.Clients, sim.RunawayClient(s), r.t0)
	if cut != nil {
		r.m.cut = cut.resumed
	}
	version := "2025-11-25"
	if s.Protocol == sim.Rev2026 {
		version = "2026-07-28"
	}
	for i := range s.Clients {
		r.clients = append(r.clients, newClient(i, endpoint, version, r.m))
	}
	o.Logger.Info("load begins", "url", endpoint, "calls", len(r.calls), "speed", o.Speed)

	watch := newCPUWatch(&o, f)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var bg sync.WaitGroup
	var kills []time.Duration
	var deployErr error
	if f != nil && s.Deploy {
		bg.Go(func() {
			if sleep(ctx, time.Until(r.t0.Add(o.real(s.DeployAt)))) != nil {
				return
			}
			o.Logger.Info("rolling deploy begins")
			kills, deployErr = f.deploy(ctx, r.t0)
		})
	}
	var samples [][]health
	sampled := make(chan struct{})
	if f != nil {
		go func() {
			defer close(sampled)
			samples = r.sampleReplicas(ctx, f)
		}()
	} else {
		close(sampled)
	}
	stopProgress := r.progress(ctx)

	r.send(ctx)
	trafficEnd := time.Since(r.t0)
	cpu := watch.finish()
	bg.Wait()
	cancel()
	<-sampled
	stopProgress()
	for _, c := range r.clients {
		c.close()
	}
	if deployErr != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("rolling deploy: %w", deployErr)
	}
	if err := parent.Err(); err != nil {
		return nil, err
	}
	var ledger []testserver.LedgerEntry
	var retries map[string]int
	if f != nil {
		retries = f.gatewayRetries()
		f.close() // the ledger is read with every replica stopped
		if ledger, err = readLedger(f.ledger); err != nil {
			return nil, err
		}
	}
	res := r.tally(trafficEnd, samples, ledger, kills, f, cut)
	rep := &Report{Result: res, Run: RunInfo{
		Source: "load", URL: endpoint, Speed: o.Speed, Era: era(s),
		WallSeconds: round3(time.Since(wallStart).Seconds()), CPU: cpu,
	}}
	if f != nil {
		rep.Run.Fleet = len(f.replicas)
		rep.Run.Audit = r.audit(ledger, retries)
	}
	rep.Run.Notes = notes(&o, f)
	return rep, nil
}

// pathOf is u's path, "/mcp" when it has none.
func pathOf(u string) string {
	for i := len("http://"); i < len(u); i++ {
		if u[i] == '/' {
			return u[i:]
		}
	}
	return "/mcp"
}

// readLedger reads the fleet's mutation ledger; no file means no mutation.
func readLedger(path string) ([]testserver.LedgerEntry, error) {
	file, err := os.Open(filepath.Clean(path))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening the ledger: %w", err)
	}
	defer file.Close()
	return testserver.ReadLedger(file)
}

// send issues every call at its time and waits for every call to end.
func (r *run) send(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range r.calls {
		if sleep(ctx, time.Until(r.t0.Add(r.o.real(r.calls[i].At.Seconds())))) != nil {
			break
		}
		r.issued.Add(1)
		wg.Go(func() { r.issue(ctx, i) })
	}
	wg.Wait()
}

// issue runs logical call i as the simulator's client does: sends it, and
// on a 404 re-initializes, on a 429 waits the hint, on a cut or an error
// sends it again, up to MaxReissues times.
func (r *run) issue(ctx context.Context, i int) {
	r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	defer r.finished.Add(1)
	c := &r.calls[i]
	st := &r.states[i]
	start := r.t0.Add(r.o.real(c.At.Seconds()))
	cl := r.clients[c.Client]
	for {
		ok, delay, saw404 := r.attempt(ctx, cl, i)
		st.attempts++
		st.saw404 = st.saw404 || saw404
		if ok {
			st.done, st.latency = true, time.Since(start)
			r.o.Logger.Debug("call done", "call", i, "model_duration_s", c.Duration.Seconds(), "model_latency_s", r.o.model(st.latency), "reissues", st.reissues)
			return
		}
		if ctx.Err() != nil {
			return
		}
		if st.reissues >= r.o.Scenario.MaxReissues {
			st.failed = true
			r.mu.Lock()
			r.failures = append(r.failures, time.Since(r.t0))
			r.mu.Unlock()
			return
		}
		st.reissues++
		if sleep(ctx, delay) != nil {
			return
		}
	}
}

// attempt sends call i once and says whether it succeeded, how long to
// wait before sending it again, and whether it met a 404.
func (r *run) attempt(ctx context.Context, cl *client, i int) (ok bool, again time.Duration, saw404 bool) {
	s := &r.o.Scenario
	c := &r.calls[i]
	roundTrip := r.o.real(s.RoundTrip)
	cs, gen, err := cl.session(ctx)
	if err != nil {
		if sessionGone(err) {
			cl.drop(gen)
		}
		return false, r.o.real(1), false // nowhere to send it: the balancer's 503
	}
	params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": r.o.real(c.Duration.Seconds()).Seconds()}}
	switch {
	case r.o.Burn > 0:
		params = &mcp.CallToolParams{Name: "burn", Arguments: map[string]any{"ms": r.o.Burn}}
	case c.Mutates():
		at := 0.5
		if c.Duration > 0 {
			at = float64(c.MutateAt) / float64(c.Duration)
		}
		params = &mcp.CallToolParams{Name: "mutate", Arguments: map[string]any{
			"key": callKey(i), "seconds": r.o.real(c.Duration.Seconds()).Seconds(), "at": at}}
	case c.Progress > 0:
		params.Arguments.(map[string]any)["progress_every"] = r.o.real(c.Progress.Seconds()).Seconds()
		params.SetProgressToken(fmt.Sprintf("call-%d", i))
	}
	if s.Idempotency {
		params.Meta = mcp.Meta{idempotencyMeta: callKey(i)}
	}
	a := &answer{}
	timeout := r.o.real(c.Duration.Seconds()+s.DrainWindow+s.RebootSeconds) + 30*time.Second
	actx, cancel := context.WithTimeout(context.WithValue(ctx, answerKey{}, a), timeout)
	defer cancel()
	res, err := cs.CallTool(actx, params)
	if err == nil && !res.IsError {
		return true, 0, false
	}
	status, wait := a.get()
	switch status {
	case http.StatusNotFound:
		cl.drop(gen) // 2025-11-25 "Session Management": start a new session
		return false, roundTrip, true
	case http.StatusTooManyRequests:
		return false, wait, false
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return false, r.o.real(1), false
	}
	if err != nil && sessionGone(err) {
		cl.drop(gen)
	}
	r.o.Logger.Debug("attempt failed", "call", i, "status", status, "err", errText(err, res))
	return false, roundTrip, false
}

// sampleReplicas asks the replicas for their calls running and queued
// once a model second until ctx is done.
func (r *run) sampleReplicas(ctx context.Context, f *fleet) [][]health {
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer hc.CloseIdleConnections()
	every := max(20*time.Millisecond, r.o.real(1))
	var out [][]health
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
			out = append(out, f.sampleHealth(ctx, hc))
		}
	}
}

// progress prints a line a second to o.Progress until the returned func
// is called.
func (r *run) progress(ctx context.Context) func() {
	if r.o.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				el := time.Since(r.t0)
				fmt.Fprintf(r.o.Progress, "load: %5.1fs real, model %6.1f/%g s: %d/%d calls sent, %d ended, %d in flight\n",
					el.Seconds(), r.o.model(el), r.o.Scenario.TrafficSeconds, r.issued.Load(), len(r.calls), r.finished.Load(), r.inFlight.Load())
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// errText says why an attempt failed: the SDK's error or the tool's.
func errText(err error, res *mcp.CallToolResult) string {
	if err != nil {
		return err.Error()
	}
	if res != nil && len(res.Content) > 0 {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			return "tool error: " + t.Text
		}
	}
	return "tool error"
}

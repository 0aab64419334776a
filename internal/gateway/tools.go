package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/tools"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// Tools across the fleet (docs/GATEWAY.md): the gateway lists every
// replica's tools itself (tools/list, every page) at start, when a replica
// appears or comes back up, every ToolOptions.Refresh, and at once when a
// replica's notifications/tools/list_changed passes through. It routes a
// tools/call among the replicas that declare its tool (tools.Declares), so
// a rolling deploy that adds a tool never sends a call of it to a replica
// that does not have it yet. With a lock (tools.lock_file) it holds every
// replica to the accepted definitions: a replica that breaks it is logged
// and counted (warn) or quarantined (no new work; its sessions answered
// 404 -32001) until its definitions match again. Without a lock, a replica
// whose tools differ from most replicas' is reported, never quarantined.

// ToolOptions turn the watcher on.
type ToolOptions struct {
	// List lists one replica's tools at its MCP endpoint (listing.List with
	// the probe's credential); it is required.
	List func(ctx context.Context, url string) ([]tools.Definition, string, error)
	// Refresh is how often every replica is listed again; 0 means 30 s.
	Refresh time.Duration
	// Lock holds the replicas to accepted definitions; nil: none.
	Lock *tools.Lock
	// Quarantine takes a replica whose tools break Lock out of new work;
	// false only reports it (tools.on_unlocked: warn).
	Quarantine bool
	// Timeout bounds one replica's listing; 0 means 5 s.
	Timeout time.Duration
}

// replicaTools is what the watcher knows of one replica.
type replicaTools struct {
	set      *tools.Set // the last listing that succeeded; nil before
	era      string
	listedAt time.Time
	err      string         // the last listing's failure; "" when it succeeded
	changes  []tools.Change // against the lock, or against the majority without one
	broken   bool           // a change breaks the lock
}

// toolWatch keeps every replica's tools. Routing reads sets, an immutable
// map swapped on every change, without a lock.
type toolWatch struct {
	g    *Gateway
	o    ToolOptions
	poke chan string

	sets atomic.Pointer[map[string]*tools.Set]

	mu    sync.Mutex // guards reps and wasUp
	reps  map[string]*replicaTools
	wasUp map[string]bool
}

func newToolWatch(g *Gateway, o *ToolOptions) *toolWatch {
	if o == nil || o.List == nil {
		return nil
	}
	w := &toolWatch{g: g, o: *o, poke: make(chan string, 64), reps: map[string]*replicaTools{}, wasUp: map[string]bool{}}
	if w.o.Refresh <= 0 {
		w.o.Refresh = 30 * time.Second
	}
	if w.o.Timeout <= 0 {
		w.o.Timeout = 5 * time.Second
	}
	empty := map[string]*tools.Set{}
	w.sets.Store(&empty)
	return w
}

// run lists the replicas until ctx ends: every one at once, then each that
// appears, comes back up or says its tools changed, and all every Refresh.
func (w *toolWatch) run(ctx context.Context) {
	w.listAll(ctx, true)
	refresh := time.NewTicker(w.o.Refresh)
	defer refresh.Stop()
	look := time.NewTicker(min(time.Second, w.o.Refresh))
	defer look.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
			w.listAll(ctx, true)
		case <-look.C:
			w.listAll(ctx, false)
		case name := <-w.poke:
			if name == "" {
				w.listAll(ctx, true)
			} else if rep := w.g.fleet.Snapshot().Lookup(name); rep != nil {
				w.list(ctx, rep)
			}
		}
	}
}

// listAll lists every replica (all) or those never listed or just back up.
func (w *toolWatch) listAll(ctx context.Context, all bool) {
	snap := w.g.fleet.Snapshot()
	var todo []*upstream.Replica
	w.mu.Lock()
	seen := map[string]bool{}
	for i := range snap.Len() {
		rep := snap.At(i)
		name := rep.Name()
		seen[name] = true
		up := rep.State() == upstream.StateUp
		_, known := w.reps[name]
		if all || !known || (up && !w.wasUp[name]) {
			todo = append(todo, rep)
		}
		w.wasUp[name] = up
	}
	for name := range w.reps { // replicas that left the fleet
		if !seen[name] {
			delete(w.reps, name)
			delete(w.wasUp, name)
		}
	}
	w.mu.Unlock()
	if len(todo) == 0 && !all {
		return
	}
	var wg sync.WaitGroup
	for _, rep := range todo {
		wg.Go(func() { w.list(ctx, rep) })
	}
	wg.Wait()
	w.evaluate()
}

// list lists one replica; a failure keeps its last known tools.
func (w *toolWatch) list(ctx context.Context, rep *upstream.Replica) {
	lctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	defs, era, err := w.o.List(lctx, rep.URL().String())
	cancel()
	var set *tools.Set
	if err == nil {
		set, err = tools.NewSet(defs)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rt := w.reps[rep.Name()]
	if rt == nil {
		rt = &replicaTools{}
		w.reps[rep.Name()] = rt
	}
	if err != nil {
		if rt.err == "" && ctx.Err() == nil {
			w.g.log.Warn("listing a replica's tools failed: its last known tools stand", "replica", rep.Name(), "error", err)
		}
		rt.err = err.Error()
		if rt.err == "" {
			rt.err = "failed"
		}
		return
	}
	rt.set, rt.era, rt.listedAt, rt.err = set, era, time.Now(), ""
	// Routing takes the new tools at once, not when the slowest of the
	// replicas listed with this one answers, and what /api/tools shows is
	// what routing uses.
	w.evaluateLocked()
}

// evaluate holds every listed replica to the lock (or the majority),
// quarantines or frees it, logs what changed, and publishes the sets.
func (w *toolWatch) evaluate() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.evaluateLocked()
}

func (w *toolWatch) evaluateLocked() {
	snap := w.g.fleet.Snapshot()
	var majority *tools.Set
	if w.o.Lock == nil {
		sets := make([]*tools.Set, 0, len(w.reps))
		for _, rt := range w.reps {
			sets = append(sets, rt.set)
		}
		if d, n := tools.Majority(sets); n > 1 {
			for _, rt := range w.reps {
				if rt.set.Digest() == d {
					majority = rt.set
					break
				}
			}
		}
	}
	pub := make(map[string]*tools.Set, len(w.reps))
	for name, rt := range w.reps {
		if rt.set == nil {
			continue
		}
		pub[name] = rt.set
		var changes []tools.Change
		switch {
		case w.o.Lock != nil:
			changes = w.o.Lock.Against(rt.set)
		case majority != nil && rt.set.Digest() != majority.Digest():
			changes = tools.Compare(majority, rt.set)
		}
		broken := w.o.Lock != nil && slices.ContainsFunc(changes, tools.Change.Violation)
		if !slices.Equal(changes, rt.changes) {
			for _, c := range changes {
				msg := "replica's tools differ from most replicas'"
				if w.o.Lock != nil {
					msg = "replica's tools differ from the lock"
				}
				w.g.log.Warn(msg, "replica", name, "tool", c.Tool, "change", c.What)
			}
		}
		rt.changes, rt.broken = changes, broken
		rep := snap.Lookup(name)
		if rep == nil {
			continue
		}
		q := broken && w.o.Quarantine
		if rep.SetQuarantined(q) {
			if q {
				w.g.log.Error("replica quarantined: its tools break the lock; it takes no new work and its sessions end", "replica", name)
			} else {
				w.g.log.Info("replica's tools match the lock again: it takes new work", "replica", name)
			}
		}
	}
	w.sets.Store(&pub)
}

// declares reports whether the replica named name declares tool, by its
// last listing; a replica not listed yet declares nothing.
func (w *toolWatch) declares(name, tool string) bool {
	return (*w.sets.Load())[name].Has(tool)
}

// listChanged is the method that makes the watcher list a replica again.
var listChanged = []byte("notifications/tools/list_changed")

// noticed takes a replica's notification: a tools/list_changed lists it
// again at once (every replica, when rep is nil: a merged stream's).
func (w *toolWatch) noticed(rep *upstream.Replica, data []byte) {
	if w == nil || !bytes.Contains(data, listChanged) {
		return
	}
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(data, &m) != nil || m.Method != "notifications/tools/list_changed" {
		return
	}
	name := ""
	if rep != nil {
		name = rep.Name()
	}
	select {
	case w.poke <- name:
	default: // a listing is due anyway
	}
}

// toolFilter returns, for a tools/call, which replicas of snap it may go
// to by their tools (tools.Declares); nil when any may.
// A call the policy alone would have sent to a replica without its tool
// is counted as rerouted.
func (g *Gateway) toolFilter(q *request, snap *upstream.Snapshot, in balance.Input) func(int) bool {
	w := g.tw
	if w == nil || q.msg.Method != "tools/call" || q.msg.Batch || q.msg.Name == "" {
		return nil
	}
	sets := *w.sets.Load()
	restricted, declared := false, false
	for i := range snap.Len() {
		if !snap.Eligible(i) {
			continue
		}
		if sets[snap.At(i).Name()].Has(q.msg.Name) {
			declared = true
		} else {
			restricted = true
		}
	}
	if !restricted || !declared {
		// Every eligible replica declares it, or none does (the call goes
		// as it would without the watch): nothing to filter.
		return nil
	}
	has := func(i int, tool string) bool { return sets[snap.At(i).Name()].Has(tool) }
	ok := tools.Declares(snap.Len(), q.msg.Name, snap.Eligible, has)
	if idx := balance.Pick(g.opts.Balance, snap, in, nil); idx >= 0 && !ok(idx) {
		g.metrics.toolReroutes.Inc()
	}
	return ok
}

// filtered is a snapshot that hides the replicas a filter refuses.
type filtered struct {
	*upstream.Snapshot
	ok func(int) bool
}

func (f filtered) Eligible(i int) bool { return f.Snapshot.Eligible(i) && f.ok(i) }

// toolsView is the watcher's state for GET /api/tools.
type toolsView struct {
	Lock     bool              `json:"lock"`
	Action   string            `json:"on_unlocked"`
	Majority string            `json:"majority_digest,omitempty"`
	Replicas []toolsReplicaOut `json:"replicas"`
}

type toolsReplicaOut struct {
	Name        string         `json:"name"`
	Digest      string         `json:"digest,omitempty"`
	Era         string         `json:"era,omitempty"`
	ListedAt    *time.Time     `json:"listed_at,omitempty"`
	Error       string         `json:"error,omitempty"`
	Quarantined bool           `json:"quarantined"`
	Tools       []toolOut      `json:"tools"`
	Changes     []tools.Change `json:"changes"`
}

type toolOut struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
	// Status is "ok" (locked, or like most replicas'), or the change.
	Status string `json:"status"`
}

// ToolsHandler serves GET /api/tools: what each replica serves, against
// the lock (or the majority); 404 when the watcher is off.
func (g *Gateway) ToolsHandler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			rw.Header().Set("Allow", "GET, HEAD")
			writeError(rw, errMethod, nil)
			return
		}
		if g.tw == nil {
			writeError(rw, &mcpmsg.Error{Status: http.StatusNotFound, Code: mcpmsg.CodeInvalidRequest, Message: "the tools watcher is off (tools.refresh 0s)"}, nil)
			return
		}
		b, _ := json.MarshalIndent(g.tw.view(), "", "  ")
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Cache-Control", "no-store")
		rw.Write(append(b, '\n'))
	})
}

func (w *toolWatch) view() toolsView {
	snap := w.g.fleet.Snapshot()
	w.mu.Lock()
	defer w.mu.Unlock()
	v := toolsView{Lock: w.o.Lock != nil, Action: "warn", Replicas: []toolsReplicaOut{}}
	if w.o.Quarantine {
		v.Action = "quarantine"
	}
	var sets []*tools.Set
	for _, rt := range w.reps {
		sets = append(sets, rt.set)
	}
	if d, _ := tools.Majority(sets); d != "" {
		v.Majority = d
	}
	for i := range snap.Len() {
		rep := snap.At(i)
		out := toolsReplicaOut{Name: rep.Name(), Quarantined: rep.Quarantined(), Tools: []toolOut{}, Changes: []tools.Change{}}
		if rt := w.reps[rep.Name()]; rt != nil {
			out.Digest, out.Era, out.Error = rt.set.Digest(), rt.era, rt.err
			if !rt.listedAt.IsZero() {
				at := rt.listedAt.UTC()
				out.ListedAt = &at
			}
			what := map[string]string{}
			for _, c := range rt.changes {
				what[c.Tool] = c.What
			}
			for _, n := range rt.set.Names() {
				t, _ := rt.set.Get(n)
				st := "ok"
				if c, ok := what[n]; ok {
					st = c
				}
				out.Tools = append(out.Tools, toolOut{Name: n, Digest: t.Digest, Status: st})
			}
			out.Changes = append(out.Changes, rt.changes...)
		}
		v.Replicas = append(v.Replicas, out)
	}
	return v
}

package load

import (
	"context"
	"runtime"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/bottleneck"
)

// CPUReport is where the CPU went while the traffic ran (docs/BOTTLENECK.md).
type CPUReport = bottleneck.Report

// cpuInterval is how often the bottleneck finder samples: often enough to
// keep the CPU of a replica a deploy stops.
const cpuInterval = 250 * time.Millisecond

// cpuWatch samples the CPU of this process (the load generator), every
// process of the fleet and the processes o.Watch names, from the start of
// traffic to its end.
type cpuWatch struct {
	s      *bottleneck.Sampler
	cancel context.CancelFunc
	done   chan struct{}
	snaps  []bottleneck.Snapshot
	err    error
}

func newCPUWatch(o *Options, f *fleet) *cpuWatch {
	s := bottleneck.New(nil)
	s.Add(bottleneck.Self())
	s.Add(o.Watch...)
	if f != nil {
		f.onStart = func(t bottleneck.Target) { s.Add(t) }
		s.Add(f.targets()...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &cpuWatch{s: s, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.snaps, w.err = s.Run(ctx, cpuInterval)
	}()
	return w
}

// finish stops sampling and analyses the whole run; nil when the machine
// could not be read (not Linux).
func (w *cpuWatch) finish() *CPUReport {
	w.cancel()
	<-w.done
	if w.err != nil || len(w.snaps) < 2 {
		return nil
	}
	r := bottleneck.Analyze(w.snaps[0], w.snaps[len(w.snaps)-1], w.s.Cores())
	return &r
}

// targets are the fleet's processes running now, for the finder.
func (f *fleet) targets() []bottleneck.Target {
	var ts []bottleneck.Target
	for _, r := range f.replicas {
		if p := r.process(); p != nil {
			ts = append(ts, bottleneck.Target{Name: r.name, Role: bottleneck.RoleReplica, PID: p.PID(), Cores: float64(f.o.ReplicaCores)})
		}
	}
	for _, g := range f.gateways {
		ts = append(ts, bottleneck.Target{Name: g.name, Role: bottleneck.RoleGateway, PID: g.process().PID(), Cores: float64(runtime.NumCPU())})
	}
	if f.lb != nil {
		ts = append(ts, bottleneck.Target{Name: "haproxy", Role: bottleneck.RoleBalancer, PID: f.lb.PID(), Cores: float64(runtime.NumCPU())})
	}
	if f.redis != nil {
		// redis-server runs commands on one thread.
		ts = append(ts, bottleneck.Target{Name: "redis-server", Role: bottleneck.RoleStore, PID: f.redis.PID(), Cores: 1})
	}
	return ts
}

// Match is every running process whose command line contains text, to
// watch as role other.
func Match(text string) ([]bottleneck.Target, error) {
	pids, err := bottleneck.Match(text)
	if err != nil || len(pids) == 0 {
		return nil, err
	}
	return bottleneck.ByPID(bottleneck.RoleOther, pids...)
}

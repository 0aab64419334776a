package bottleneck

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Unix(1_000_000, 0)

// load is a process busy for cpu cores over the interval.
type load struct {
	name, role string
	limit      float64 // Target.Cores
	cpu        float64 // cores
}

// measure builds two snapshots one second apart on two cores, the machine
// busy busy of the time and each process using its cores, and analyzes
// them.
func measure(t *testing.T, busy float64, loads ...load) Report {
	t.Helper()
	return measureSteal(t, busy, 0, loads...)
}

// measureSteal is measure with steal of the machine's time stolen.
func measureSteal(t *testing.T, busy, steal float64, loads ...load) Report {
	t.Helper()
	share := func(x float64) time.Duration { return time.Duration(x * float64(2*time.Second)) }
	first := Snapshot{At: t0, Uptime: 100 * time.Second, Machine: Machine{Busy: time.Hour, Total: 3 * time.Hour, Steal: time.Minute}}
	last := Snapshot{At: t0.Add(time.Second), Uptime: 101 * time.Second,
		Machine: Machine{Busy: time.Hour + share(busy), Total: 3*time.Hour + 2*time.Second, Steal: time.Minute + share(steal)}}
	for i, l := range loads {
		p := Proc{Target: Target{Name: l.name, Role: l.role, PID: 100 + i, Cores: l.limit}, Start: time.Second, CPU: time.Minute, Base: time.Minute}
		first.Procs = append(first.Procs, p)
		p.CPU += time.Duration(l.cpu * float64(time.Second))
		last.Procs = append(last.Procs, p)
	}
	return Analyze(first, last, 2)
}

func TestVerdictSaturatedMachine(t *testing.T) {
	r := measure(t, 0.93, load{"replica-1", RoleReplica, 1, 0.6}, load{"gateway", RoleGateway, 0, 1.22})
	want := Verdict{Saturated: true, Text: "the machine is out of CPU (93% of 2 cores): more replicas on this machine will not help; the largest share is gateway (gateway, 61%)"}
	if diff := cmp.Diff(want, r.Verdict); diff != "" {
		t.Errorf("verdict (-want +got):\n%s", diff)
	}
}

func TestVerdictPinnedAdviceByRole(t *testing.T) {
	tests := []struct {
		role, advice string
		help         bool
	}{
		{RoleReplica, "more replicas would help", true},
		{RoleGateway, "more gateway processes would help; more replicas would not", false},
		{RoleLoadGenerator, "the load generator is the bottleneck: the figures understate the fleet; more replicas would not help", false},
		{RoleStore, "the store is the bottleneck", false},
		{RoleBalancer, "the balancer is the bottleneck", false},
		{RoleOther, "more replicas would not help", false},
		{"unheard of", "more replicas would not help", false},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			r := measure(t, 0.6, load{"busy", tt.role, 1, 0.97}, load{"calm", RoleReplica, 1, 0.2})
			v := r.Verdict
			if v.Pinned != "busy" || v.Saturated || v.MoreReplicasHelp != tt.help {
				t.Errorf("verdict %+v, want busy pinned, more replicas help %v", v, tt.help)
			}
			prefix := "busy (" + tt.role + ") is pinned at 97% of a core while the machine has CPU to spare (60% of 2 cores): "
			if !strings.HasPrefix(v.Text, prefix) || !strings.Contains(v.Text, tt.advice) {
				t.Errorf("text %q, want %q then %q", v.Text, prefix, tt.advice)
			}
		})
	}
}

// TestVerdictCountsSteal: a single-core replica at 82% of its core while
// the hypervisor took 15% of the machine ran 97% of what its core gave it,
// pinned; at 70% it was not, and without steal 82% is not pinned either.
func TestVerdictCountsSteal(t *testing.T) {
	r := measureSteal(t, 0.65, 0.15, load{"replica-1", RoleReplica, 1, 0.82}, load{"gateway", RoleGateway, 0, 0.06})
	if r.MachineSteal != 0.15 {
		t.Errorf("machine_steal %v, want 0.15", r.MachineSteal)
	}
	want := "replica-1 (replica) is pinned at 82% of a core while the machine has CPU to spare (65% of 2 cores, 15% of it taken by the hypervisor): more replicas would help"
	if v := r.Verdict; v.Pinned != "replica-1" || !v.MoreReplicasHelp || v.Text != want {
		t.Errorf("verdict %+v, want the text %q", v, want)
	}
	if v := measureSteal(t, 0.65, 0.15, load{"replica-1", RoleReplica, 1, 0.70}).Verdict; v.Pinned != "" {
		t.Errorf("a replica at 70%% of a core with 15%% stolen: verdict %+v, want nothing pinned", v)
	}
	if v := measureSteal(t, 0.5, 0, load{"replica-1", RoleReplica, 1, 0.82}).Verdict; v.Pinned != "" || strings.Contains(v.Text, "hypervisor") {
		t.Errorf("a replica at 82%% of a core and no steal: verdict %+v, want nothing pinned and no word of a hypervisor", v)
	}
}

func TestVerdictNothingPinned(t *testing.T) {
	r := measure(t, 0.5, load{"replica-1", RoleReplica, 1, 0.45}, load{"gateway", RoleGateway, 2, 0.5})
	v := r.Verdict
	if v.Pinned != "" || v.Saturated || v.MoreReplicasHelp {
		t.Errorf("verdict %+v, want nothing pinned", v)
	}
	want := "nothing is pinned and the machine has CPU to spare: the limit is elsewhere (latency, slots, locks); the machine is at 50% of 2 cores, the busiest process gateway (gateway) at 50% of a core"
	if v.Text != want {
		t.Errorf("text %q\nwant %q", v.Text, want)
	}
}

func TestVerdictThresholds(t *testing.T) {
	tests := []struct {
		name      string
		busy      float64
		l         load
		pinned    string
		saturated bool
	}{
		{"machine at 90% is saturated", 0.90, load{"r", RoleReplica, 1, 0.5}, "", true},
		{"machine at 89.9% is not", 0.899, load{"r", RoleReplica, 1, 0.5}, "", false},
		{"saturated before pinned", 0.95, load{"r", RoleReplica, 1, 1}, "", true},
		{"90% of one core is pinned", 0.5, load{"r", RoleReplica, 1, 0.9}, "r", false},
		{"89.9% of one core is not", 0.5, load{"r", RoleReplica, 1, 0.899}, "", false},
		{"unknown cores count as one", 0.5, load{"r", RoleReplica, 0, 0.9}, "r", false},
		{"90% of two cores is pinned", 0.95 - 0.1, load{"g", RoleGateway, 2, 1.8}, "g", false},
		{"one core of two is not", 0.6, load{"g", RoleGateway, 2, 1}, "", false},
		{"half a core allowed, 0.45 used", 0.3, load{"r", RoleReplica, 0.5, 0.45}, "r", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := measure(t, tt.busy, tt.l).Verdict
			if v.Pinned != tt.pinned || v.Saturated != tt.saturated {
				t.Errorf("verdict %+v, want pinned %q, saturated %v", v, tt.pinned, tt.saturated)
			}
		})
	}
}

// TestVerdictNamesTheMostPinned: of two pinned processes the verdict names
// the one at the larger share of its cores.
func TestVerdictNamesTheMostPinned(t *testing.T) {
	r := measure(t, 0.8, load{"gateway", RoleGateway, 2, 1.85}, load{"replica", RoleReplica, 1, 0.99})
	if r.Verdict.Pinned != "replica" || !r.Verdict.MoreReplicasHelp {
		t.Errorf("verdict %+v, want the replica (99%%) over the gateway (92.5%%)", r.Verdict)
	}
	if !strings.Contains(measure(t, 0.8, load{"gateway", RoleGateway, 2, 1.9}).Verdict.Text, "at 95% of its 2 cores") {
		t.Error("a process of two cores is not described by them")
	}
}

// TestReportOrderAndJSON: processes by cpu_cores, then name; the JSON
// names are the agreed ones, floats rounded to three decimals.
func TestReportOrderAndJSON(t *testing.T) {
	r := measure(t, 0.4, load{"b", RoleReplica, 1, 0.2}, load{"a", RoleReplica, 1, 0.2}, load{"c", RoleStore, 0, 0.33333})
	got, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cores":2,"interval_s":1,"machine_busy":0.4,"machine_steal":0,"processes":[` +
		`{"name":"c","role":"store","pid":102,"cpu_cores":0.333,"machine_share":0.167},` +
		`{"name":"a","role":"replica","pid":101,"cpu_cores":0.2,"machine_share":0.1},` +
		`{"name":"b","role":"replica","pid":100,"cpu_cores":0.2,"machine_share":0.1}],` +
		`"verdict":{"pinned":"","saturated":false,"more_replicas_help":false,"text":"` + r.Verdict.Text + `"}}`
	if string(got) != want {
		t.Errorf("JSON\n%s\nwant\n%s", got, want)
	}
	roles := []RoleTotal{{Role: RoleReplica, CPUCores: 0.4, MachineShare: 0.2}, {Role: RoleStore, CPUCores: 0.333, MachineShare: 0.167}}
	if diff := cmp.Diff(roles, r.Roles()); diff != "" {
		t.Errorf("Roles (-want +got):\n%s", diff)
	}
}

// TestAnalyzeCountsRestartsAndLateTargets: a Name's processes add up: one
// gone since, one started after the first snapshot (all of its CPU), one
// running before it but added later (its CPU since first seen).
func TestAnalyzeCountsRestartsAndLateTargets(t *testing.T) {
	old := Proc{Target: Target{Name: "replica-1", Role: RoleReplica, PID: 10, Cores: 1}, Start: 50 * time.Second, CPU: time.Second, Base: time.Second}
	first := Snapshot{At: t0, Uptime: 100 * time.Second, Machine: Machine{Total: time.Hour}, Procs: []Proc{old}}
	gone := old
	gone.CPU, gone.Gone = 1500*time.Millisecond, true
	reborn := Proc{Target: Target{Name: "replica-1", Role: RoleReplica, PID: 20, Cores: 1}, Start: 100500 * time.Millisecond, CPU: 400 * time.Millisecond, Base: 300 * time.Millisecond}
	late := Proc{Target: Target{Name: "redis", Role: RoleStore, PID: 30}, Start: 10 * time.Second, CPU: 5300 * time.Millisecond, Base: 5 * time.Second}
	last := Snapshot{At: t0.Add(time.Second), Uptime: 101 * time.Second, Machine: Machine{Busy: 1200 * time.Millisecond, Total: time.Hour + 2*time.Second}, Procs: []Proc{gone, late, reborn}}
	r := Analyze(first, last, 2)
	want := []Process{
		{Name: "replica-1", Role: RoleReplica, PID: 20, CPUCores: 0.9, MachineShare: 0.45},
		{Name: "redis", Role: RoleStore, PID: 30, CPUCores: 0.3, MachineShare: 0.15},
	}
	if diff := cmp.Diff(want, r.Processes); diff != "" {
		t.Errorf("processes (-want +got):\n%s", diff)
	}
	if r.Verdict.Pinned != "replica-1" || r.MachineBusy != 0.6 {
		t.Errorf("report %+v, want replica-1 pinned, the machine 60%% busy", r)
	}
}

func TestAnalyzeWithoutTime(t *testing.T) {
	s := Snapshot{At: t0}
	r := Analyze(s, s, 0)
	if r.Cores != 1 || r.Interval != 0 || len(r.Processes) != 0 || !strings.HasPrefix(r.Verdict.Text, "no time passed") {
		t.Errorf("report %+v", r)
	}
}

// TestPeakFindsTheBusiestInterval: of three intervals, the second keeps
// the machine busiest.
func TestPeakFindsTheBusiestInterval(t *testing.T) {
	var snaps []Snapshot
	var busy time.Duration
	for i, b := range []float64{0, 0.3, 0.95, 0.4} {
		busy += time.Duration(b * float64(2*time.Second))
		snaps = append(snaps, Snapshot{At: t0.Add(time.Duration(i) * time.Second), Machine: Machine{Busy: busy, Total: time.Duration(i) * 2 * time.Second}})
	}
	if r := Peak(snaps, 2); r.MachineBusy != 0.95 || !r.Verdict.Saturated {
		t.Errorf("Peak = %+v, want the 95%% interval", r)
	}
	if r := Peak(snaps[:1], 2); r.Interval != 0 {
		t.Errorf("Peak of one snapshot = %+v", r)
	}
}

func TestWriteText(t *testing.T) {
	r := measure(t, 0.6, load{"replica-1", RoleReplica, 1, 0.97}, load{"gateway", RoleGateway, 0, 0.2})
	r.Processes[1].Gone = true
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `process         role     % of a core  % of machine
replica-1       replica  97.0         48.5
gateway (gone)  gateway  20.0         10.0
all             replica  97.0         48.5
all             gateway  20.0         10.0
machine: 60.0% busy of 2 cores over 1 s
verdict: replica-1 (replica) is pinned at 97% of a core while the machine has CPU to spare (60% of 2 cores): more replicas would help
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteText (-want +got):\n%s", diff)
	}
}

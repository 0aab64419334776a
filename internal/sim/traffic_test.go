package sim

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fleetFields are the Scenario fields that must not change the traffic:
// everything from Protocol on.
func fleetFields(t *testing.T) []string {
	t.Helper()
	typ := reflect.TypeFor[Scenario]()
	var names []string
	fleet := false
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		fleet = fleet || name == "Protocol"
		if fleet {
			names = append(names, name)
		}
	}
	if len(names) < 10 {
		t.Fatalf("found only %d fleet fields: %v", len(names), names)
	}
	return names
}

// changed returns s with field name set to another valid value.
func changed(t *testing.T, s Scenario, name string) Scenario {
	t.Helper()
	v := reflect.ValueOf(&s).Elem().FieldByName(name)
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int:
		v.SetInt(v.Int() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float() + 7)
	case reflect.String:
		next := map[string]string{
			Local2025: Rev2026, Shared2025: Local2025, Rev2026: Shared2025,
			RoundRobin: Fleet, Affinity: RoundRobin, Fleet: Affinity,
			LocalLimits: SharedLimits, SharedLimits: LocalLimits,
		}
		v.SetString(next[v.String()])
	default:
		t.Fatalf("field %s: unhandled kind %s", name, v.Kind())
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("changing %s: %v", name, err)
	}
	return s
}

func TestFleetSettingsNeverChangeTraffic(t *testing.T) {
	base := Default()
	base.SlowTools, base.HotClient = true, true
	want := Traffic(&base)
	if len(want) < 1000 {
		t.Fatalf("drew only %d calls", len(want))
	}
	for _, name := range fleetFields(t) {
		s := changed(t, base, name)
		if diff := cmp.Diff(want, Traffic(&s)); diff != "" {
			t.Errorf("changing %s changed the traffic (-before +after):\n%.2000s", name, diff)
		}
		if r := MustRun(s); r.Issued != len(want) {
			t.Errorf("changing %s: %d calls issued, %d drawn", name, r.Issued, len(want))
		}
	}
}

func TestInjectionsKeepTheBaseTraffic(t *testing.T) {
	base := Default()
	plain := Traffic(&base)

	slow := base
	slow.SlowTools = true
	withSlow := Traffic(&slow)
	if len(withSlow) != len(plain) {
		t.Fatalf("slow tools changed the call count: %d, %d", len(withSlow), len(plain))
	}
	slowCalls := 0
	for i, c := range withSlow {
		if c.Slow {
			slowCalls++
			if c.Duration < seconds(base.SlowMin) || c.Duration > seconds(base.SlowMax) || c.Progress < seconds(base.ProgressMin) {
				t.Fatalf("slow call %d out of range: %+v", i, c)
			}
			continue
		}
		if c != plain[i] {
			t.Fatalf("call %d changed by slow tools: %+v, was %+v", i, c, plain[i])
		}
	}
	if want := 0.02 * float64(len(plain)); float64(slowCalls) < want/2 || float64(slowCalls) > want*2 {
		t.Errorf("%d slow calls of %d, want about %.0f", slowCalls, len(plain), want)
	}

	hot := base
	hot.HotClient = true
	var rest []Call
	hotCalls, hotClient := 0, -1
	for _, c := range Traffic(&hot) {
		if !c.Hot {
			rest = append(rest, c)
			continue
		}
		hotCalls++
		if hotClient >= 0 && c.Client != hotClient {
			t.Fatalf("hot calls from clients %d and %d", hotClient, c.Client)
		}
		hotClient = c.Client
	}
	if diff := cmp.Diff(plain, rest); diff != "" {
		t.Errorf("the hot client changed the other calls:\n%.2000s", diff)
	}
	if want := 10 * 3.0 / 24 * 600; float64(hotCalls) < 0.8*want || float64(hotCalls) > 1.2*want {
		t.Errorf("%d hot calls, want about %.0f", hotCalls, want)
	}
}

func TestTrafficMatchesTheWorkload(t *testing.T) {
	s := Default()
	s.TrafficSeconds = 20_000
	calls := Traffic(&s)
	n := float64(len(calls))
	if want := s.ArrivalRate * s.TrafficSeconds; n < 0.98*want || n > 1.02*want {
		t.Errorf("%.0f calls, want about %.0f", n, want)
	}
	var sum float64
	mutating := 0
	perClient := make([]int, s.Clients)
	for i, c := range calls {
		if i > 0 && c.At < calls[i-1].At {
			t.Fatalf("call %d sent before call %d", i, i-1)
		}
		sum += c.Duration.Seconds()
		perClient[c.Client]++
		if c.Mutates() {
			mutating++
			if f := float64(c.MutateAt) / float64(c.Duration); f < s.MutateFrom-1e-9 || f > s.MutateTo+1e-9 {
				t.Fatalf("call %d mutates at %.3f of its run", i, f)
			}
		}
		if c.Duration > seconds(s.DurationCap) {
			t.Fatalf("call %d runs %v, over the cap", i, c.Duration)
		}
	}
	if mean, want := sum/n, MeanDuration(s.DurationMedian, s.DurationSigma, s.DurationCap); mean < 0.97*want || mean > 1.03*want {
		t.Errorf("mean duration %.4f s, want %.4f", mean, want)
	}
	if share := float64(mutating) / n; share < 0.39 || share > 0.41 {
		t.Errorf("mutating share %.3f, want 0.4", share)
	}
	for c, k := range perClient {
		if want := n / float64(s.Clients); float64(k) < 0.9*want || float64(k) > 1.1*want {
			t.Errorf("client %d sent %d calls, want about %.0f", c, k, want)
		}
	}
}

func TestScenarioJSONRoundTrip(t *testing.T) {
	s := scenarios()["everything"]
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	got := Default()
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, got); diff != "" {
		t.Fatalf("scenario changed through JSON:\n%s", diff)
	}
	if a, b := encode(t, MustRun(s)), encode(t, MustRun(got)); string(a) != string(b) {
		t.Fatal("a scenario read back from JSON runs differently")
	}
}

func TestRunawayKeepsTheBaseTraffic(t *testing.T) {
	base := Default()
	base.HotClient = true
	plain := Traffic(&base)
	s := base
	s.Runaway = true
	agent := RunawayClient(&s)
	if agent < 0 || agent >= s.Clients {
		t.Fatalf("runaway client %d", agent)
	}
	var rest []Call
	extra := 0
	for _, c := range Traffic(&s) {
		if !c.Runaway {
			rest = append(rest, c)
			continue
		}
		extra++
		if c.Client != agent {
			t.Fatalf("a runaway call from client %d, the agent is %d", c.Client, agent)
		}
	}
	if diff := cmp.Diff(plain, rest); diff != "" {
		t.Errorf("the runaway agent changed the other calls:\n%.2000s", diff)
	}
	if want := s.RunawayRate * s.TrafficSeconds; float64(extra) < 0.95*want || float64(extra) > 1.05*want {
		t.Errorf("%d runaway calls, want about %.0f", extra, want)
	}
	if off := Default(); RunawayClient(&off) != -1 {
		t.Error("a runaway client without the injection")
	}
}

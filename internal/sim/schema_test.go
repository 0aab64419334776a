package sim

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// missionJSON is what `mcpfleet sim --mission N --json` prints.
type missionJSON struct {
	Mission *Mission `json:"mission"`
	Stars   *Stars   `json:"stars"`
	Result  *Result  `json:"result"`
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSimOutputMatchesSchema: every shape `mcpfleet sim --json` prints for
// a run validates: the defaults, the injections and several gateways, every
// mission's broken and reference setups, bare and inside their mission.
func TestSimOutputMatchesSchema(t *testing.T) {
	busy := Default()
	busy.Protocol, busy.Routing, busy.Gateways = Shared2025, Fleet, 3
	busy.SlowTools, busy.Deploy, busy.HotClient, busy.Runaway, busy.NewTool = true, true, true, true, true
	busy.LimitRate, busy.LimitBurst, busy.LimitConcurrency = 2, 5, 12
	busy.TrafficSeconds = 120
	one := Default()
	one.Replicas, one.Protocol, one.TrafficSeconds = 1, Rev2026, 60
	cases := map[string]Scenario{"default": Default(), "three gateways, every injection": busy, "one replica": one}
	for _, m := range Missions() {
		cases["mission "+strconv.Itoa(m.Number)+" broken"] = m.Broken
		cases["mission "+strconv.Itoa(m.Number)+" reference"] = m.Reference
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			if err := ValidateResultJSON(mustJSON(t, MustRun(s))); err != nil {
				t.Error(err)
			}
		})
	}
	for _, m := range Missions() {
		t.Run("mission "+strconv.Itoa(m.Number)+" report", func(t *testing.T) {
			st, err := m.Evaluate(m.Broken)
			if err != nil {
				t.Fatal(err)
			}
			doc := missionJSON{Mission: &m, Stars: &st, Result: MustRun(m.Broken)}
			if err := ValidateResultJSON(mustJSON(t, doc)); err != nil {
				t.Error(err)
			}
		})
	}
}

// realRun is a real run's JSON as `mcpfleet load --json` prints it: a
// Result of a short run plus its run member, CPU included.
func realRun(t *testing.T) map[string]any {
	t.Helper()
	s := Default()
	s.TrafficSeconds = 30
	var doc map[string]any
	if err := json.Unmarshal(mustJSON(t, MustRun(s)), &doc); err != nil {
		t.Fatal(err)
	}
	doc["run"] = map[string]any{
		"source": "load", "url": "http://127.0.0.1:8080/mcp", "fleet": 3, "speed": 10.0,
		"era": "2025", "wall_s": 3.4,
		"cpu": map[string]any{
			"cores": 2, "interval_s": 0.5, "machine_busy": 0.62,
			"processes": []any{
				map[string]any{"name": "gateway", "role": "gateway", "pid": 4242, "cpu_cores": 0.4, "machine_share": 0.2},
				map[string]any{"name": "replica-1", "role": "replica", "pid": 4243, "cpu_cores": 0.1, "machine_share": 0.05},
				map[string]any{"name": "mcpfleet load", "role": "load generator", "pid": 4241, "cpu_cores": 0.7, "machine_share": 0.35},
			},
			"verdict": map[string]any{"pinned": "load generator", "saturated": false, "more_replicas_help": false,
				"text": "the load generator used 0.7 of 2 cores; the machine is not saturated"},
		},
		"notes": []any{"replicas started by the load generator on loopback"},
	}
	return doc
}

func TestRealRunMatchesSchema(t *testing.T) {
	full := realRun(t)
	bare := realRun(t)
	run := bare["run"].(map[string]any)
	delete(run, "cpu")
	delete(run, "notes")
	run["fleet"] = 0
	docs := map[string]any{
		"with cpu":         full,
		"without cpu":      bare,
		"in its mission":   map[string]any{"mission": 3, "goal_met": false, "result": full},
		"mission goal met": map[string]any{"mission": 7, "goal_met": true, "result": bare},
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			if err := ValidateResultJSON(mustJSON(t, doc)); err != nil {
				t.Error(err)
			}
		})
	}
}

// at returns the object at the slash-separated path below doc (array
// elements by index).
func at(t *testing.T, doc any, path string) map[string]any {
	t.Helper()
	v := doc
	for _, tok := range strings.Split(strings.Trim(path, "/"), "/") {
		if tok == "" {
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, _ := strconv.Atoi(tok)
			v = x[i]
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is not an object", path)
	}
	return m
}

// TestSchemaRefuses: each change to a valid real run is refused, and the
// refusal names where.
func TestSchemaRefuses(t *testing.T) {
	cases := []struct {
		name, where string
		change      func(t *testing.T, doc map[string]any) any
	}{
		{"unknown member at the top", "additional properties 'extra'", func(t *testing.T, d map[string]any) any { d["extra"] = 1; return d }},
		{"unknown member in scenario", "'/scenario'", func(t *testing.T, d map[string]any) any { at(t, d, "scenario")["replica"] = 3; return d }},
		{"unknown member in run", "'/run'", func(t *testing.T, d map[string]any) any { at(t, d, "run")["host"] = "x"; return d }},
		{"unknown member in a process", "'/run/cpu/processes/1'", func(t *testing.T, d map[string]any) any {
			at(t, d, "run/cpu/processes/1")["threads"] = 4
			return d
		}},
		{"unknown member in the verdict", "'/run/cpu/verdict'", func(t *testing.T, d map[string]any) any { at(t, d, "run/cpu/verdict")["why"] = ""; return d }},
		{"unknown member in the timeline", "'/timeline'", func(t *testing.T, d map[string]any) any { at(t, d, "timeline")["resumes"] = []any{}; return d }},
		{"negative count", "'/completed'", func(t *testing.T, d map[string]any) any { d["completed"] = -1; return d }},
		{"negative count in the timeline", "'/timeline/cuts/2'", func(t *testing.T, d map[string]any) any {
			at(t, d, "timeline")["cuts"].([]any)[2] = -1
			return d
		}},
		{"fractional count", "'/failed'", func(t *testing.T, d map[string]any) any { d["failed"] = 1.5; return d }},
		{"wrong type", "'/calls_issued'", func(t *testing.T, d map[string]any) any { d["calls_issued"] = "1802"; return d }},
		{"wrong type in scenario", "'/scenario/deploy'", func(t *testing.T, d map[string]any) any { at(t, d, "scenario")["deploy"] = 1; return d }},
		{"missing member", "'latency_p95_s'", func(t *testing.T, d map[string]any) any { delete(d, "latency_p95_s"); return d }},
		{"missing scenario member", "'seed'", func(t *testing.T, d map[string]any) any { delete(at(t, d, "scenario"), "seed"); return d }},
		{"missing run member", "'speed'", func(t *testing.T, d map[string]any) any { delete(at(t, d, "run"), "speed"); return d }},
		{"bad role", "'/run/cpu/processes/0/role'", func(t *testing.T, d map[string]any) any {
			at(t, d, "run/cpu/processes/0")["role"] = "proxy"
			return d
		}},
		{"share over 1", "'/utilization'", func(t *testing.T, d map[string]any) any { d["utilization"] = 1.2; return d }},
		{"machine share over 1", "'/run/cpu/machine_busy'", func(t *testing.T, d map[string]any) any { at(t, d, "run/cpu")["machine_busy"] = 1.01; return d }},
		{"speed zero", "'/run/speed'", func(t *testing.T, d map[string]any) any { at(t, d, "run")["speed"] = 0; return d }},
		{"unknown era", "'/run/era'", func(t *testing.T, d map[string]any) any { at(t, d, "run")["era"] = "2024"; return d }},
		{"other source", "'/run/source'", func(t *testing.T, d map[string]any) any { at(t, d, "run")["source"] = "sim"; return d }},
		{"unknown protocol", "'/scenario/protocol'", func(t *testing.T, d map[string]any) any { at(t, d, "scenario")["protocol"] = "2024-11-05"; return d }},
		{"null series", "'/timeline/in_flight'", func(t *testing.T, d map[string]any) any { at(t, d, "timeline")["in_flight"] = nil; return d }},
		{"not an object", "want object", func(*testing.T, map[string]any) any { return []any{1} }},
		{"mission out of range", "'/mission'", func(_ *testing.T, d map[string]any) any {
			return map[string]any{"mission": len(Missions()) + 1, "goal_met": true, "result": d}
		}},
		{"unknown member in the wrapper", "'stars'", func(_ *testing.T, d map[string]any) any {
			return map[string]any{"mission": 1, "goal_met": true, "stars": 3, "result": d}
		}},
		{"real wrapper without run", "'run'", func(_ *testing.T, d map[string]any) any {
			delete(d, "run")
			return map[string]any{"mission": 1, "goal_met": true, "result": d}
		}},
		{"real wrapper without goal_met", "'goal_met'", func(_ *testing.T, d map[string]any) any {
			return map[string]any{"mission": 1, "result": d}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateResultJSON(mustJSON(t, c.change(t, realRun(t))))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.where) {
				t.Errorf("refusal does not name %s: %v", c.where, err)
			}
		})
	}
}

func TestSchemaRefusesWhatIsNotOneJSONValue(t *testing.T) {
	good := mustJSON(t, realRun(t))
	for name, b := range map[string][]byte{
		"empty":      nil,
		"not JSON":   []byte("calls issued 1802"),
		"two values": append(append([]byte{}, good...), good...),
		"cut short":  good[:len(good)/2],
	} {
		t.Run(name, func(t *testing.T) {
			if err := ValidateResultJSON(b); err == nil {
				t.Error("accepted")
			}
		})
	}
}

// TestSchemaCoversGoTypes: the schema's members of each object are exactly
// the JSON names of its Go type, all required (none is omitempty), so the
// schema cannot fall behind the types; a Result's run is the one member
// that only a real run has.
func TestSchemaCoversGoTypes(t *testing.T) {
	var schema struct {
		Defs map[string]struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(ResultSchema, &schema); err != nil {
		t.Fatal(err)
	}
	types := map[string]reflect.Type{
		"result": reflect.TypeFor[Result](), "scenario": reflect.TypeFor[Scenario](),
		"replica": reflect.TypeFor[ReplicaFigures](), "timeline": reflect.TypeFor[Timeline](),
		"mission": reflect.TypeFor[Mission](), "stars": reflect.TypeFor[Stars](),
		"sim_mission": reflect.TypeFor[missionJSON](),
	}
	for def, typ := range types {
		d, ok := schema.Defs[def]
		if !ok {
			t.Errorf("schema has no $defs/%s for %s", def, typ)
			continue
		}
		var tags []string
		for f := range typ.Fields() {
			tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || tag == "-" {
				continue
			}
			if tag == "" || opts != "" {
				t.Errorf("%s.%s: json tag %q: want a plain name", typ, f.Name, f.Tag.Get("json"))
			}
			tags = append(tags, tag)
			if _, ok := d.Properties[tag]; !ok {
				t.Errorf("$defs/%s has no property %q (%s.%s)", def, tag, typ, f.Name)
			}
		}
		if !slices.Equal(d.Required, tags) {
			t.Errorf("$defs/%s requires %q, want the Go fields' order %q", def, d.Required, tags)
		}
		for name := range d.Properties {
			if !slices.Contains(tags, name) && (def != "result" || name != "run") {
				t.Errorf("$defs/%s names %q, which %s has not", def, name, typ)
			}
		}
	}
}

// TestSchemaMissionRange: a mission's number runs 1 to the missions there are.
func TestSchemaMissionRange(t *testing.T) {
	var schema struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Minimum *int `json:"minimum"`
				Maximum *int `json:"maximum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(ResultSchema, &schema); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ def, prop string }{{"mission", "number"}, {"run_mission", "mission"}} {
		got := schema.Defs[p.def].Properties[p.prop]
		if got.Minimum == nil || got.Maximum == nil || *got.Minimum != 1 || *got.Maximum != len(Missions()) {
			t.Errorf("$defs/%s/properties/%s: range %v..%v, want 1..%d", p.def, p.prop, got.Minimum, got.Maximum, len(Missions()))
		}
	}
}

package lab

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// realRunJSON is a real run's JSON as `mcpfleet load --json` prints it:
// sim.Run of s with a run member, CPU included. Its figures are the
// simulated ones with completed and failed moved by moved.
func realRunJSON(t *testing.T, s sim.Scenario, moved int) []byte {
	t.Helper()
	b, err := json.Marshal(sim.MustRun(s))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["completed"] = doc["completed"].(float64) - float64(moved)
	doc["failed"] = doc["failed"].(float64) + float64(moved)
	doc["run"] = map[string]any{
		"source": "load", "url": "http://127.0.0.1:8080/mcp", "fleet": s.Replicas, "speed": 20,
		"era": "2025", "wall_s": s.TrafficSeconds / 20,
		"cpu": map[string]any{
			"cores": 2, "interval_s": 1, "machine_busy": 0.55,
			"processes": []any{
				map[string]any{"name": "gateway", "role": "gateway", "pid": 101, "cpu_cores": 0.3, "machine_share": 0.15},
				map[string]any{"name": "load", "role": "load generator", "pid": 100, "cpu_cores": 0.6, "machine_share": 0.3},
			},
			"verdict": map[string]any{"pinned": "", "saturated": false, "more_replicas_help": true,
				"text": "The machine had CPU to spare: more replicas would help."},
		},
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func postValidate(t *testing.T, url string, body []byte) (int, []byte) {
	t.Helper()
	resp, b := postTo(t, url, "/api/validate", bytes.NewReader(body))
	return resp.StatusCode, b
}

func TestValidateAcceptsResults(t *testing.T) {
	srv := httptest.NewServer(New(nil))
	defer srv.Close()
	simulated, err := json.Marshal(sim.MustRun(sim.Default()))
	if err != nil {
		t.Fatal(err)
	}
	real := realRunJSON(t, sim.Default(), 0)
	wrapped := []byte(`{"mission": 1, "goal_met": false, "result": ` + string(real) + `}`)
	for _, c := range []struct {
		name string
		body []byte
		real bool
	}{{"simulated", simulated, false}, {"real", real, true}, {"real in its mission", wrapped, true}} {
		t.Run(c.name, func(t *testing.T) {
			status, b := postValidate(t, srv.URL, c.body)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, b)
			}
			var got ValidateResponse
			if err := json.Unmarshal(b, &got); err != nil || !got.Valid || got.Real != c.real {
				t.Errorf("answer %s (%v), want valid, real %v", b, err, c.real)
			}
		})
	}
}

func TestValidateRefuses(t *testing.T) {
	srv := httptest.NewServer(New(nil))
	defer srv.Close()
	real := string(realRunJSON(t, sim.Default(), 0))
	for _, c := range []struct {
		name, body, want string
		status           int
	}{
		{"unknown member", strings.Replace(real, `"source":"load"`, `"source":"load","host":"x"`, 1), "'/run'", http.StatusBadRequest},
		{"negative count", strings.Replace(real, `"calls_issued":`, `"calls_issued":-`, 1), "'/calls_issued'", http.StatusBadRequest},
		{"not JSON", "calls issued: 1802", "decoding result", http.StatusBadRequest},
		{"over 4 MiB", `{"assumptions": ["` + strings.Repeat("x", MaxResultBody) + `"]}`, "over 4 MiB", http.StatusRequestEntityTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, b := postValidate(t, srv.URL, []byte(c.body))
			var e apiError
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("answer %q: %v", b, err)
			}
			if status != c.status || !strings.Contains(e.Error, c.want) {
				t.Errorf("status %d, error %q; want %d and %q", status, e.Error, c.status, c.want)
			}
		})
	}
	resp, err := http.Get(srv.URL + "/api/validate")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/validate: status %d, want 405", resp.StatusCode)
	}
}

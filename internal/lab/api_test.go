package lab

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	return postTo(t, url, "/api/run", strings.NewReader(body))
}

// postTo posts body to path on the lab at url and reads the answer.
func postTo(t *testing.T, url, path string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", body)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading answer: %v", err)
	}
	return resp, b
}

func TestRunMatchesEngine(t *testing.T) {
	srv := httptest.NewServer(New(nil))
	defer srv.Close()
	m, err := sim.MissionByNumber(1)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Broken
	s.KeepAlive = 30
	body, _ := json.Marshal(map[string]any{"scenario": s, "mission": 1})
	resp, b := post(t, srv.URL, string(body))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var got RunResponse
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("decoding answer: %v", err)
	}
	want, err := sim.Run(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Result); diff != "" {
		t.Errorf("result differs from sim.Run (-want +got):\n%s", diff)
	}
	wantStars, err := m.Evaluate(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&wantStars, got.Stars); diff != "" {
		t.Errorf("stars differ from Mission.Evaluate (-want +got):\n%s", diff)
	}
	if got.Stars.Stars != 3 {
		t.Errorf("mission 1 with keep-alive 30 s: %d stars, want 3", got.Stars.Stars)
	}
}

func TestRunPartialScenarioKeepsDefaults(t *testing.T) {
	srv := httptest.NewServer(New(nil))
	defer srv.Close()
	resp, b := post(t, srv.URL, `{"scenario": {"replicas": 5}}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var got RunResponse
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := sim.Default()
	want.Replicas = 5
	if diff := cmp.Diff(want, got.Result.Scenario); diff != "" {
		t.Errorf("scenario run (-want +got):\n%s", diff)
	}
	if got.Stars != nil {
		t.Errorf("stars without a mission: %+v", got.Stars)
	}
}

func TestRunRefusesBadRequests(t *testing.T) {
	srv := httptest.NewServer(New(nil))
	defer srv.Close()
	tests := []struct {
		name, body string
		status     int
		field      string
	}{
		{"replicas out of range", `{"scenario": {"replicas": 13}}`, 400, "replicas"},
		{"negative keep-alive", `{"scenario": {"keep_alive_s": -1}}`, 400, "keep_alive_s"},
		{"unknown protocol", `{"scenario": {"protocol": "2024"}}`, 400, "protocol"},
		{"unknown field", `{"scenario": {"replics": 3}}`, 400, "replics"},
		{"wrong type", `{"scenario": {"replicas": "three"}}`, 400, "replicas"},
		{"over the lab's calls", `{"scenario": {"arrival_rate": 1000}}`, 400, "arrival_rate"},
		{"over the lab's traffic", `{"scenario": {"traffic_s": 7200}}`, 400, "traffic_s"},
		{"a runaway agent over the lab's calls", `{"scenario": {"runaway": true, "runaway_rate": 200}}`, 400, "arrival_rate"},
		{"too many gateways", `{"scenario": {"gateways": 13}}`, 400, "gateways"},
		{"unknown limit store", `{"scenario": {"limit_store": "redis"}}`, 400, "limit_store"},
		{"negative limit rate", `{"scenario": {"limit_rate": -1}}`, 400, "limit_rate"},
		{"no such mission", `{"mission": 99}`, 400, ""},
		{"not JSON", `{`, 400, ""},
		{"trailing data", `{} {}`, 400, ""},
		{"too large", `{"scenario": {}, "x": "` + strings.Repeat("a", MaxBody) + `"}`, 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := post(t, srv.URL, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			var e apiError
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("decoding error answer %q: %v", b, err)
			}
			if e.Error == "" || e.Field != tt.field {
				t.Errorf("answer %+v, want field %q and a message", e, tt.field)
			}
		})
	}
}

func TestMissionsAndDefaults(t *testing.T) {
	srv := httptest.NewServer(New(nil))
	defer srv.Close()
	get := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	var d sim.Scenario
	get("/api/defaults", &d)
	if diff := cmp.Diff(sim.Default(), d); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	var raw []map[string]any
	get("/api/missions", &raw)
	if len(raw) != len(sim.Missions()) {
		t.Fatalf("%d missions, want %d", len(raw), len(sim.Missions()))
	}
	for _, m := range raw {
		if _, ok := m["reference"]; ok {
			t.Errorf("mission %v gives its reference answer away", m["number"])
		}
	}
	var ms []MissionView
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, &ms); err != nil {
		t.Fatal(err)
	}
	for i, m := range sim.Missions() {
		if diff := cmp.Diff(m.Broken, ms[i].Broken); diff != "" {
			t.Errorf("mission %d broken setup (-want +got):\n%s", m.Number, diff)
		}
	}
}

func TestPageIsEmbedded(t *testing.T) {
	srv := httptest.NewServer(New(nil))
	defer srv.Close()
	for _, path := range []string{"/", "/app.js", "/app.css"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) == 0 {
			t.Errorf("GET %s: %d, %d bytes", path, resp.StatusCode, len(b))
		}
		if bytes.Contains(b, []byte("https://")) {
			t.Errorf("GET %s refers to the network", path)
		}
	}
	resp, err := http.Get(srv.URL + "/api/run")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/run: %d, want 405", resp.StatusCode)
	}
}

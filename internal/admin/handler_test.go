package admin

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSource is a fleet of named replicas whose holds the handler sets.
type fakeSource struct {
	mu   sync.Mutex
	held map[string]bool // guarded by mu
}

func newFake(names ...string) *fakeSource {
	f := &fakeSource{held: map[string]bool{}}
	for _, n := range names {
		f.held[n] = false
	}
	return f
}

func (f *fakeSource) Fleet(now time.Time) Fleet {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := Fleet{At: now, Gateway: Gateway{Version: "test", Started: now, Stores: []Store{{Name: "limits", Kind: "redis", Healthy: false, Error: "does not answer"}},
		Limits: Limits{Admitted: map[string]uint64{"none": 3}, Refused: map[string]uint64{"rate": 1}},
		Authz:  &Authz{Allowed: map[string]uint64{"default": 3}, Denied: map[string]uint64{"mutate-needs-write": 1}}}}
	for _, n := range []string{"a", "b"} {
		r := Replica{Name: n, URL: "http://127.0.0.1:1/mcp", State: StateUp, Health: StateUp, Held: f.held[n]}
		if r.Held {
			r.State = StateDraining
		}
		if n == "b" {
			r.LastCheck = &LastCheck{At: now, Result: "fail", Reason: "connection refused"}
		}
		v.Replicas = append(v.Replicas, r)
	}
	return v
}

func (f *fakeSource) SetHeld(name string, held bool) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.held[name]
	if !ok {
		return false, ErrUnknownReplica
	}
	f.held[name] = held
	return old != held, nil
}

func (f *fakeSource) isHeld(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[name]
}

func serve(t *testing.T, src Source, o *Options) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	Register(mux, src, o)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func send(t *testing.T, method, url string, hdr map[string]string) (int, []byte) {
	t.Helper()
	return sendWith(t, method, url, hdr, nil)
}

// sendWith is send, with edit applied to the request last.
func sendWith(t *testing.T, method, url string, hdr map[string]string, edit func(*http.Request)) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestFleetValidatesAgainstItsSchema(t *testing.T) {
	srv := serve(t, newFake("a", "b"), nil)
	code, b := send(t, http.MethodGet, srv.URL+"/api/fleet", nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, b)
	}
	if err := ValidateFleetJSON(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	// The schema refuses what the type does not say: a state it does not
	// know, a member it does not name, a negative count.
	for _, bad := range []string{
		strings.Replace(string(b), `"state":"up"`, `"state":"sideways"`, 1),
		strings.Replace(string(b), `"held":false`, `"held":false,"extra":1`, 1),
		strings.Replace(string(b), `"inflight":0`, `"inflight":-1`, 1),
		strings.Replace(string(b), `"version":"test"`, `"version":""`, 1),
		strings.Replace(string(b), `"mutate-needs-write":1`, `"mutate-needs-write":-1`, 1),
	} {
		if bad == string(b) {
			t.Fatal("the replacement did not apply")
		}
		if ValidateFleetJSON([]byte(bad)) == nil {
			t.Errorf("the schema accepted %s", bad)
		}
	}
}

func TestActionsDrainAndResume(t *testing.T) {
	src := newFake("a", "b")
	srv := serve(t, src, nil)
	code, b := send(t, http.MethodPost, srv.URL+"/api/replicas/a/drain", nil)
	if code != http.StatusOK || !src.isHeld("a") {
		t.Fatalf("drain: %d %s, held %v", code, b, src.isHeld("a"))
	}
	var a actionBody
	if err := json.Unmarshal(b, &a); err != nil || !a.Changed || !a.Held || a.Replica != "a" {
		t.Fatalf("drain answer %s (%v)", b, err)
	}
	if _, b = send(t, http.MethodPost, srv.URL+"/api/replicas/a/drain", nil); !bytes.Contains(b, []byte(`"changed":false`)) {
		t.Fatalf("a second drain: %s, want changed false", b)
	}
	if code, b = send(t, http.MethodPost, srv.URL+"/api/replicas/a/resume", nil); code != http.StatusOK || src.isHeld("a") {
		t.Fatalf("resume: %d %s", code, b)
	}
	if code, _ = send(t, http.MethodPost, srv.URL+"/api/replicas/nope/drain", nil); code != http.StatusNotFound {
		t.Fatalf("an unknown replica: %d, want 404", code)
	}
	if code, _ = send(t, http.MethodGet, srv.URL+"/api/replicas/a/drain", nil); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET of an action: %d, want 405", code)
	}
}

func TestActionsFromAnotherSiteAreRefused(t *testing.T) {
	src := newFake("a", "b")
	srv := serve(t, src, nil)
	for _, hdr := range []map[string]string{
		{"Origin": "https://evil.example"},
		{"Origin": "null"},
		{"Sec-Fetch-Site": "cross-site"},
	} {
		if code, _ := send(t, http.MethodPost, srv.URL+"/api/replicas/a/drain", hdr); code != http.StatusForbidden || src.isHeld("a") {
			t.Errorf("%v: status %d, held %v; want 403 and nothing changed", hdr, code, src.isHeld("a"))
		}
	}
	same := map[string]string{"Origin": srv.URL}
	if code, _ := send(t, http.MethodPost, srv.URL+"/api/replicas/a/drain", same); code != http.StatusOK {
		t.Fatalf("from the page itself: %d", code)
	}
}

func TestTokenGuardsTheAPI(t *testing.T) {
	src := newFake("a", "b")
	const tok = "0123456789abcdef-token"
	srv := serve(t, src, &Options{Token: tok})
	for _, hdr := range []map[string]string{
		nil,
		{"Authorization": "Bearer wrong-token-0123456789"},
		{"Authorization": "Bearer " + tok + "x"},
		{"Authorization": "Bearer " + tok[:len(tok)-1]},
		{"Authorization": "Basic " + tok},
		{"Authorization": "Bearer"},
	} {
		code, b := send(t, http.MethodPost, srv.URL+"/api/replicas/a/drain", hdr)
		if code != http.StatusUnauthorized || src.isHeld("a") {
			t.Errorf("drain with %v: %d %s, held %v; want 401 and nothing changed", hdr, code, b, src.isHeld("a"))
		}
		if bytes.Contains(b, []byte(tok)) {
			t.Errorf("the answer quotes the token: %s", b)
		}
		if code, _ := send(t, http.MethodGet, srv.URL+"/api/fleet", hdr); code != http.StatusUnauthorized {
			t.Errorf("GET /api/fleet with %v: %d, want 401", hdr, code)
		}
	}
	ok := map[string]string{"Authorization": "Bearer " + tok}
	if code, _ := send(t, http.MethodPost, srv.URL+"/api/replicas/a/drain", ok); code != http.StatusOK || !src.isHeld("a") {
		t.Fatalf("drain with the token: %d, held %v", code, src.isHeld("a"))
	}
	if code, _ := send(t, http.MethodGet, srv.URL+"/api/fleet", map[string]string{"Authorization": "bearer " + tok}); code != http.StatusOK {
		t.Fatalf("GET /api/fleet with the token (scheme in lower case): %d", code)
	}
	// The page holds no data: it loads without the token and asks for it.
	code, b := send(t, http.MethodGet, srv.URL+"/", nil)
	if code != http.StatusOK || !bytes.Contains(b, []byte("/api/fleet")) {
		t.Fatalf("the page: %d", code)
	}
	if code, _ := send(t, http.MethodGet, srv.URL+"/nothing-here", nil); code != http.StatusNotFound {
		t.Fatalf("another path: %d, want 404", code)
	}
}

func TestWriteTableMergesGateways(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	one := newFake("a", "b").Fleet(now)
	src2 := newFake("a", "b")
	src2.SetHeld("a", true)
	two := src2.Fleet(now)
	two.Replicas = append(two.Replicas, Replica{Name: "c", State: StateDown, InFlight: 7})
	var b bytes.Buffer
	err := WriteTable(&b, []View{
		{Admin: "http://g1", Fleet: &one},
		{Admin: "http://g2", Fleet: &two},
		{Admin: "http://g3", Err: io.ErrUnexpectedEOF},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	row := func(name string) []string {
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && f[0] == name {
				return f
			}
		}
		t.Fatalf("no row for %s:\n%s", name, out)
		return nil
	}
	if a := row("a"); a[1] != "up" || a[8] != "draining" || a[9] != "(by" {
		t.Errorf("row a %q: want up on gateway 1, draining by hand on gateway 2", a)
	}
	if c := row("c"); c[1] != "-" || c[8] != "down" || c[9] != "7" {
		t.Errorf("row c %q: unknown to gateway 1, down with 7 in flight on gateway 2", c)
	}
	if !strings.Contains(out, "gateway 3: http://g3: unexpected EOF") {
		t.Errorf("the unreadable gateway is not named:\n%s", out)
	}
}

// TestDetailValidatesAgainstItsSchema: a replica's last checks, recent
// errors and standard error pass the schema; an outcome it does not know,
// a standard error that is not lines, and more than ten checks do not.
func TestDetailValidatesAgainstItsSchema(t *testing.T) {
	srv := serve(t, newFixture(), nil)
	code, b := send(t, http.MethodGet, srv.URL+"/api/fleet", nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, b)
	}
	if err := ValidateFleetJSON(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	var f Fleet
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Replicas[1].RecentErrors); n != 6 || len(f.Replicas[2].Stderr) != 2 || f.Replicas[0].Stderr != nil {
		t.Fatalf("the fixture's detail did not come through: %d errors, stderr %q and %q", n, f.Replicas[2].Stderr, f.Replicas[0].Stderr)
	}
	checks := strings.Repeat(`{"at":"2026-12-01T21:50:08Z","result":"ok"},`, 11)
	for _, bad := range []string{
		strings.Replace(string(b), `"outcome":"upstream_cut"`, `"outcome":"sideways"`, 1),
		strings.Replace(string(b), `"stderr":["npm`, `"stderr":[1,"npm`, 1),
		strings.Replace(string(b), `"checks":[`, `"checks":[`+checks, 1),
	} {
		if bad == string(b) {
			t.Fatal("the replacement did not apply")
		}
		if ValidateFleetJSON([]byte(bad)) == nil {
			t.Errorf("the schema accepted %.300s", bad[strings.Index(bad, `"replicas"`):])
		}
	}
	// A source that leaves the lists nil still answers [] for them.
	_, b = send(t, http.MethodGet, serve(t, newFake("a", "b"), nil).URL+"/api/fleet", nil)
	if !bytes.Contains(b, []byte(`"checks":[],"recent_errors":[]`)) || bytes.Contains(b, []byte(`"stderr"`)) {
		t.Fatalf("empty lists: %s", b)
	}
}

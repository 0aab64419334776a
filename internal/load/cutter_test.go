package load

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCutterCutsSilentStreamsOnly: a stream silent for longer than the
// idle timeout is cut and counted; one that speaks more often than that
// runs to its end.
func TestCutterCutsSilentStreamsOnly(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		every, _ := time.ParseDuration(r.URL.Query().Get("every"))
		for range 6 {
			_, _ = io.WriteString(w, "data: x\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-time.After(every):
			case <-r.Context().Done():
				return
			}
		}
		_, _ = io.WriteString(w, "data: end\n\n")
	}))
	defer backend.Close()
	// Half a second of idle: far from the chatty stream's 20 ms gaps even
	// when a loaded machine stretches them, and from the silent one's 1.5 s.
	c, err := startCutter(backend.URL, 500*time.Millisecond, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()

	get := func(every string) (string, error) {
		resp, err := http.Get(c.url("/mcp?every=" + every))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	body, err := get("20ms")
	if err != nil || !strings.HasSuffix(body, "data: end\n\n") {
		t.Fatalf("chatty stream: %q, %v; want it whole", body, err)
	}
	if n := c.count(); n != 0 {
		t.Fatalf("cuts after a chatty stream = %d, want 0", n)
	}
	body, err = get("1500ms")
	if err == nil || strings.Contains(body, "end") {
		t.Fatalf("silent stream: %q, %v; want it cut", body, err)
	}
	if n := c.count(); n != 1 {
		t.Fatalf("cuts after a silent stream = %d, want 1", n)
	}
	if ts := c.times(); len(ts) != 1 || ts[0] <= 0 {
		t.Fatalf("cut times = %v", ts)
	}
}

// TestCutterCutsAServerSilentBeforeItsHeaders: a server that sends nothing,
// headers included, for longer than the idle timeout is cut (504), as nginx
// cuts one under proxy_read_timeout.
func TestCutterCutsAServerSilentBeforeItsHeaders(t *testing.T) {
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer backend.Close()
	defer close(release)
	c, err := startCutter(backend.URL, 100*time.Millisecond, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	resp, err := http.Get(c.url("/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout || c.count() != 1 {
		t.Fatalf("status %d, %d cuts; want 504 and 1 cut", resp.StatusCode, c.count())
	}
}

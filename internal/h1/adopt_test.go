package h1

import (
	"net/http"
	"testing"
)

// TestServerAdoptHeader: a header handed over whole goes out as the
// handler's; once the handler has asked for its header, none is taken.
func TestServerAdoptHeader(t *testing.T) {
	t.Parallel()
	type adopter interface{ AdoptHeader(http.Header) bool }
	took := make(chan bool, 2)
	st := srvServe(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/asked" {
			w.Header().Set("X-Own", "1")
		}
		h := http.Header{"X-Relayed": {"yes"}, "Content-Length": {"2"}}
		ok := w.(adopter).AdoptHeader(h)
		took <- ok
		h.Set("X-Changed", "after") // before the head goes out: sent when taken
		_, _ = w.Write([]byte("ok"))
	})
	c := srvDial(t, st.addr)
	resp, body := c.get("/")
	if !srvRecv(t, took, "AdoptHeader's answer") {
		t.Fatal("AdoptHeader refused a header nobody had asked for")
	}
	if resp.Header.Get("X-Relayed") != "yes" || resp.Header.Get("X-Changed") != "after" || resp.ContentLength != 2 || body != "ok" {
		t.Errorf("adopted: header %q, length %d, body %q", resp.Header, resp.ContentLength, body)
	}
	resp, _ = c.get("/asked")
	if srvRecv(t, took, "AdoptHeader's answer") {
		t.Error("AdoptHeader took a header after the handler asked for its own")
	}
	if resp.Header.Get("X-Own") != "1" || resp.Header.Get("X-Relayed") != "" {
		t.Errorf("not adopted: header %q", resp.Header)
	}
}

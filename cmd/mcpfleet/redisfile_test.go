package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/testproc"
	"github.com/redis/go-redis/v9"
)

// fakePassword is the Redis password of these tests, easy to look for in
// what serve prints. Its '/' is what makes a careless parser quote it: in
// a URL that does not escape it, the parser reads it as a port or a path.
const fakePassword = "mcpfleet-fake/pw-7Hq"

// writeURLFile writes content to a file of the test's own with mode perm.
func writeURLFile(t *testing.T, content string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "redis-url")
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

// storeConfig writes serve's configuration: idempotency in the Redis that
// redis_url_file names, one replica at backend.
func storeConfig(t *testing.T, listen, backend, urlFile string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mcpfleet.yaml")
	cfg := fmt.Sprintf("listen: %s\nupstreams: [{url: 'http://%s/mcp'}]\nidempotency: redis\nredis_url_file: %s\nsecret_file: %s\ngrace: 1s\n", listen, backend, urlFile, writeSecret(t))
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServeReadsRedisURLFile runs serve with redis_url_file naming a file
// that holds the URL of a real redis-server which wants a password: the
// gateway is ready only if it authenticates (/readyz pings the store), an
// idempotent call leaves its record there, and the password is in nothing
// serve prints.
func TestServeReadsRedisURLFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts serve and a redis-server")
	}
	addr := redistest.Start(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	ctx := context.Background()
	if err := admin.ConfigSet(ctx, "requirepass", fakePassword).Err(); err != nil {
		t.Fatal(err)
	}
	admin = redis.NewClient(&redis.Options{Addr: addr, Password: fakePassword})
	defer admin.Close()
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", fakePassword), Host: addr, Path: "/0"}
	file := writeURLFile(t, "\n  "+u.String()+"\n", 0o600)

	backend, listen := testproc.FreeAddr(t), testproc.FreeAddr(t)
	startProcess(t, "testserver", "--listen", backend, "--name", "a")
	testproc.WaitReady(t, "http://"+backend+"/health") // a replica not yet listening would answer the call 502
	sctx, stop := context.WithCancel(ctx)
	var out, errb lockedBuffer
	served := make(chan int)
	go func() {
		served <- run(sctx, []string{"serve", "--config", storeConfig(t, listen, backend, file)}, &out, &errb)
	}()
	defer func() {
		stop()
		if code := <-served; code != 0 {
			t.Errorf("serve exit %d: %s", code, errb.String())
		}
		if strings.Contains(out.String()+errb.String(), fakePassword) {
			t.Errorf("serve printed the password:\n%s%s", out.String(), errb.String())
		}
	}()
	base := "http://" + listen
	testproc.WaitReady(t, base+"/readyz")
	waitStatus(t, base+"/readyz", 200, "ready")

	req := whoamiRequest(base + "/mcp")
	req.Header.Set("Idempotency-Key", "redisfile-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	keys, err := admin.Keys(ctx, idemPrefix+"*").Result()
	if resp.StatusCode != 200 || err != nil || len(keys) == 0 {
		t.Errorf("idempotent call %d; records %q, %v: want one in the file's server", resp.StatusCode, keys, err)
	}
}

// TestServeRefusesABadRedisURLFile checks that serve refuses a file it
// must not or cannot use, with exit status 2 and a message that names the
// file and what is wrong, and nothing of what the file holds.
func TestServeRefusesABadRedisURLFile(t *testing.T) {
	good := "redis://default:" + url.PathEscape(fakePassword) + "@valkey.internal:6379/0\n"
	for _, tt := range []struct {
		name, content string
		perm          os.FileMode
		want          string
	}{
		{"others may read", good, 0o644, "readable by others"},
		{"group may write", good, 0o660, "writable or executable by its group"},
		{"empty", " \n\n", 0o600, "empty: want one line"},
		{"two lines", good + good, 0o600, "more than one line"},
		{"not a redis URL", "https://default:" + fakePassword + "@valkey.internal/\n", 0o600, "not a redis:// or rediss:// URL"},
		{"the password cut by the parser", "redis://default:" + fakePassword + "@valkey.internal:6379/0\n", 0o600, "parsing redis url: invalid port"},
		{"an unknown option", "redis://valkey.internal:6379/0?" + fakePassword + "\n", 0o600, "parsing redis url: unexpected option"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := writeURLFile(t, tt.content, tt.perm)
			code, _, stderr := runCmd(t, context.Background(), "serve", "--config", storeConfig(t, testproc.FreeAddr(t), "127.0.0.1:1", file))
			if want := "redis_url_file " + file + ": "; code != 2 || !strings.Contains(stderr, want+tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, want+tt.want)
			}
			for _, part := range []string{fakePassword, "mcpfleet-fake", "pw-7Hq", "valkey.internal"} {
				if strings.Contains(stderr, part) {
					t.Errorf("stderr shows the file's content (%q): %s", part, stderr)
				}
			}
		})
	}
	code, _, stderr := runCmd(t, context.Background(), "serve", "--config", storeConfig(t, testproc.FreeAddr(t), "127.0.0.1:1", "/nonexistent/redis-url"))
	if code != 2 || !strings.Contains(stderr, "redis_url_file /nonexistent/redis-url: no such file or directory") {
		t.Errorf("a missing file: exit %d, stderr %q", code, stderr)
	}
}

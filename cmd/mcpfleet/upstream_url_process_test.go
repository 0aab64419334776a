package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testproc"
)

// TestServeRefusesUpstreamsInOneFlag: a serve process given two URLs in
// one --upstream (a comma, whitespace), a fragment or credentials exits 2
// before it listens, with the repeated-flag form in its message and no
// password; so does a config file with such an upstreams[].url.
func TestServeRefusesUpstreamsInOneFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	cfg := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(cfg, []byte("upstreams: [{url: 'http://a/mcp,http://b/mcp'}]\n"), 0o600)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--upstream", "http://a/mcp,http://b/mcp"}, "--upstream http://a/mcp --upstream http://b/mcp"},
		{[]string{"--upstream", "http://a/mcp http://b/mcp"}, "--upstream http://a/mcp --upstream http://b/mcp"},
		{[]string{"--upstream", "http://127.0.0.1:3101/mcp#sse"}, "--upstream http://a/mcp --upstream http://b/mcp"},
		{[]string{"--upstream", "http://user:hunter2@127.0.0.1:3101/mcp"}, "--upstream http://a/mcp --upstream http://b/mcp"},
		{[]string{"--config", cfg}, "--upstream http://a/mcp --upstream http://b/mcp"},
	} {
		listen := testproc.FreeAddr(t)
		cmd := exec.Command(os.Args[0], append([]string{"serve", "--listen", listen}, tt.args...)...)
		cmd.Env = append(os.Environ(), "MCPFLEET_RUN_MAIN=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		done := time.AfterFunc(20*time.Second, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		out, err := cmd.CombinedOutput()
		done.Stop()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("serve %q: %v, want exit status 2:\n%s", tt.args, err, out)
			continue
		}
		if !strings.Contains(string(out), tt.want) {
			t.Errorf("serve %q: the message does not show %q:\n%s", tt.args, tt.want, out)
		}
		if strings.Contains(string(out), "hunter2") {
			t.Errorf("serve %q: the message shows the password:\n%s", tt.args, out)
		}
	}
}

// TestReloadRefusesUpstreamsInOneURL: a SIGHUP whose file has two URLs in
// one upstreams[].url changes nothing, and the log shows the
// repeated-flag form.
func TestReloadRefusesUpstreamsInOneURL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	addr := testproc.FreeAddr(t)
	startProcess(t, "testserver", "--listen", addr, "--name", "old")
	testproc.WaitReady(t, "http://"+addr+"/health")
	gw := testproc.FreeAddr(t)
	cfg := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(cfg, []byte("listen: "+gw+"\nupstreams: [{name: old, url: 'http://"+addr+"/mcp'}]\n"), 0o600)
	logs := startLogged(t, "serve", "--config", cfg)
	testproc.WaitReady(t, "http://"+gw+"/readyz")
	os.WriteFile(cfg, []byte("listen: "+gw+"\nupstreams: [{name: new, url: 'http://"+addr+"/mcp,http://"+addr+"/other'}]\n"), 0o600)
	logs.cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "reload refused"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway never refused the reload:\n%s", logs.String())
		}
	}
	if want := "--upstream http://" + addr + "/mcp --upstream http://" + addr + "/other"; !strings.Contains(logs.String(), want) {
		t.Errorf("the refusal does not show %q:\n%s", want, logs.String())
	}
	if got := whoami(t, gw); got != "old" {
		t.Errorf("after the refused reload the fleet answers %q, want old", got)
	}
}

// loggedProcess is a process of startLogged and its standard error.
type loggedProcess struct {
	*lockedBuffer
	cmd *exec.Cmd
}

// startLogged runs "mcpfleet args..." in a process group of its own,
// keeping its standard error; the test's end stops it with SIGTERM (the
// group is killed if it does not exit within 10s).
func startLogged(t *testing.T, args ...string) loggedProcess {
	t.Helper()
	p := loggedProcess{lockedBuffer: &lockedBuffer{}, cmd: exec.Command(os.Args[0], args...)}
	p.cmd.Env = append(os.Environ(), "MCPFLEET_RUN_MAIN=1")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Stderr = p.lockedBuffer
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		kill := time.AfterFunc(10*time.Second, func() { syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) })
		p.cmd.Wait()
		kill.Stop()
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	})
	return p
}

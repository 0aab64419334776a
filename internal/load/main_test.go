package load

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is the mcpfleet binary the package's fleets run, built once.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	out  []byte
}

// mcpfleetBinary builds cmd/mcpfleet once for every test of the package.
func mcpfleetBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to build mcpfleet with")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "mcpfleet-load-test-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "mcpfleet")
		built.out, built.err = exec.Command(goTool, "build", "-o", built.bin, "github.com/mcpfleet/mcpfleet/cmd/mcpfleet").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("building mcpfleet: %v\n%s", built.err, built.out)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

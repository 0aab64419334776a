package stdio

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// ErrWrite is wrapped by the error of a write to a child's stdin that
// failed or did not finish within the write timeout.
var ErrWrite = errors.New("writing to the child")

// process is one run of a child: its own process group, stdin written
// line by line within a deadline, stdout read by its owner, stderr
// drained into a ring.
type process struct {
	cmd     *exec.Cmd
	pid     int
	started time.Time
	stdin   *os.File
	stdout  *lineReader
	outFile *os.File // stdout's read end, closed by stop
	stderr  *lineRing

	writeTimeout time.Duration
	wmu          sync.Mutex // guards writes to stdin and line
	line         []byte     // the line being written

	exited  chan struct{} // closed once Wait has returned
	waitErr error         // Wait's result; read after exited is closed
}

// startProcess runs argv in dir with exactly env, in a process group of
// its own (so that stopping it reaches every process it started: an npx
// or sh -c wrapper's server is a grandchild), its stderr drained into a
// ring of stderrLines lines.
func startProcess(argv, env []string, dir string, maxLine, stderrLines int, writeTimeout time.Duration) (*process, error) {
	if len(argv) == 0 {
		return nil, errors.New("starting a child: no command")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting a child: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("starting a child: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would mean the gateway's own environment
	}
	errR, errW, err := os.Pipe()
	if err == nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
		cmd.SysProcAttr = sysProcAttr()
		err = cmd.Start()
		errW.Close()
	}
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		if errR != nil {
			errR.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	p := &process{
		cmd: cmd, pid: cmd.Process.Pid, started: time.Now(), stdin: inW,
		stdout: newLineReader(outR, maxLine), outFile: outR, stderr: newLineRing(stderrLines),
		writeTimeout: writeTimeout, exited: make(chan struct{}),
	}
	go p.drain(errR)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// drain keeps the child's stderr lines until every process of its group
// has closed it.
func (p *process) drain(stderr *os.File) {
	defer stderr.Close()
	r := bufio.NewReaderSize(stderr, 4096)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			p.stderr.add(string(trimEOL(line)))
			for errors.Is(err, bufio.ErrBufferFull) { // the rest of a long line
				_, err = r.ReadSlice('\n')
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// maxKeptLine bounds the write buffer a child keeps between messages.
const maxKeptLine = 64 << 10

// write sends msg as one line, within the write timeout: a child that
// stops reading holds its caller no longer.
func (p *process) write(msg []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.writeTimeout > 0 {
		_ = p.stdin.SetWriteDeadline(time.Now().Add(p.writeTimeout))
	}
	// One write of the line and its newline, from a buffer kept for
	// the next message unless it grew past a common one.
	p.line = append(append(p.line[:0], msg...), '\n')
	_, err := p.stdin.Write(p.line)
	if cap(p.line) > maxKeptLine {
		p.line = nil
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrWrite, err)
	}
	return nil
}

// stop ends the child's whole process group: SIGTERM, then SIGKILL to
// whatever of the group is left after grace. It returns once the leader
// has exited; idempotent.
func (p *process) stop(grace time.Duration) {
	p.stdin.Close()
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	// The leader gone, its group may live on (a wrapper's server): it
	// gets the rest of grace.
	for groupAlive(p.pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	<-p.exited
	p.outFile.Close()
}

// kill ends the child's group at once.
func (p *process) kill() { _ = syscall.Kill(-p.pid, syscall.SIGKILL) }

// groupAlive reports whether any process of group pgid is left.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

// exitStatus says how the child ended, once it has.
func (p *process) exitStatus() string {
	select {
	case <-p.exited:
	default:
		return "running"
	}
	if p.waitErr == nil {
		return "exit status 0"
	}
	return p.waitErr.Error()
}

package stdio

import "syscall"

// sysProcAttr puts a child in a process group of its own, and kills it
// when the gateway dies however it dies (Linux PR_SET_PDEATHSIG, a
// backstop: the gateway stops its children's groups itself). The signal
// comes when the thread that started the child exits; Go keeps its
// threads, except those of goroutines that exit locked to one, which this
// package does not do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Package sockowner says which process listens on a TCP port, so that
// "address already in use" can name it. It reads Linux's /proc (the
// socket tables /proc/net/tcp and tcp6, then each process's open file
// descriptors), as ss -ltnp does; elsewhere, or where /proc hides another
// user's processes, it finds less or nothing. It is best effort: nothing
// it cannot read is an error.
package sockowner

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Owner is what is known of a port's listener.
type Owner struct {
	// UID is the socket's owner, from the socket table; -1 when unknown.
	UID int
	// PID and Name are the process holding it (Name from
	// /proc/PID/comm); PID is 0 when no visible process holds it.
	PID  int
	Name string
}

// tcpListen is the state of a listening socket in /proc/net/tcp (TCP_LISTEN
// in the kernel's include/net/tcp_states.h).
const tcpListen = "0A"

// Find returns the listeners of TCP port under root (normally "/proc"):
// one Owner per process holding a listening socket on it, or one with
// PID 0 per socket whose process is not visible. None when the port has
// no visible listener.
func Find(root string, port int) []Owner {
	inodes := map[string]int{} // socket inode -> owner uid
	for _, table := range []string{"net/tcp", "net/tcp6"} {
		f, err := os.Open(filepath.Join(root, table))
		if err != nil {
			continue
		}
		for inode, uid := range Listening(f, port) {
			inodes[inode] = uid
		}
		f.Close()
	}
	if len(inodes) == 0 {
		return nil
	}
	var out []Owner
	seen := map[string]bool{}
	procs, _ := os.ReadDir(root)
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join(root, p.Name())
		for _, inode := range socketInodes(filepath.Join(dir, "fd")) {
			uid, ok := inodes[inode]
			if !ok || seen[inode+"/"+p.Name()] {
				continue
			}
			seen[inode+"/"+p.Name()], seen[inode] = true, true
			comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
			out = append(out, Owner{UID: uid, PID: pid, Name: strings.TrimSpace(string(comm))})
		}
	}
	for inode, uid := range inodes {
		if !seen[inode] {
			out = append(out, Owner{UID: uid})
		}
	}
	return out
}

// socketInodes are the inodes of the sockets open in the fd directory.
func socketInodes(fdDir string) []string {
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return nil // another user's process, or gone
	}
	var out []string
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			out = append(out, strings.TrimSuffix(inode, "]"))
		}
	}
	return out
}

// Listening reads a socket table in the format of /proc/net/tcp and
// returns the inodes of its listening sockets on port, with their owners'
// uids. Lines it cannot read are skipped.
func Listening(r io.Reader, port int) map[string]int {
	out := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != tcpListen {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if !ok || err != nil || int(p) != port {
			continue
		}
		uid, err := strconv.Atoi(f[7])
		if err != nil {
			uid = -1
		}
		out[f[9]] = uid
	}
	return out
}

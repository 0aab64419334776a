package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/mcpfleet/mcpfleet/internal/sockowner"
)

// listenTCP listens on addr for the listener that key names (listen,
// admin, --listen): a port already in use is an error that names the port
// and, where /proc shows it, the process that holds it, instead of the
// kernel's bare "address already in use".
func listenTCP(key, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	_, portText, _ := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(portText)
	if !errors.Is(err, syscall.EADDRINUSE) || perr != nil {
		return nil, fmt.Errorf("%s: listening on %s: %w", key, addr, err)
	}
	return nil, portInUse(key, addr, port, sockowner.Find("/proc", port), os.Getpid())
}

// portInUse says that port is taken, by whom when owners say; self is
// this process's pid (two of its own listeners on one port).
func portInUse(key, addr string, port int, owners []sockowner.Owner, self int) error {
	var named, hidden []string
	for _, o := range owners {
		switch {
		case o.PID == self:
			named = append(named, "another listener of this same process (give each listener its own port)")
		case o.PID > 0:
			named = append(named, fmt.Sprintf("%s (pid %d)", o.Name, o.PID))
		case o.UID >= 0:
			hidden = append(hidden, fmt.Sprintf("a process of uid %d that this user cannot see", o.UID))
		}
	}
	by := ""
	switch {
	case len(named) > 0:
		by = " by " + strings.Join(named, ", ")
	case len(hidden) > 0:
		by = " by " + hidden[0]
	}
	return fmt.Errorf("%s: port %d (%s) is already in use%s: stop it or choose another port", key, port, addr, by)
}

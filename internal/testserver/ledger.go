package testserver

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// LedgerEntry is one mutation recorded in a ledger.
type LedgerEntry struct {
	Key     string
	Replica string
	Time    string // RFC 3339 with nanoseconds, UTC
	Op      string // the call's idempotency key, "" if it had none
}

// Ledger is a ledger file shared by replicas (and by one replica across its
// restarts). Besides recording mutations it answers whether an operation was
// already applied, under an exclusive file lock, so that a mutating call
// re-executed anywhere in the fleet recognises itself: the tool-side half of
// idempotency (the fleet lab's toggle).
type Ledger struct {
	f *os.File
}

// OpenLedger opens (creating) the ledger file at path for appending.
func OpenLedger(path string) (*Ledger, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening ledger: %w", err)
	}
	return &Ledger{f: f}, nil
}

// Close closes the file.
func (l *Ledger) Close() error { return l.f.Close() }

// Write appends one line, under the file lock.
func (l *Ledger) Write(p []byte) (int, error) {
	if err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("locking ledger: %w", err)
	}
	defer syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	return l.f.Write(p)
}

// applyOnce appends line unless an entry for (key, op) is already in the
// file; it reports whether it appended. Check and append hold one lock.
func (l *Ledger) applyOnce(key, op string, line []byte) (bool, error) {
	fd := int(l.f.Fd())
	if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
		return false, fmt.Errorf("locking ledger: %w", err)
	}
	defer syscall.Flock(fd, syscall.LOCK_UN)
	entries, err := ReadLedger(io.NewSectionReader(l.f, 0, 1<<62))
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if e.Op == op && e.Key == key {
			return false, nil
		}
	}
	_, err = l.f.Write(line)
	return err == nil, err
}

// ReadLedger reads a ledger written through [Options.Ledger]. A torn last
// line (a replica killed mid-write) is an error naming its line number.
func ReadLedger(r io.Reader) ([]LedgerEntry, error) {
	var out []LedgerEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		e, err := parseLedgerLine(sc.Text())
		if err != nil {
			return out, fmt.Errorf("reading ledger line %d: %w", n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

func parseLedgerLine(line string) (LedgerEntry, error) {
	var e LedgerEntry
	var err error
	rest := line
	if e.Key, rest, err = quoted(rest); err != nil {
		return e, err
	}
	if e.Replica, rest, err = quoted(strings.TrimPrefix(rest, " ")); err != nil {
		return e, err
	}
	rest = strings.TrimPrefix(rest, " ")
	e.Time, rest, _ = strings.Cut(rest, " ")
	if e.Time == "" {
		return e, fmt.Errorf("no time")
	}
	if rest != "" {
		if e.Op, _, err = quoted(rest); err != nil {
			return e, err
		}
	}
	return e, nil
}

// quoted reads one Go-quoted string from the start of s.
func quoted(s string) (string, string, error) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", fmt.Errorf("want a quoted string: %w", err)
	}
	v, err := strconv.Unquote(q)
	return v, s[len(q):], err
}

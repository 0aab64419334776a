package testserver

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// LedgerEntry is one mutation recorded in a ledger.
type LedgerEntry struct {
	Key     string
	Replica string
	Time    string // RFC 3339 with nanoseconds, UTC
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
	e.Time = strings.TrimPrefix(rest, " ")
	if e.Time == "" {
		return e, fmt.Errorf("no time")
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

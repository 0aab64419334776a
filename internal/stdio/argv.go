// Package stdio runs MCP servers that speak stdio (MCP 2025-11-25,
// "Transports", stdio) as children of the gateway: each child in its own
// process group, its environment built from configuration only, its
// stderr drained into a ring, its stdout read line by line within a
// bound, stopped with its whole group and restarted with backoff. The
// gateway is each child's one MCP client: it initializes the child once
// and multiplexes many client sessions on it (mux.go, pure).
package stdio

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCommand is wrapped by every error of SplitCommand.
var ErrCommand = errors.New("stdio command")

// shellOperators are characters a shell would give a meaning the command
// does not get here: it is never run through a shell. Unquoted, they are
// refused rather than passed on as text the writer did not mean.
const shellOperators = "|&;<>()$`*?[]{}~#"

// SplitCommand splits s into an argv as a POSIX shell splits words
// (POSIX.1-2017, XCU 2.2 "Quoting"), and no further: blanks separate words;
// single quotes keep everything up to the next single quote; double quotes
// keep everything except that a backslash escapes ", \, $ and `; outside
// quotes a backslash keeps the next character. Nothing is expanded, so an
// unquoted shell operator, an unterminated quote or a trailing backslash
// is an error; a command that needs a shell says so: sh -c '...'.
func SplitCommand(s string) ([]string, error) {
	var (
		argv []string
		word strings.Builder
		in   bool // a word has begun (it may be empty: '')
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				argv = append(argv, word.String())
				word.Reset()
				in = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("%w: unterminated single quote at byte %d", ErrCommand, i)
			}
			word.WriteString(s[i+1 : i+1+end])
			i += end + 1
			in = true
		case c == '"':
			n, err := doubleQuoted(s[i+1:], &word)
			if err != nil {
				return nil, fmt.Errorf("%w: %v at byte %d", ErrCommand, err, i)
			}
			i += n + 1
			in = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("%w: trailing backslash", ErrCommand)
			}
			i++
			word.WriteByte(s[i])
			in = true
		case strings.IndexByte(shellOperators, c) >= 0:
			return nil, fmt.Errorf("%w: %q at byte %d is shell syntax, and the command is not run through a shell: quote it, or write sh -c '...'", ErrCommand, c, i)
		default:
			word.WriteByte(c)
			in = true
		}
	}
	if in {
		argv = append(argv, word.String())
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrCommand)
	}
	return argv, nil
}

// doubleQuoted appends the text of a double-quoted string to w, s starting
// after the opening quote, and returns the index of the closing quote in s.
func doubleQuoted(s string, w *strings.Builder) (int, error) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return i, nil
		case '\\':
			if i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
				i++
				w.WriteByte(s[i])
				continue
			}
			w.WriteByte(c)
		case '$', '`':
			return 0, fmt.Errorf("%q in double quotes would be expanded by a shell", c)
		default:
			w.WriteByte(c)
		}
	}
	return 0, errors.New("unterminated double quote")
}

// QuoteCommand is SplitCommand's inverse: argv as one string that splits
// back into argv, each word single-quoted where it needs quoting.
func QuoteCommand(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && !strings.ContainsAny(a, shellOperators+" \t\n'\"\\") {
			b.WriteString(a)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

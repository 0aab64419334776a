// Package tools is what the gateway knows of the tools each replica serves
// (docs/GATEWAY.md, "Tools across the fleet"): every tool's definition as
// the replica's tools/list gives it, a canonical digest of it, a replica's
// set of them, and the lock of accepted definitions a replica is held to
// (OWASP MCP Top 10, MCP03: tool poisoning, a definition that changes after
// it was approved). It is pure: no I/O, no clock; the gateway's watcher
// lists the replicas with package listing, and the simulator drives the
// same routing decision (Declares).
package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Definition is one tool as a replica declares it: the members of a Tool
// (MCP "Tools", 2025-11-25 and 2026-07-28) that say what it does and how it
// is called. Members outside these (icons, _meta, execution) do not change
// what a model reads, and do not count.
type Definition struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Canonical returns the definition as canonical JSON: members in a fixed
// order, objects' keys sorted, no insignificant space, numbers as written,
// so that two replicas that serve the same definition give the same bytes
// whatever their JSON encoder.
func (d Definition) Canonical() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	member := func(k string, v []byte) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v)
	}
	str := func(s string) []byte { v, _ := json.Marshal(s); return v }
	for _, m := range []struct {
		k string
		v json.RawMessage
	}{{"annotations", d.Annotations}, {"description", nil}, {"inputSchema", d.InputSchema},
		{"name", nil}, {"outputSchema", d.OutputSchema}, {"title", nil}} {
		switch m.k {
		case "description":
			if d.Description != "" {
				member(m.k, str(d.Description))
			}
			continue
		case "name":
			member(m.k, str(d.Name))
			continue
		case "title":
			if d.Title != "" {
				member(m.k, str(d.Title))
			}
			continue
		}
		if len(m.v) == 0 || string(m.v) == "null" {
			continue
		}
		c, err := canonicalJSON(m.v)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %s: %w", d.Name, m.k, err)
		}
		member(m.k, c)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Digest is "sha256:" and the hex SHA-256 of the canonical definition.
func (d Definition) Digest() (string, error) {
	c, err := d.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// canonicalJSON re-encodes one JSON value with sorted keys and no space.
func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	// encoding/json writes map keys sorted and json.Number as written.
	return json.Marshal(v)
}

// Tool is a definition with its digest.
type Tool struct {
	Definition
	Digest string
}

// Set is the tools one replica serves, by name.
type Set struct {
	tools  map[string]Tool
	digest string
}

// NewSet digests defs. Two definitions of one name are refused: a replica
// serving them is ambiguous about what a call of that name runs.
func NewSet(defs []Definition) (*Set, error) {
	s := &Set{tools: make(map[string]Tool, len(defs))}
	for _, d := range defs {
		if d.Name == "" {
			return nil, errors.New("a tool without a name")
		}
		if _, dup := s.tools[d.Name]; dup {
			return nil, fmt.Errorf("tool %q declared twice", d.Name)
		}
		dg, err := d.Digest()
		if err != nil {
			return nil, err
		}
		s.tools[d.Name] = Tool{Definition: d, Digest: dg}
	}
	h := sha256.New()
	for _, n := range s.Names() {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write([]byte(s.tools[n].Digest))
		h.Write([]byte{0})
	}
	s.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return s, nil
}

// Has reports whether the set declares a tool of that name.
func (s *Set) Has(name string) bool {
	if s == nil {
		return false
	}
	_, ok := s.tools[name]
	return ok
}

// Get returns the tool of that name.
func (s *Set) Get(name string) (Tool, bool) {
	if s == nil {
		return Tool{}, false
	}
	t, ok := s.tools[name]
	return t, ok
}

// Names returns the tools' names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	names := make([]string, 0, len(s.tools))
	for n := range s.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Len returns how many tools the set has.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.tools)
}

// Digest names the whole set: replicas that serve the same tools have the
// same digest.
func (s *Set) Digest() string {
	if s == nil {
		return ""
	}
	return s.digest
}

// Change is one way a replica's tools differ from what it is held to.
type Change struct {
	Tool string `json:"tool"`
	// What is "added" (a name the lock does not know), "removed" (a locked
	// tool the replica does not serve: reported, never a violation),
	// or the members that changed: "description", "title", "input schema",
	// "output schema", "annotations", comma-separated.
	What string `json:"change"`
}

// Violation reports whether the change breaks the lock: every change but a
// removal.
func (c Change) Violation() bool { return c.What != "removed" }

// differences names the members in which a and b differ.
func differences(a, b Definition) string {
	var w []string
	if a.Description != b.Description {
		w = append(w, "description")
	}
	if a.Title != b.Title {
		w = append(w, "title")
	}
	same := func(x, y json.RawMessage) bool {
		cx, ex := canonicalJSON(orNull(x))
		cy, ey := canonicalJSON(orNull(y))
		return ex == nil && ey == nil && bytes.Equal(cx, cy)
	}
	if !same(a.InputSchema, b.InputSchema) {
		w = append(w, "input schema")
	}
	if !same(a.OutputSchema, b.OutputSchema) {
		w = append(w, "output schema")
	}
	if !same(a.Annotations, b.Annotations) {
		w = append(w, "annotations")
	}
	if len(w) == 0 {
		return "definition"
	}
	return strings.Join(w, ", ")
}

func orNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	return r
}

// Against compares a replica's set with a lock: every tool whose digest
// the lock does not accept, by name, and what changed against the locked
// version it is nearest to (the first listed), and every locked name the
// replica does not serve. Sorted by tool.
func (l *Lock) Against(s *Set) []Change {
	var out []Change
	for _, n := range s.Names() {
		t := s.tools[n]
		versions := l.byName[n]
		if len(versions) == 0 {
			out = append(out, Change{Tool: n, What: "added"})
			continue
		}
		if slices.ContainsFunc(versions, func(e Entry) bool { return e.Digest == t.Digest }) {
			continue
		}
		what := "definition"
		if d := versions[0].Definition; d != nil {
			what = differences(*d, t.Definition)
		}
		out = append(out, Change{Tool: n, What: what})
	}
	for _, n := range l.names {
		if !s.Has(n) {
			out = append(out, Change{Tool: n, What: "removed"})
		}
	}
	slices.SortStableFunc(out, func(a, b Change) int { return strings.Compare(a.Tool, b.Tool) })
	return out
}

// Compare is Against for two sets: what b changes of a (a new replica
// against the one the others agree on).
func Compare(a, b *Set) []Change {
	return (&Lock{}).from(a).Against(b)
}

// Majority returns the digest most replicas' sets share, and how many do;
// nil sets (never listed) do not vote. Ties go to the smallest digest, so
// every gateway names the same.
func Majority(sets []*Set) (string, int) {
	count := map[string]int{}
	for _, s := range sets {
		if s != nil {
			count[s.digest]++
		}
	}
	best, n := "", 0
	for d, c := range count {
		if c > n || (c == n && d < best) {
			best, n = d, c
		}
	}
	return best, n
}

// Declares reports, for a call of tool, which of n replicas it may go to
// by their tools: those whose set declares it, when at least one eligible
// replica does; otherwise every replica (the call goes as it would have,
// and the replica answers for itself). eligible and set describe replica i.
// It is the routing rule of tool-aware routing, for the gateway and the
// simulator alike.
func Declares(n int, tool string, eligible func(i int) bool, has func(i int, tool string) bool) func(i int) bool {
	any := false
	for i := range n {
		if eligible(i) && has(i, tool) {
			any = true
			break
		}
	}
	if !any {
		return func(int) bool { return true }
	}
	return func(i int) bool { return has(i, tool) }
}

package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"

	"go.yaml.in/yaml/v3"
)

// Lock is the set of accepted tool definitions (tools.lock_file). A name
// may have several accepted versions at once: that is how a deliberate
// change of a definition rolls through a fleet (lock the new version beside
// the old, roll the replicas, drop the old one).
type Lock struct {
	Tools []Entry `yaml:"tools"`

	byName map[string][]Entry
	names  []string // sorted, once each
}

// Entry is one accepted version of one tool: its name and digest, and the
// definition itself, for people to read and diff (and to say what changed
// when a replica's differs). The digest decides; the definition is not
// checked against it beyond its name.
type Entry struct {
	Name       string      `yaml:"name"`
	Digest     string      `yaml:"digest"`
	Definition *Definition `yaml:"definition,omitempty"`
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ParseLock reads a lock file strictly: unknown keys, a digest that is not
// "sha256:" and 64 lowercase hex digits, an entry without a name, and the
// same version listed twice are refused, naming the entry.
func ParseLock(b []byte) (*Lock, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var raw struct {
		Tools []struct {
			Name       string    `yaml:"name"`
			Digest     string    `yaml:"digest"`
			Definition yaml.Node `yaml:"definition"`
		} `yaml:"tools"`
	}
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("tools lock: %w", err)
	}
	l := &Lock{}
	seen := map[string]bool{}
	for i, t := range raw.Tools {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("tools lock: tools[%d]: a name is required", i)
		case !digestRE.MatchString(t.Digest):
			return nil, fmt.Errorf("tools lock: tools[%d] (%s): digest %q: want sha256: and 64 lowercase hex digits", i, t.Name, t.Digest)
		case seen[t.Name+" "+t.Digest]:
			return nil, fmt.Errorf("tools lock: tools[%d] (%s): this version is listed twice", i, t.Name)
		}
		seen[t.Name+" "+t.Digest] = true
		e := Entry{Name: t.Name, Digest: t.Digest}
		if t.Definition.Kind != 0 {
			var v any
			if err := t.Definition.Decode(&v); err != nil {
				return nil, fmt.Errorf("tools lock: tools[%d] (%s): definition: %w", i, t.Name, err)
			}
			j, err := json.Marshal(yamlToJSON(v))
			if err != nil {
				return nil, fmt.Errorf("tools lock: tools[%d] (%s): definition: %w", i, t.Name, err)
			}
			var d Definition
			if err := json.Unmarshal(j, &d); err != nil {
				return nil, fmt.Errorf("tools lock: tools[%d] (%s): definition: %w", i, t.Name, err)
			}
			if d.Name != t.Name {
				return nil, fmt.Errorf("tools lock: tools[%d] (%s): its definition names %q", i, t.Name, d.Name)
			}
			e.Definition = &d
		}
		l.Tools = append(l.Tools, e)
	}
	l.index()
	return l, nil
}

// yamlToJSON turns YAML's decoded maps (map[string]any already in v3) and
// numbers into values encoding/json writes as the JSON they came from.
func yamlToJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = yamlToJSON(e)
		}
	case []any:
		for i, e := range x {
			x[i] = yamlToJSON(e)
		}
	}
	return v
}

func (l *Lock) index() {
	l.byName = map[string][]Entry{}
	l.names = nil
	for _, e := range l.Tools {
		if _, ok := l.byName[e.Name]; !ok {
			l.names = append(l.names, e.Name)
		}
		l.byName[e.Name] = append(l.byName[e.Name], e)
	}
	sort.Strings(l.names)
}

// from makes l the lock of exactly s's tools.
func (l *Lock) from(s *Set) *Lock {
	l.Tools = nil
	for _, n := range s.Names() {
		t := s.tools[n]
		d := t.Definition
		l.Tools = append(l.Tools, Entry{Name: n, Digest: t.Digest, Definition: &d})
	}
	l.index()
	return l
}

// LockOf returns the lock that accepts exactly s's definitions.
func LockOf(s *Set) *Lock { return (&Lock{}).from(s) }

// Marshal writes the lock as YAML, definitions as JSON-compatible YAML, so
// that ParseLock reads it back to the same digests.
func (l *Lock) Marshal() ([]byte, error) {
	type out struct {
		Name       string `yaml:"name"`
		Digest     string `yaml:"digest"`
		Definition any    `yaml:"definition,omitempty"`
	}
	var doc struct {
		Tools []out `yaml:"tools"`
	}
	for _, e := range l.Tools {
		o := out{Name: e.Name, Digest: e.Digest}
		if e.Definition != nil {
			j, err := json.Marshal(e.Definition)
			if err != nil {
				return nil, err
			}
			var v any
			dec := json.NewDecoder(bytes.NewReader(j))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
			o.Definition = numbersAsYAML(v)
		}
		doc.Tools = append(doc.Tools, o)
	}
	if doc.Tools == nil {
		return nil, errors.New("tools lock: no tools to lock")
	}
	var b bytes.Buffer
	b.WriteString("# Accepted tool definitions (mcpfleet tools lock). A replica whose tools\n# differ from these is reported, or quarantined (tools.on_unlocked).\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// numbersAsYAML turns json.Number into YAML numbers that read back as
// written.
func numbersAsYAML(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbersAsYAML(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersAsYAML(e)
		}
	case json.Number:
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: x.String()}
		if _, err := x.Int64(); err != nil {
			n.Tag = "!!float"
		}
		return n
	}
	return v
}

package config

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// This file says what is wrong with a configuration file in its reader's
// words: each error names the line, the key path as the file writes it
// (upstreams[0].url), what was found and what is wanted, never a Go type.
// checkSchema walks the document against Config's keys before it is
// decoded; yamlError rewords whatever the decoder still says.

// checkFile parses b and checks it against the schema: decode's first
// step, so that what the decoder would say in Go's words is said in the
// reader's.
func checkFile(b []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return yamlError(err)
	}
	return checkSchema(&doc)
}

// checkSchema returns every key of doc that Config does not have and
// every value of a kind its key does not take, in the order of the file.
func checkSchema(doc *yaml.Node) error {
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil
		}
		doc = doc.Content[0]
	}
	var s schemaCheck
	s.value(doc, reflect.TypeFor[Config](), "")
	return errors.Join(s.errs...)
}

// schemaCheck gathers a document's errors.
type schemaCheck struct{ errs []error }

func (s *schemaCheck) add(n *yaml.Node, path, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if path != "" {
		msg = path + ": " + msg
	}
	s.errs = append(s.errs, fmt.Errorf("line %d: %s", n.Line, msg))
}

// value checks n against the type t of the key at path.
func (s *schemaCheck) value(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.ShortTag() == "!!null" {
		return // the key's default stands
	}
	switch t {
	case reflect.TypeFor[Duration]():
		if _, err := time.ParseDuration(n.Value); n.Kind != yaml.ScalarNode || err != nil {
			s.mismatch(n, t, path)
		}
		return
	case reflect.TypeFor[Size]():
		if _, err := ParseSize(n.Value); n.Kind != yaml.ScalarNode || err != nil {
			s.mismatch(n, t, path)
		}
		return
	case reflect.TypeFor[ServiceSpec]():
		s.service(n, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			s.mismatch(n, t, path)
			return
		}
		s.mapping(n, t, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			s.mismatch(n, t, path)
			return
		}
		for i, e := range n.Content {
			s.value(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			s.mismatch(n, t, path)
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			s.value(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))
		}
	default:
		if !scalarFits(n, t.Kind()) {
			s.mismatch(n, t, path)
		}
	}
}

// scalarFits says whether n decodes into a value of kind k.
func scalarFits(n *yaml.Node, k reflect.Kind) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	switch tag := n.ShortTag(); k {
	case reflect.Bool:
		return tag == "!!bool"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return tag == "!!int" && !strings.HasPrefix(n.Value, "-0x")
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		return tag == "!!int" && !strings.HasPrefix(n.Value, "-")
	case reflect.Float64, reflect.Float32:
		return tag == "!!int" || tag == "!!float"
	}
	return true // a string takes any scalar
}

// mapping checks the keys of n against the fields of the struct t.
func (s *schemaCheck) mapping(n *yaml.Node, t reflect.Type, path string) {
	fields := yamlFields(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "<<" {
			continue // a merge key: yaml resolves it
		}
		f, ok := fields[k.Value]
		if !ok {
			s.unknownKey(k, path, fields)
			continue
		}
		s.value(v, f, join(path, k.Value))
	}
}

// service checks one entry of services: a mapping of name, hosts,
// default and the keys a service may set over the top level.
func (s *schemaCheck) service(n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		s.add(n, path, "got %s, want a mapping: a service's name, path, hosts and its own keys", found(n))
		return
	}
	own := map[string]reflect.Type{"name": reflect.TypeFor[string](), "hosts": reflect.TypeFor[[]string](), "default": reflect.TypeFor[bool]()}
	top := yamlFields(reflect.TypeFor[Config]())
	allowed := map[string]reflect.Type{}
	for k := range serviceKeys {
		if t, ok := own[k]; ok {
			allowed[k] = t
		} else if t, ok := top[k]; ok {
			allowed[k] = t
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		t, ok := allowed[k.Value]
		switch {
		case ok:
			s.value(v, t, join(path, k.Value))
		case top[k.Value] != nil:
			s.add(k, join(path, k.Value), "not a key of a service (the listeners, TLS, the secret, the Redis server, logging and shutdown are the process's: set it at the top level)")
		default:
			s.unknownKey(k, path, allowed)
		}
	}
}

// unknownKey reports a key that is not one of known, with the key it
// most likely meant: a near spelling here, else the same key elsewhere
// in the schema (a key nested at the wrong level).
func (s *schemaCheck) unknownKey(k *yaml.Node, path string, known map[string]reflect.Type) {
	hint := ""
	if near := closest(k.Value, known); near != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", near)
	} else if elsewhere := keyPaths(k.Value); len(elsewhere) > 0 {
		hint = fmt.Sprintf(" (it is a key of %s: indent it under that key)", strings.Join(elsewhere, " and "))
	}
	s.add(k, path, "unknown key %q%s", k.Value, hint)
}

// mismatch reports a value of the wrong kind for the type t of its key.
func (s *schemaCheck) mismatch(n *yaml.Node, t reflect.Type, path string) {
	hint := ""
	if t.Kind() == reflect.Slice && n.Kind == yaml.MappingNode && t.Elem().Kind() == reflect.Struct {
		hint = ` (start each entry with "- ")`
	}
	if t == reflect.TypeFor[Duration]() && n.ShortTag() == "!!int" {
		hint = fmt.Sprintf(" (a number needs its unit: %ss, not %s)", n.Value, n.Value)
	}
	s.add(n, path, "got %s, want %s%s", found(n), wanted(t, path), hint)
}

// found says in words what a node is.
func found(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping (key: value lines)"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:37] + "..."
	}
	if n.ShortTag() == "!!str" {
		return fmt.Sprintf("%q", v)
	}
	return v
}

// stringWants are what some text keys hold, by their last name.
var stringWants = map[string]string{
	"url":               "a URL such as http://10.0.0.11:8080/mcp",
	"sse_url":           "a URL such as http://10.0.0.11:8080/sse",
	"redis_url":         "a URL such as redis://10.0.0.5:6379",
	"jwks_url":          "a URL such as https://auth.example.com/.well-known/jwks.json",
	"endpoint":          "a URL such as http://127.0.0.1:4318",
	"resource_metadata": "a URL such as https://mcp.example.com/.well-known/oauth-protected-resource",
	"listen":            "an address such as 127.0.0.1:8080",
	"admin":             "an address such as 127.0.0.1:9090",
}

// wanted says in words what a key of type t at path takes.
func wanted(t reflect.Type, path string) string {
	leaf := path[strings.LastIndexAny(path, ".]")+1:]
	switch t {
	case reflect.TypeFor[Duration]():
		return "a duration such as 15s, 500ms or 2m30s"
	case reflect.TypeFor[Size]():
		return "a size such as 262144, 256KiB or 64MiB"
	}
	switch t.Kind() {
	case reflect.String:
		if w, ok := stringWants[leaf]; ok {
			return w
		}
		if strings.HasSuffix(leaf, "_file") {
			return "the path of a file"
		}
		if strings.HasSuffix(leaf, "path") {
			return "a path such as /mcp"
		}
		return "text"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		if strings.HasSuffix(leaf, "_bytes") {
			return "a whole number of bytes such as 4194304"
		}
		return "a whole number"
	case reflect.Float64, reflect.Float32:
		return "a number such as 2 or 0.5"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "a list of mappings, each with " + someKeys(t.Elem())
		}
		return "a list such as [a, b]"
	case reflect.Map:
		return "a mapping of names to values, each " + wanted(t.Elem(), "")
	case reflect.Struct:
		return "a mapping of its keys: " + someKeys(t)
	}
	return "another kind of value"
}

// someKeys names the first keys of the struct t, as a reminder.
func someKeys(t reflect.Type) string {
	var names []string
	for _, k := range yamlKeys(t) {
		names = append(names, k.name)
	}
	if len(names) > 4 {
		names = append(names[:4], "...")
	}
	return strings.Join(names, ", ")
}

// yamlFields are the keys of the struct t and their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, k := range yamlKeys(t) {
		out[k.name] = k.typ
	}
	return out
}

// yamlKey is one key of a struct and its type.
type yamlKey struct {
	name string
	typ  reflect.Type
}

// yamlKeys are the keys of the struct t in the order of its fields, an
// inline struct's keys in its place.
func yamlKeys(t reflect.Type) []yamlKey {
	var out []yamlKey
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported() || name == "-":
		case opts == "inline" && f.Type.Kind() == reflect.Struct:
			out = append(out, yamlKeys(f.Type)...)
		case name == "":
			out = append(out, yamlKey{strings.ToLower(f.Name), f.Type})
		default:
			out = append(out, yamlKey{name, f.Type})
		}
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// closest is the key of known nearest to key, "" when none is near: at
// most two edits apart, or one a prefix of the other (a plural).
func closest(key string, known map[string]reflect.Type) string {
	best, bestD := "", 3
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		norm := strings.ToLower(strings.ReplaceAll(key, "-", "_"))
		d := editDistance(norm, k)
		if len(norm) >= 3 && (strings.HasPrefix(k, norm) || strings.HasPrefix(norm, k)) {
			d = min(d, 2)
		}
		if d < bestD && d < len(k) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// keyPaths are the places in the schema (health_check, upstreams[])
// where key is a key, for a key written at the wrong level.
func keyPaths(key string) []string {
	var out []string
	var walk func(t reflect.Type, path string, depth int)
	walk = func(t reflect.Type, path string, depth int) {
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t, path = t.Elem(), path+"[]"
		}
		if t.Kind() != reflect.Struct || depth > 3 {
			return
		}
		for name, ft := range yamlFields(t) {
			if name == key && path != "" {
				out = append(out, path)
			}
			walk(ft, join(path, name), depth+1)
		}
	}
	walk(reflect.TypeFor[Config](), "", 0)
	sort.Strings(out)
	return out
}

// goInternals matches the decoder's words for kinds and types;
// notFound its words for an unknown key.
var (
	goInternals = regexp.MustCompile(`cannot unmarshal !!(\w+) ` + "(`[^`]*` )?" + `into \S+`)
	notFound    = regexp.MustCompile(`field (\S+) not found in type \S+`)
)

// yamlError rewords an error of the YAML decoder that checkSchema did not
// foresee: its syntax errors keep their line, its type errors lose the
// Go type they name.
func yamlError(err error) error {
	msg, syntax := strings.CutPrefix(err.Error(), "yaml: line ")
	if syntax {
		return fmt.Errorf("line %s (the YAML around it does not parse: check its indentation and quotes)", msg)
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	msg = strings.ReplaceAll(msg, "\n  ", "\n")
	msg = notFound.ReplaceAllString(msg, `unknown key "$1"`)
	msg = goInternals.ReplaceAllStringFunc(msg, func(m string) string {
		kind := goInternals.FindStringSubmatch(m)[1]
		words := map[string]string{"seq": "a list", "map": "a mapping", "str": "text", "int": "a number", "bool": "true or false"}[kind]
		return "got " + cmp.Or(words, "a value") + " where another kind of value is wanted"
	})
	return errors.New(msg)
}

// Locate adds to each error of err that names a key the file at path
// wrote (key: ..., as Validate writes them) the key's line: "line 12:
// limits.store: ...". Errors of keys the file does not write stay as
// they are; a file that does not read or parse leaves err as it is.
// Only a caller whose configuration is that file's, unchanged, should
// ask: a key set by a flag would otherwise point at the file's line.
func Locate(err error, path string) error {
	b, rerr := os.ReadFile(path)
	if err == nil || rerr != nil {
		return err
	}
	return locate(err, b)
}

// locate is Locate over the file's bytes.
func locate(err error, b []byte) error {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return err
	}
	lines := map[string]int{}
	keyLines(doc.Content[0], "", lines)
	msgs := strings.Split(err.Error(), "\n")
	for i, m := range msgs {
		key, _, ok := strings.Cut(m, ": ")
		for ok && key != "" {
			if n, found := lines[key]; found {
				msgs[i] = fmt.Sprintf("line %d: %s", n, m)
				break
			}
			key = key[:max(strings.LastIndexAny(key, ".["), 0)]
		}
	}
	return locatedError{msg: strings.Join(msgs, "\n"), err: err}
}

// locatedError is a validation error with its lines; it unwraps to the
// error without them.
type locatedError struct {
	msg string
	err error
}

func (e locatedError) Error() string { return e.msg }
func (e locatedError) Unwrap() error { return e.err }

// keyLines records the line of every key path under n.
func keyLines(n *yaml.Node, path string, out map[string]int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := join(path, n.Content[i].Value)
			out[p] = n.Content[i].Line
			keyLines(n.Content[i+1], p, out)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			out[p] = e.Line
			keyLines(e, p, out)
		}
	}
}

// Package schema compiles the repository's JSON Schemas (draft 2020-12)
// and validates documents against them, with refusals that say where in
// the document and why: the simulator's result schema and the fleet view's
// share it.
package schema

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a JSON Schema compiled on first use.
type Schema struct {
	compiled func() (*jsonschema.Schema, error)
	what     string
}

// New returns the schema raw, whose $id is id, describing documents called
// what in errors ("result", "fleet view"). Formats (date-time, ...) are
// asserted.
func New(id string, raw []byte, what string) *Schema {
	return &Schema{what: what, compiled: sync.OnceValues(func() (*jsonschema.Schema, error) {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("decoding %s schema: %w", what, err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("adding %s schema: %w", what, err)
		}
		sch, err := c.Compile(id)
		if err != nil {
			return nil, fmt.Errorf("compiling %s schema: %w", what, err)
		}
		return sch, nil
	})}
}

// Validate reports whether b is one JSON value the schema accepts. A
// refusal says where in the document and why, one cause after another.
func (s *Schema) Validate(b []byte) error {
	sch, err := s.compiled()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("decoding %s: %w", s.what, err)
	}
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("%s does not match the schema: %s", s.what, describe(ve))
		}
		return fmt.Errorf("validating %s: %w", s.what, err)
	}
	return nil
}

// maxCauses bounds the causes a refusal lists.
const maxCauses = 8

// describe lists the leaves of a validation error, where each says where
// in the document and what is wrong, at most maxCauses of them.
func describe(ve *jsonschema.ValidationError) string {
	var leaves []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e.Error())
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(leaves) > maxCauses {
		leaves = append(leaves[:maxCauses], fmt.Sprintf("and %d more", len(leaves)-maxCauses))
	}
	return strings.Join(leaves, "; ")
}

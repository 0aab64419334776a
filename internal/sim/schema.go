package sim

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ResultSchema is the JSON Schema (draft 2020-12) of what `mcpfleet sim
// --json` prints and `mcpfleet load --json` prints for a real run: a Result,
// or a Result inside its mission. A real run's Result carries one more
// member, run (how it was run: endpoint, fleet, time compression, era, wall
// time, CPU). The schema is strict: no member it does not name, every member
// of the Go types required. docs/SIM.md describes it.
//
//go:embed result.schema.json
var ResultSchema []byte

// schemaURL is the schema's $id, under which it is compiled.
const schemaURL = "https://github.com/mcpfleet/mcpfleet/internal/sim/result.schema.json"

// resultSchema compiles ResultSchema once.
var resultSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ResultSchema))
	if err != nil {
		return nil, fmt.Errorf("decoding result schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("adding result schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("compiling result schema: %w", err)
	}
	return sch, nil
})

// ValidateResultJSON reports whether b is one JSON value that ResultSchema
// accepts. A refusal says where in the document and why, one line per
// cause.
func ValidateResultJSON(b []byte) error {
	sch, err := resultSchema()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("decoding result: %w", err)
	}
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("result does not match the schema: %s", describe(ve))
		}
		return fmt.Errorf("validating result: %w", err)
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

package sim

import (
	_ "embed"

	"github.com/mcpfleet/mcpfleet/internal/schema"
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

// resultSchema is ResultSchema under its $id.
var resultSchema = schema.New("https://github.com/mcpfleet/mcpfleet/internal/sim/result.schema.json", ResultSchema, "result")

// ValidateResultJSON reports whether b is one JSON value that ResultSchema
// accepts. A refusal says where in the document and why, one line per
// cause.
func ValidateResultJSON(b []byte) error { return resultSchema.Validate(b) }

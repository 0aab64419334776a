package admin

import (
	_ "embed"

	"github.com/mcpfleet/mcpfleet/internal/schema"
)

// FleetSchema is the JSON Schema (draft 2020-12) of GET /api/fleet's
// answer: strict, no member it does not name. docs/ADMIN.md describes it.
//
//go:embed fleet.schema.json
var FleetSchema []byte

var fleetSchema = schema.New("https://github.com/mcpfleet/mcpfleet/internal/admin/fleet.schema.json", FleetSchema, "fleet view")

// ValidateFleetJSON reports whether b is one JSON value FleetSchema
// accepts; a refusal names each place and cause.
func ValidateFleetJSON(b []byte) error { return fleetSchema.Validate(b) }

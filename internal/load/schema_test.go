package load

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// TestSchemaCoversTheRunInfo: the schema's run and audit objects name
// exactly the JSON members of RunInfo and Audit, so neither can fall
// behind the other.
func TestSchemaCoversTheRunInfo(t *testing.T) {
	var schema struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(sim.ResultSchema, &schema); err != nil {
		t.Fatal(err)
	}
	for def, v := range map[string]any{"run": RunInfo{}, "audit": Audit{}} {
		var tags []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			tags = append(tags, name)
		}
		var props []string
		for p := range schema.Defs[def].Properties {
			props = append(props, p)
		}
		slices.Sort(tags)
		slices.Sort(props)
		if !slices.Equal(tags, props) {
			t.Errorf("$defs/%s members %v, Go type %T members %v", def, props, v, tags)
		}
	}
}

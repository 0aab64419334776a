package helm

import (
	"strings"
	"testing"
)

// TestDecodingIsStrict shows that the decoder refuses what the API server
// refuses with fieldValidation=Strict: each case changes one line of the
// rendered gateway Deployment, which decodes as it is.
func TestDecodingIsStrict(t *testing.T) {
	r := mustRender(t, renderOptions{})
	var doc string
	for _, o := range r.objects {
		if o.gvk.Kind == "Deployment" && component(o.obj) == "gateway" {
			doc = o.raw
		}
	}
	if _, err := decode(doc); err != nil {
		t.Fatalf("the rendered Deployment: %v", err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"mis-cased field", "containerPort: 8080", "containerport: 8080", `unknown field "spec.template.spec.containers[0].ports[0].containerport"`},
		{"misspelled field", "readinessProbe:", "readynessProbe:", `unknown field "spec.template.spec.containers[0].readynessProbe"`},
		{"duplicate field", "replicas: 3", "replicas: 3\n  replicas: 4", `"replicas" already set`},
		{"wrong type", "containerPort: 8080", "containerPort: \"8080\"", "cannot unmarshal string"},
		{"unknown kind", "kind: Deployment", "kind: Deployments", `no kind "Deployments"`},
		{"kind of another group", "apiVersion: apps/v1", "apiVersion: extensions/v1beta1", "no kind"},
		{"a kind the chart never makes", doc, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: mcp\n", "unexpected kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(doc, tc.old) {
				t.Fatalf("the Deployment has no %q", tc.old)
			}
			_, err := decode(strings.Replace(doc, tc.old, tc.new, 1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
}

package helm

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// TestPlainHelmTemplate renders the chart as `helm template t
// deploy/helm/mcpfleet` does, with no flag: Helm's own client-only install
// and its default capabilities (Kubernetes v1.20.0), the way GitOps tools
// and reviewers render charts.
func TestPlainHelmTemplate(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "t", "default"
	rel, err := install.Run(ch, map[string]any{})
	if err != nil {
		t.Fatalf("helm template t %s: %v", chartDir, err)
	}
	for _, want := range []string{"kind: Deployment", "name: t-mcpfleet", "kind: ConfigMap"} {
		if !strings.Contains(rel.Manifest, want) {
			t.Errorf("the manifest has no %q", want)
		}
	}
}

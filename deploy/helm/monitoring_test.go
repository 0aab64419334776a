package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
)

// The chart carries copies of the alert rules and the dashboard, because
// .Files.Get reads only inside the chart; deploy/prometheus and
// deploy/grafana hold the originals.
var monitoringCopies = map[string]string{
	filepath.Join("..", "prometheus", "alerts.yaml"): filepath.Join(chartDir, "files", "alerts.yaml"),
	filepath.Join("..", "grafana", "mcpfleet.json"):  filepath.Join(chartDir, "files", "mcpfleet.json"),
}

// TestMonitoringFilesAreCopies: the chart's alert rules and dashboard are
// the originals byte for byte.
func TestMonitoringFilesAreCopies(t *testing.T) {
	for orig, cp := range monitoringCopies {
		a, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(cp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: cp %s %s", cp, orig, filepath.Join("deploy", strings.TrimPrefix(orig, "../")), filepath.Join("deploy/helm", cp))
		}
	}
}

// TestMonitoringObjects: by default the chart makes neither a
// PrometheusRule nor a dashboard; with prometheusRule.enabled it makes one
// PrometheusRule whose groups are alerts.yaml's, decoded strictly into the
// Prometheus Operator's types, with grafanaDashboard.enabled one ConfigMap
// with the sidecar's label holding the dashboard as it is.
func TestMonitoringObjects(t *testing.T) {
	if n := count[*monitoringv1.PrometheusRule](mustRender(t, renderOptions{}), ""); n != 0 {
		t.Errorf("%d PrometheusRules by default", n)
	}
	if n := count[*corev1.ConfigMap](mustRender(t, renderOptions{}), "monitoring"); n != 0 {
		t.Errorf("%d dashboard ConfigMaps by default", n)
	}
	r := mustRender(t, renderOptions{files: []string{"rules-dashboard.yaml"}})
	checkRelease(t, r)

	rule := only[*monitoringv1.PrometheusRule](t, r, "monitoring")
	if rule.Labels["release"] != "prometheus" {
		t.Errorf("PrometheusRule labels %v, want prometheusRule.labels among them", rule.Labels)
	}
	want := canonicalRules(t)
	if !reflect.DeepEqual(rule.Spec, want) {
		t.Errorf("the PrometheusRule's spec is not alerts.yaml's:\n got %+v\nwant %+v", rule.Spec, want)
	}
	alerts := 0
	for _, g := range rule.Spec.Groups {
		for _, rl := range g.Rules {
			if rl.Alert != "" && rl.Annotations["summary"] != "" && rl.Annotations["runbook_url"] != "" {
				alerts++
			}
		}
	}
	if alerts < 9 {
		t.Errorf("%d alerts with a summary and a runbook_url, want at least 9", alerts)
	}

	cm := only[*corev1.ConfigMap](t, r, "monitoring")
	if cm.Labels["grafana_dashboard"] != "1" || cm.Annotations["grafana_folder"] != "mcpfleet" {
		t.Errorf("dashboard ConfigMap labels %v, annotations %v: want grafana_dashboard \"1\" and grafanaDashboard.annotations", cm.Labels, cm.Annotations)
	}
	dash, err := os.ReadFile(filepath.Join("..", "grafana", "mcpfleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["mcpfleet.json"]; got != strings.TrimRight(string(dash), "\n") {
		t.Errorf("the ConfigMap's mcpfleet.json is not deploy/grafana/mcpfleet.json (%d bytes against %d)", len(got), len(dash))
	}
}

// canonicalRules decodes deploy/prometheus/alerts.yaml strictly as the
// spec of a PrometheusRule.
func canonicalRules(t testing.TB) monitoringv1.PrometheusRuleSpec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var spec strings.Builder
	for line := range strings.Lines(string(b)) {
		spec.WriteString("  " + line)
	}
	doc := "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: x\nspec:\n" + spec.String()
	o, err := decode(doc)
	if err != nil {
		t.Fatalf("alerts.yaml as a PrometheusRule: %v", err)
	}
	return o.obj.(*monitoringv1.PrometheusRule).Spec
}

// grafanaDashboard is the part of Grafana's dashboard JSON model that the
// checks read.
type grafanaDashboard struct {
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *grafanaDatasource       `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []grafanaTarget          `json:"targets"`
}

type grafanaTarget struct {
	RefID      string             `json:"refId"`
	Expr       string             `json:"expr"`
	Datasource *grafanaDatasource `json:"datasource"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// TestDashboardIsGrafanaJSON checks the dashboard as Grafana loads it: a
// uid, a title, a schemaVersion of Grafana 10 or later, a data source
// variable of type prometheus that every panel and query uses, and panels
// with unique ids on the 24-column grid without overlapping.
func TestDashboardIsGrafanaJSON(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "grafana", "mcpfleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want a uid, a title and 36 or later", d.UID, d.Title, d.SchemaVersion)
	}
	hasDS := false
	for _, v := range d.Templating.List {
		hasDS = hasDS || v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}
	if !hasDS {
		t.Error("no datasource variable of type prometheus")
	}
	for _, err := range checkPanels(d.Panels) {
		t.Error(err)
	}
}

// checkPanels returns what is wrong with the panels' ids, places and data
// sources.
func checkPanels(panels []grafanaPanel) []error {
	var errs []error
	ids := map[int]bool{}
	var cells [][24]string // cells[y][x]: the panel there
	for _, p := range panels {
		g := p.GridPos
		if ids[p.ID] || p.ID == 0 {
			errs = append(errs, fmt.Errorf("panel %q: id %d missing or taken", p.Title, p.ID))
		}
		ids[p.ID] = true
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			errs = append(errs, fmt.Errorf("panel %q: gridPos %+v off the grid", p.Title, g))
			continue
		}
		for len(cells) < g.Y+g.H {
			cells = append(cells, [24]string{})
		}
		for y := g.Y; y < g.Y+g.H; y++ {
			for x := g.X; x < g.X+g.W; x++ {
				if cells[y][x] != "" {
					errs = append(errs, fmt.Errorf("panel %q overlaps %q at (%d, %d)", p.Title, cells[y][x], x, y))
				}
				cells[y][x] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			errs = append(errs, fmt.Errorf("panel %q: data source %+v, %d queries: want ${datasource} and a query", p.Title, p.Datasource, len(p.Targets)))
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				errs = append(errs, fmt.Errorf("panel %q: query %q (%s) without an expression, refId or ${datasource}", p.Title, tg.RefID, tg.Expr))
			}
		}
	}
	return errs
}

// TestCheckPanelsFindsFaults: the dashboard check sees an overlap, a
// taken id, a panel off the grid and a panel with no data source.
func TestCheckPanelsFindsFaults(t *testing.T) {
	ds := &grafanaDatasource{Type: "prometheus", UID: "${datasource}"}
	panel := func(id, x, y, w int, ds *grafanaDatasource) grafanaPanel {
		p := grafanaPanel{ID: id, Type: "timeseries", Title: fmt.Sprint("p", id), Datasource: ds}
		p.GridPos.X, p.GridPos.Y, p.GridPos.W, p.GridPos.H = x, y, w, 8
		p.Targets = []grafanaTarget{{"A", "mcpfleet_open_streams", ds}}
		return p
	}
	if errs := checkPanels([]grafanaPanel{panel(1, 0, 0, 12, ds), panel(2, 12, 0, 12, ds)}); len(errs) != 0 {
		t.Fatalf("two panels side by side: %v", errs)
	}
	for _, tc := range []struct {
		name   string
		panels []grafanaPanel
		want   string
	}{
		{"overlap", []grafanaPanel{panel(1, 0, 0, 12, ds), panel(2, 8, 4, 12, ds)}, "overlaps"},
		{"taken id", []grafanaPanel{panel(1, 0, 0, 12, ds), panel(1, 12, 0, 12, ds)}, "taken"},
		{"off the grid", []grafanaPanel{panel(1, 16, 0, 12, ds)}, "off the grid"},
		{"no data source", []grafanaPanel{panel(1, 0, 0, 12, nil)}, "want ${datasource}"},
	} {
		errs := checkPanels(tc.panels)
		if len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, errs, tc.want)
		}
	}
}

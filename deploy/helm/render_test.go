// Package helm tests the chart in mcpfleet/ offline: it renders the chart
// with Helm's own engine, as `helm install` would, decodes every object
// strictly into the Kubernetes API types, as the API server does with
// fieldValidation=Strict, and checks what must hold for the fleet to work:
// probes, drain timing, the secret file's mode, selectors, the shared store.
package helm

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

const (
	chartDir  = "mcpfleet"
	namespace = "mcp"
	// kubeVersion is the cluster the render assumes. The chart names no
	// kubeVersion (a plain `helm template` assumes v1.20.0 and would refuse
	// it); its one need of a newer cluster, the preStop sleep of 1.30, is
	// documented with gateway.preStopSleepSeconds.
	kubeVersion = "v1.34.0"
)

// kinds are the objects the chart may make, each decoded into its API type.
var kinds = map[schema.GroupVersionKind]bool{
	corev1.SchemeGroupVersion.WithKind("ConfigMap"):                            true,
	corev1.SchemeGroupVersion.WithKind("Secret"):                               true,
	corev1.SchemeGroupVersion.WithKind("Service"):                              true,
	appsv1.SchemeGroupVersion.WithKind("Deployment"):                           true,
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"):                          true,
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"):                true,
	autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"):       true,
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"):                  true,
	monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.ServiceMonitorsKind): true,
	monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PrometheusRuleKind):  true,
}

// decoder is apimachinery's JSON/YAML serializer in strict mode: an unknown
// field, a field spelled in another case (field names are case-sensitive,
// unlike encoding/json's) or a duplicate field is an error.
var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme, monitoringv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, s, s,
		kjson.SerializerOptions{Yaml: true, Strict: true})
}()

// release is one render of the chart.
type release struct {
	values  map[string]any // .Values, as the templates saw them
	objects []object
	notes   string // NOTES.txt, which helm install prints
}

// object is one rendered manifest, decoded.
type object struct {
	source string // the template it came from
	gvk    schema.GroupVersionKind
	obj    runtime.Object
	raw    string
}

// renderOptions say how to render: the release name (default "mcpfleet"),
// values files under testdata/ merged in order as `helm install -f` does,
// then values set last, as `--set` does.
type renderOptions struct {
	release string
	files   []string
	set     map[string]any
	// cluster, when not nil, answers the chart's lookups, as the cluster
	// of a `helm upgrade` does; the render is then not strict (Helm's
	// engine takes a cluster or strictness, not both).
	cluster engine.ClientProvider
}

// render renders the chart as `helm install --dry-run` would, values
// validated against values.schema.json, and decodes every object strictly.
func render(opts renderOptions) (*release, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading chart: %w", err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: kubeVersion, Major: "1", Minor: "34"}
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, kubeVersion) {
		return nil, fmt.Errorf("chart needs Kubernetes %s, not %s", ch.Metadata.KubeVersion, kubeVersion)
	}
	vals := map[string]any{}
	for _, f := range opts.files {
		v, err := chartutil.ReadValuesFile(path.Join("testdata", f))
		if err != nil {
			return nil, err
		}
		vals = mergeMaps(vals, v)
	}
	vals = mergeMaps(vals, opts.set)
	name := opts.release
	if name == "" {
		name = "mcpfleet"
	}
	top, err := chartutil.ToRenderValues(ch, vals,
		chartutil.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	// Strict: a template that reads a value the chart does not define fails.
	files, err := engine.Engine{Strict: true}.Render(ch, top)
	if opts.cluster != nil {
		files, err = engine.RenderWithClientProvider(ch, top, opts.cluster)
	}
	if err != nil {
		return nil, err
	}
	r := &release{values: top["Values"].(chartutil.Values).AsMap()}
	for f := range files {
		if strings.HasSuffix(f, "NOTES.txt") {
			r.notes = files[f]
			delete(files, f)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("the chart has %d hooks; it should have none", len(hooks))
	}
	for _, m := range manifests {
		o, err := decode(m.Content)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		o.source = m.Name
		r.objects = append(r.objects, o)
	}
	return r, nil
}

// decode decodes one manifest strictly into its API type, which must be
// one of kinds.
func decode(doc string) (object, error) {
	obj, gvk, err := decoder.Decode([]byte(doc), nil, nil)
	if err != nil {
		return object{}, fmt.Errorf("decoding: %w", err)
	}
	if !kinds[*gvk] {
		return object{}, fmt.Errorf("unexpected kind %s", gvk)
	}
	return object{gvk: *gvk, obj: obj, raw: doc}, nil
}

// mergeMaps merges b over a as Helm merges values files: maps are merged
// key by key, anything else is replaced.
func mergeMaps(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	for k, v := range b {
		if bv, ok := v.(map[string]any); ok {
			if av, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(av, bv)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// mustRender renders or fails the test.
func mustRender(t testing.TB, opts renderOptions) *release {
	t.Helper()
	r, err := render(opts)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

// all returns the release's objects of type T.
func all[T runtime.Object](r *release) []T {
	var out []T
	for _, o := range r.objects {
		if v, ok := o.obj.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// labelsOf returns an object's labels.
func labelsOf(obj runtime.Object) map[string]string {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	return m.GetLabels()
}

// component is an object's app.kubernetes.io/component label.
func component(obj runtime.Object) string { return labelsOf(obj)["app.kubernetes.io/component"] }

// ofComponent returns the release's objects of type T and component c.
func ofComponent[T runtime.Object](r *release, c string) []T {
	return slices.DeleteFunc(all[T](r), func(o T) bool { return component(o) != c })
}

// only returns the single object of type T and component c, or fails.
func only[T runtime.Object](t testing.TB, r *release, c string) T {
	t.Helper()
	objs := ofComponent[T](r, c)
	if len(objs) != 1 {
		var zero T
		t.Fatalf("want one %T of component %q, got %d", zero, c, len(objs))
	}
	return objs[0]
}

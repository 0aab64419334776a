package helm

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// workload is a Deployment's or StatefulSet's pod template.
type workload struct {
	id        string // Kind/name
	component string
	labels    map[string]string
	spec      *corev1.PodSpec
	selector  *metav1.LabelSelector
}

// workloads returns the release's pod templates.
func workloads(r *release) []workload {
	var out []workload
	for _, d := range all[*appsv1.Deployment](r) {
		out = append(out, workload{"Deployment/" + d.Name, component(d), d.Spec.Template.Labels, &d.Spec.Template.Spec, d.Spec.Selector})
	}
	for _, s := range all[*appsv1.StatefulSet](r) {
		out = append(out, workload{"StatefulSet/" + s.Name, component(s), s.Spec.Template.Labels, &s.Spec.Template.Spec, s.Spec.Selector})
	}
	return out
}

// selected returns the ids of the workloads whose pods sel matches.
func selected(r *release, sel labels.Selector) []string {
	var ids []string
	for _, w := range workloads(r) {
		if sel.Matches(labels.Set(w.labels)) {
			ids = append(ids, w.id)
		}
	}
	return ids
}

// selectedBy parses a label selector as the API server does (an empty one
// selects every pod) and returns what it selects.
func selectedBy(t testing.TB, r *release, what string, ls *metav1.LabelSelector) []string {
	t.Helper()
	if ls == nil {
		t.Errorf("%s: no selector", what)
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		t.Errorf("%s: selector: %v", what, err)
		return nil
	}
	if sel.Empty() {
		t.Errorf("%s: an empty selector selects every pod of the namespace", what)
	}
	return selected(r, sel)
}

// idsOf returns the ids of the workloads of component c.
func idsOf(r *release, c string) []string {
	var ids []string
	for _, w := range workloads(r) {
		if w.component == c {
			ids = append(ids, w.id)
		}
	}
	return ids
}

// container returns the container of spec named name, or fails.
func container(t testing.TB, spec *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

// containerPort resolves a port (a number, or a name of c's ports) as the
// kubelet does for probes and a Service's targetPort.
func containerPort(c *corev1.Container, p intstr.IntOrString) (int32, error) {
	if p.Type == intstr.Int {
		return p.IntVal, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, p.StrVal)
}

// namedPort returns c's port called name, or fails.
func namedPort(t testing.TB, c *corev1.Container, name string) int32 {
	t.Helper()
	p, err := containerPort(c, intstr.FromString(name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkNames checks every object's name, labels and annotations as the API
// server's name and metadata validation would (k8s.io/apimachinery's
// util/validation), and that no two objects of a kind share a name.
func checkNames(t testing.TB, r *release) {
	t.Helper()
	seen := map[string]bool{}
	for _, o := range r.objects {
		m := o.obj.(metav1.Object)
		id := o.gvk.Kind + "/" + m.GetName()
		if seen[id] {
			t.Errorf("%s: twice", id)
		}
		seen[id] = true
		check := validation.IsDNS1123Subdomain
		switch o.gvk.Kind {
		case "Service": // a DNS label that starts with a letter
			check = validation.IsDNS1035Label
		case "Deployment", "StatefulSet": // pod names and hostnames derive from it
			check = validation.IsDNS1123Label
		}
		for _, msg := range check(m.GetName()) {
			t.Errorf("%s: name: %s", id, msg)
		}
		if m.GetNamespace() != "" {
			t.Errorf("%s: sets namespace %q; the release's namespace is Helm's to set", id, m.GetNamespace())
		}
		checkLabels(t, id, m.GetLabels())
		for k := range m.GetAnnotations() {
			for _, msg := range validation.IsQualifiedName(k) {
				t.Errorf("%s: annotation %q: %s", id, k, msg)
			}
		}
	}
	for _, w := range workloads(r) {
		checkLabels(t, w.id+" pod template", w.labels)
	}
}

func checkLabels(t testing.TB, id string, l map[string]string) {
	t.Helper()
	for k, v := range l {
		for _, msg := range validation.IsQualifiedName(k) {
			t.Errorf("%s: label key %q: %s", id, k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			t.Errorf("%s: label %s value %q: %s", id, k, v, msg)
		}
	}
}

// checkWorkloads checks each pod template: its selector, its containers'
// names, ports, probes, environment, mounts and resources, and the
// security context every pod of the chart runs with.
func checkWorkloads(t testing.TB, r *release) {
	t.Helper()
	for _, w := range workloads(r) {
		got := selectedBy(t, r, w.id, w.selector)
		if !slices.Equal(got, []string{w.id}) {
			t.Errorf("%s: its selector matches %v, want its own pods only", w.id, got)
		}
		checkPodSecurity(t, w)
		vols := map[string]bool{}
		for _, v := range w.spec.Volumes {
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				t.Errorf("%s: volume %q: %s", w.id, v.Name, msg)
			}
			if v.HostPath != nil {
				t.Errorf("%s: volume %q is a hostPath", w.id, v.Name)
			}
			vols[v.Name] = true
		}
		for i := range w.spec.Containers {
			checkContainer(t, w.id, &w.spec.Containers[i], vols)
		}
	}
}

func checkPodSecurity(t testing.TB, w workload) {
	t.Helper()
	s := w.spec
	if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
		t.Errorf("%s: mounts a service account token it never uses", w.id)
	}
	if s.HostNetwork || s.HostPID || s.HostIPC {
		t.Errorf("%s: shares a host namespace", w.id)
	}
	sc := s.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("%s: no pod security context", w.id)
		return
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Errorf("%s: runAsNonRoot is not true", w.id)
	case sc.RunAsUser == nil || *sc.RunAsUser == 0:
		t.Errorf("%s: no non-root runAsUser", w.id)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("%s: seccomp profile is not RuntimeDefault", w.id)
	}
}

func checkContainer(t testing.TB, wid string, c *corev1.Container, vols map[string]bool) {
	t.Helper()
	id := wid + " container " + c.Name
	for _, msg := range validation.IsDNS1123Label(c.Name) {
		t.Errorf("%s: name: %s", id, msg)
	}
	ports := map[string]bool{}
	for _, p := range c.Ports {
		for _, msg := range validation.IsValidPortName(p.Name) {
			t.Errorf("%s: port name %q: %s", id, p.Name, msg)
		}
		for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
			t.Errorf("%s: port %d: %s", id, p.ContainerPort, msg)
		}
		if ports[p.Name] {
			t.Errorf("%s: port name %q twice", id, p.Name)
		}
		ports[p.Name] = true
	}
	for what, pr := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if pr == nil {
			t.Errorf("%s: no %s probe", id, what)
			continue
		}
		var p intstr.IntOrString
		switch {
		case pr.HTTPGet != nil:
			p = pr.HTTPGet.Port
		case pr.TCPSocket != nil:
			p = pr.TCPSocket.Port
		default:
			t.Errorf("%s: %s probe is neither httpGet nor tcpSocket", id, what)
			continue
		}
		if _, err := containerPort(c, p); err != nil {
			t.Errorf("%s: %s probe: %v", id, what, err)
		}
	}
	for _, e := range c.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			t.Errorf("%s: env %q: %s", id, e.Name, msg)
		}
	}
	for _, m := range c.VolumeMounts {
		if !vols[m.Name] {
			t.Errorf("%s: mounts volume %q, which the pod does not have", id, m.Name)
		}
	}
	for name, limit := range c.Resources.Limits {
		if req, ok := c.Resources.Requests[name]; ok && req.Cmp(limit) > 0 {
			t.Errorf("%s: %s request %s above its limit %s", id, name, req.String(), limit.String())
		}
	}
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
		t.Errorf("%s: no cpu request (the HPA and the scheduler need one)", id)
	}
	checkContainerSecurity(t, id, c.SecurityContext)
}

func checkContainerSecurity(t testing.TB, id string, sc *corev1.SecurityContext) {
	t.Helper()
	switch {
	case sc == nil:
		t.Errorf("%s: no security context", id)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("%s: allowPrivilegeEscalation is not false", id)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("%s: readOnlyRootFilesystem is not true", id)
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("%s: privileged", id)
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("%s: capabilities are not exactly drop ALL", id)
	}
}

// serviceTargets returns the containers a Service's selector reaches.
func serviceTargets(r *release, svc *corev1.Service) []*corev1.Container {
	var out []*corev1.Container
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	for _, w := range workloads(r) {
		if len(svc.Spec.Selector) > 0 && sel.Matches(labels.Set(w.labels)) {
			for i := range w.spec.Containers {
				out = append(out, &w.spec.Containers[i])
			}
		}
	}
	return out
}

// checkServices checks that each Service selects one component's pods and
// that its target ports exist there, and that only the headless Service
// of discovery selects the replicas.
func checkServices(t testing.TB, r *release) {
	t.Helper()
	for _, svc := range all[*corev1.Service](r) {
		id := "Service/" + svc.Name
		if len(svc.Spec.Selector) == 0 {
			t.Errorf("%s: no selector", id)
			continue
		}
		got := selected(r, labels.SelectorFromSet(svc.Spec.Selector))
		if want := idsOf(r, component(svc)); len(got) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: selects %v, want the %s pods %v", id, got, component(svc), want)
		}
		if component(svc) == "example-server" && (svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.PublishNotReadyAddresses) {
			t.Errorf("%s: selects the replicas but is not headless without unready addresses: a client could reach them around the gateway", id)
		}
		if svc.Spec.Type != "" && svc.Spec.Type != corev1.ServiceTypeClusterIP && component(svc) != "gateway" {
			t.Errorf("%s: type %s exposes a component other than the gateway", id, svc.Spec.Type)
		}
		for _, p := range svc.Spec.Ports {
			for _, c := range serviceTargets(r, svc) {
				if _, err := containerPort(c, p.TargetPort); err != nil {
					t.Errorf("%s port %s: %v", id, p.Name, err)
				}
			}
		}
	}
}

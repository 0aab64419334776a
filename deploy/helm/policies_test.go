package helm

import (
	"maps"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// checkDisruptionBudgets checks that each PodDisruptionBudget covers its
// own component's pods and no other's, and that the gateways have one that
// lets a node drain.
func checkDisruptionBudgets(t testing.TB, r *release) {
	t.Helper()
	for _, pdb := range all[*policyv1.PodDisruptionBudget](r) {
		got := selectedBy(t, r, "PodDisruptionBudget/"+pdb.Name, pdb.Spec.Selector)
		if want := idsOf(r, component(pdb)); !slices.Equal(got, want) {
			t.Errorf("PodDisruptionBudget/%s: selects %v, want %v", pdb.Name, got, want)
		}
		if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() < 1 {
			t.Errorf("PodDisruptionBudget/%s: want maxUnavailable of at least 1, so that a node can drain", pdb.Name)
		}
	}
	if on, _ := r.values["podDisruptionBudget"].(map[string]any)["enabled"].(bool); on {
		if len(ofComponent[*policyv1.PodDisruptionBudget](r, "gateway")) != 1 {
			t.Error("no PodDisruptionBudget for the gateways")
		}
	}
}

// checkNetworkPolicies checks that each policy admits, on its pods' own
// ports, the gateway pods and nothing else, and that with policies on, the
// replicas and Redis have one each: no client reaches them around the
// gateway. The gateways' own policy is checkGatewayPolicy's.
func checkNetworkPolicies(t testing.TB, r *release) {
	t.Helper()
	gateways := idsOf(r, "gateway")
	covered := map[string]bool{}
	for _, np := range all[*networkingv1.NetworkPolicy](r) {
		id := "NetworkPolicy/" + np.Name
		targets := selectedBy(t, r, id, &np.Spec.PodSelector)
		if slices.Contains(targets, gateways[0]) {
			checkGatewayPolicy(t, r, np)
			for _, w := range targets {
				covered[w] = true
			}
			continue
		}
		if len(targets) == 0 && !maps.Equal(np.Spec.PodSelector.MatchLabels, upstreamPodLabels(r)) {
			t.Errorf("%s: selects none of the release's pods and not networkPolicy.upstreams.podLabels", id)
		}
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
			t.Errorf("%s: policyTypes %v, want [Ingress]", id, np.Spec.PolicyTypes)
		}
		if len(np.Spec.Ingress) == 0 {
			t.Errorf("%s: no ingress rule", id)
		}
		ports := targetPorts(r, targets)
		for _, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 {
				t.Errorf("%s: a rule admits every source", id)
			}
			for _, peer := range rule.From {
				if peer.IPBlock != nil || peer.NamespaceSelector != nil || peer.PodSelector == nil {
					t.Errorf("%s: a rule admits a source other than pods of this namespace", id)
					continue
				}
				if got := selectedBy(t, r, id+" from", peer.PodSelector); !slices.Equal(got, gateways) {
					t.Errorf("%s: admits %v, want the gateways %v only", id, got, gateways)
				}
			}
			if len(rule.Ports) == 0 {
				t.Errorf("%s: a rule admits every port", id)
			}
			for _, p := range rule.Ports {
				if p.Port == nil || (len(targets) > 0 && !ports[p.Port.IntVal]) {
					t.Errorf("%s: admits port %v, which its pods do not serve", id, p.Port)
				}
			}
		}
		for _, w := range targets {
			covered[w] = true
		}
	}
	on, _ := r.values["networkPolicy"].(map[string]any)["enabled"].(bool)
	for _, c := range []string{"example-server", "redis", "gateway"} {
		for _, w := range idsOf(r, c) {
			if on && !covered[w] {
				t.Errorf("%s: no NetworkPolicy; any pod could reach it", w)
			}
		}
	}
}

// upstreamPodLabels is networkPolicy.upstreams.podLabels.
func upstreamPodLabels(r *release) map[string]string {
	out := map[string]string{}
	np, _ := r.values["networkPolicy"].(map[string]any)
	up, _ := np["upstreams"].(map[string]any)
	pl, _ := up["podLabels"].(map[string]any)
	for k, v := range pl {
		out[k], _ = v.(string)
	}
	return out
}

// targetPorts returns the container ports of the workloads ids.
func targetPorts(r *release, ids []string) map[int32]bool {
	ports := map[int32]bool{}
	for _, w := range workloads(r) {
		if slices.Contains(ids, w.id) {
			for _, c := range w.spec.Containers {
				for _, p := range c.Ports {
					ports[p.ContainerPort] = true
				}
			}
		}
	}
	return ports
}

// checkAutoscaler checks that an HPA scales the gateway Deployment, which
// then leaves its replica count to it.
func checkAutoscaler(t testing.TB, r *release) {
	t.Helper()
	hpas := all[*autoscalingv2.HorizontalPodAutoscaler](r)
	d := only[*appsv1.Deployment](t, r, "gateway")
	if len(hpas) == 0 {
		if d.Spec.Replicas == nil {
			t.Error("the gateway Deployment has no replica count and no autoscaler")
		}
		return
	}
	if len(hpas) > 1 {
		t.Fatalf("%d autoscalers", len(hpas))
	}
	h := hpas[0]
	ref := h.Spec.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Name {
		t.Errorf("HorizontalPodAutoscaler/%s: scales %s %s/%s, want Deployment/%s", h.Name, ref.APIVersion, ref.Kind, ref.Name, d.Name)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
		t.Errorf("HorizontalPodAutoscaler/%s: minReplicas %v, maxReplicas %d", h.Name, h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	if d.Spec.Replicas != nil {
		t.Error("the gateway Deployment sets replicas beside an autoscaler: every upgrade would reset the scale")
	}
}

// checkServiceMonitors checks that each ServiceMonitor selects the metrics
// Service only, on a port that Service has, which reaches the gateways'
// admin listener.
func checkServiceMonitors(t testing.TB, r *release) {
	t.Helper()
	for _, sm := range all[*monitoringv1.ServiceMonitor](r) {
		id := "ServiceMonitor/" + sm.Name
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil || sel.Empty() {
			t.Errorf("%s: selector %v: %v", id, sm.Spec.Selector, err)
			continue
		}
		var svcs []*corev1.Service
		for _, svc := range all[*corev1.Service](r) {
			if sel.Matches(labels.Set(svc.Labels)) {
				svcs = append(svcs, svc)
			}
		}
		if len(svcs) != 1 {
			t.Errorf("%s: selects %d Services, want the metrics Service only", id, len(svcs))
			continue
		}
		svc := svcs[0]
		for _, ep := range sm.Spec.Endpoints {
			if ep.Path != "/metrics" {
				t.Errorf("%s: path %q, want /metrics", id, ep.Path)
			}
			i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port })
			if i < 0 {
				t.Errorf("%s: port %q is not one of Service/%s's", id, ep.Port, svc.Name)
				continue
			}
			for _, c := range serviceTargets(r, svc) {
				p, err := containerPort(c, svc.Spec.Ports[i].TargetPort)
				if err != nil || p != namedPort(t, c, "metrics") {
					t.Errorf("%s: reaches port %d (%v), not the admin listener", id, p, err)
				}
			}
		}
	}
}

package helm

import (
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// adminToken is what serve takes as an admin token and the chart makes:
// one line of letters and digits, long enough to guess at no rate.
var adminToken = regexp.MustCompile(`^[A-Za-z0-9]{48}$`)

// checkAdminToken checks that the admin listener, on every address of the
// pod, has its token: admin_token_file is a file of a mounted Secret,
// adminToken.existingSecret's, else one the release makes with a token
// serve takes.
func checkAdminToken(t testing.TB, r *release) {
	t.Helper()
	g := gatewayOf(t, r)
	if g.cfg.AdminTokenFile == "" {
		t.Fatal("admin on every address without admin_token_file: serve refuses to start")
	}
	vol, key := secretVolumeAt(t, g, "admin_token_file", g.cfg.AdminTokenFile)
	existing, _ := r.values["adminToken"].(map[string]any)["existingSecret"].(string)
	made := madeSecret(r, vol.SecretName)
	switch {
	case existing != "" && (vol.SecretName != existing || made != nil):
		t.Errorf("admin token from Secret %s (made by the chart: %v), want the operator's %s", vol.SecretName, made != nil, existing)
	case existing == "" && made == nil:
		t.Errorf("admin_token_file from Secret %s, which the release does not make", vol.SecretName)
	case existing == "" && !adminToken.Match(made.Data[key]):
		t.Errorf("Secret %s key %s holds %d bytes, want a token of 48 letters and digits", made.Name, key, len(made.Data[key]))
	}
}

// madeSecret is the release's Secret called name, nil if it makes none.
func madeSecret(r *release, name string) *corev1.Secret {
	for _, s := range all[*corev1.Secret](r) {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// otherSecrets counts the release's Secrets but the admin token's.
func otherSecrets(r *release) int {
	n := 0
	for _, s := range all[*corev1.Secret](r) {
		if s.Name != "mcpfleet-admin" {
			n++
		}
	}
	return n
}

// checkGatewayPolicy checks the gateways' NetworkPolicy: MCP from every
// source, the admin port from the namespaces networkPolicy.admin selects
// only, and no other port.
func checkGatewayPolicy(t testing.TB, r *release, np *networkingv1.NetworkPolicy) {
	t.Helper()
	id := "NetworkPolicy/" + np.Name
	g := gatewayOf(t, r)
	mcp, adm := namedPort(t, g.c, "http"), namedPort(t, g.c, "metrics")
	if got := selectedBy(t, r, id, &np.Spec.PodSelector); !slices.Equal(got, idsOf(r, "gateway")) {
		t.Errorf("%s: selects %v, want the gateways only", id, got)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("%s: policyTypes %v, want [Ingress]", id, np.Spec.PolicyTypes)
	}
	want := adminNamespaces(t, r)
	admitted := map[int32]bool{}
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) == 0 {
			t.Errorf("%s: a rule admits every port", id)
		}
		for _, p := range rule.Ports {
			n, err := containerPort(g.c, *p.Port)
			switch {
			case err != nil || n != mcp && n != adm:
				t.Errorf("%s: admits port %v (%v), which the gateways do not serve", id, p.Port, err)
			case n == adm && len(rule.From) == 0:
				t.Errorf("%s: admits the admin port from every source", id)
			case n == mcp && len(rule.From) != 0:
				t.Errorf("%s: admits MCP only from %v; clients come from anywhere", id, rule.From)
			}
			admitted[n] = true
		}
		for _, peer := range rule.From {
			if peer.PodSelector != nil || peer.IPBlock != nil || peer.NamespaceSelector == nil || !equality.Semantic.DeepEqual(*peer.NamespaceSelector, want) {
				t.Errorf("%s: admits %+v, want the namespaces of networkPolicy.admin.namespaceSelector %+v", id, peer, want)
			}
		}
	}
	if !admitted[mcp] || !admitted[adm] {
		t.Errorf("%s: admits ports %v, want MCP (%d) and the admin port (%d)", id, admitted, mcp, adm)
	}
}

// adminNamespaces is networkPolicy.admin.namespaceSelector as a selector.
func adminNamespaces(t testing.TB, r *release) metav1.LabelSelector {
	t.Helper()
	v := r.values["networkPolicy"].(map[string]any)["admin"].(map[string]any)["namespaceSelector"]
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var ls metav1.LabelSelector
	if err := json.Unmarshal(b, &ls); err != nil {
		t.Fatal(err)
	}
	return ls
}

// TestAdminToken: the chart makes a random token at install, keeps the
// one a Secret already holds on upgrade, and makes none beside an
// operator's Secret.
func TestAdminToken(t *testing.T) {
	token := func(r *release) string {
		t.Helper()
		checkRelease(t, r)
		s := madeSecret(r, "mcpfleet-admin")
		if s == nil {
			t.Fatal("no Secret mcpfleet-admin")
		}
		return string(s.Data["admin-token"])
	}
	one, two := token(mustRender(t, renderOptions{})), token(mustRender(t, renderOptions{}))
	if one == two {
		t.Errorf("two installs made the same token %q", one)
	}
	const kept = "kept0123456789abcdefKEPT0123456789abcdefkeep0123"
	old := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "mcpfleet-admin", Namespace: namespace},
		Data:       map[string][]byte{"admin-token": []byte(kept)}}
	if got := token(mustRender(t, renderOptions{cluster: clusterOf(t, old)})); got != kept {
		t.Errorf("an upgrade made token %q, want the Secret's own %q", got, kept)
	}
	if got := token(mustRender(t, renderOptions{cluster: clusterOf(t)})); !adminToken.MatchString(got) {
		t.Errorf("an install against a cluster without the Secret made %q", got)
	}
	r := mustRender(t, renderOptions{set: map[string]any{"adminToken": map[string]any{"existingSecret": "ops-admin", "key": "token"}}})
	checkRelease(t, r)
	if s := madeSecret(r, "mcpfleet-admin"); s != nil {
		t.Error("the chart made a token beside adminToken.existingSecret")
	}
	if vol, key := secretVolumeAt(t, gatewayOf(t, r), "admin_token_file", gatewayOf(t, r).cfg.AdminTokenFile); vol.SecretName != "ops-admin" || key != "token" {
		t.Errorf("admin token from %s key %s, want ops-admin key token", vol.SecretName, key)
	}
	if path.Base(gatewayOf(t, r).cfg.AdminTokenFile) != "admin-token" {
		t.Errorf("admin_token_file %s", gatewayOf(t, r).cfg.AdminTokenFile)
	}
}

// TestAdminPortPolicy: the gateways' NetworkPolicy admits the admin port
// from the monitoring namespace by default, from the namespaces a value
// selects otherwise, and none is made with policies off.
func TestAdminPortPolicy(t *testing.T) {
	policy := func(r *release) *networkingv1.NetworkPolicy {
		t.Helper()
		checkRelease(t, r)
		for _, np := range all[*networkingv1.NetworkPolicy](r) {
			if np.Name == "mcpfleet-gateway" {
				return np
			}
		}
		return nil
	}
	np := policy(mustRender(t, renderOptions{}))
	if np == nil {
		t.Fatal("no NetworkPolicy for the gateways")
	}
	if got := np.Spec.Ingress[1].From[0].NamespaceSelector.MatchLabels; got["kubernetes.io/metadata.name"] != "monitoring" || len(got) != 1 {
		t.Errorf("the admin port admits namespaces %v, want monitoring only", got)
	}
	sel := map[string]any{"matchLabels": map[string]any{"team": "observability"}}
	np = policy(mustRender(t, renderOptions{set: map[string]any{"networkPolicy": map[string]any{"admin": map[string]any{"namespaceSelector": sel}}}}))
	if got := np.Spec.Ingress[1].From[0].NamespaceSelector.MatchLabels; got["team"] != "observability" {
		t.Errorf("the admin port admits namespaces %v, want team=observability", got)
	}
	if np := policy(mustRender(t, renderOptions{set: map[string]any{"networkPolicy": map[string]any{"enabled": false}}})); np != nil {
		t.Error("a NetworkPolicy with networkPolicy.enabled false")
	}
}

// cluster is a cluster for the chart's lookups, holding objs.
type cluster struct {
	client *dynamicfake.FakeDynamicClient
}

func clusterOf(t testing.TB, objs ...runtime.Object) *cluster {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return &cluster{client: dynamicfake.NewSimpleDynamicClient(s, objs...)}
}

// GetClientFor is Helm's engine.ClientProvider: core v1 kinds, namespaced.
func (c *cluster) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: map[string]string{"Secret": "secrets"}[kind]}
	return c.client.Resource(gvr), true, nil
}

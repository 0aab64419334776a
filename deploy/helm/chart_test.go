package helm

import (
	"bytes"
	"crypto/rand"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/config"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// checkRelease checks every invariant on one render.
func checkRelease(t testing.TB, r *release) {
	t.Helper()
	checkNames(t, r)
	checkWorkloads(t, r)
	checkServices(t, r)
	checkDisruptionBudgets(t, r)
	checkNetworkPolicies(t, r)
	checkAutoscaler(t, r)
	checkServiceMonitors(t, r)
	checkGateway(t, r)
	checkAdminToken(t, r)
	checkDiscovery(t, r)
	checkRestricted(t, r)
}

// secretFile is a secret file as `mcpfleet secret` writes it, made afresh
// for the test.
func secretFile(t testing.TB) string {
	t.Helper()
	s, err := config.RandomSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := config.WriteSecretFile(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// createdSecret are the values that let the chart make the Secret.
func createdSecret(t testing.TB) map[string]any {
	return map[string]any{"secret": map[string]any{"existingSecret": "", "create": true, "value": secretFile(t)}}
}

// count returns how many objects of type T and component c r holds.
func count[T any](r *release, c string) int {
	n := 0
	for _, o := range r.objects {
		if _, ok := o.obj.(T); ok && (c == "" || component(o.obj) == c) {
			n++
		}
	}
	return n
}

// TestChartRenders renders the chart with its defaults and with each values
// file of testdata/, decodes every object strictly, and checks the
// invariants; each case then checks what its values change.
func TestChartRenders(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  renderOptions
		check func(t *testing.T, r *release)
	}{
		{"defaults", renderOptions{}, func(t *testing.T, r *release) {
			if n := count[*appsv1.Deployment](r, "redis"); n != 1 {
				t.Errorf("%d Redis Deployments, want the bundled one", n)
			}
			if n := count[*appsv1.StatefulSet](r, "example-server"); n != 1 {
				t.Errorf("%d example StatefulSets, want 1", n)
			}
			if n := otherSecrets(r); n != 0 {
				t.Errorf("%d Secrets beside the admin token's: by default the chart uses secret.existingSecret", n)
			}
			if n := count[*autoscalingv2.HorizontalPodAutoscaler](r, "") + count[*monitoringv1.ServiceMonitor](r, ""); n != 0 {
				t.Errorf("an autoscaler or ServiceMonitor by default")
			}
			if vol, _ := secretVolume(t, gatewayOf(t, r)); vol.SecretName != "mcpfleet-secret" {
				t.Errorf("secret %q, want mcpfleet-secret", vol.SecretName)
			}
			if !strings.Contains(r.notes, "create secret generic mcpfleet-secret") {
				t.Errorf("the notes do not say how to make the Secret:\n%s", r.notes)
			}
			// No tracing unless asked: no telemetry section (serve then
			// goes by the OTEL_* environment) and no environment at all.
			g := gatewayOf(t, r)
			if _, ok := topLevel(t, g)["telemetry"]; ok || g.cfg.Telemetry != (config.Telemetry{}) {
				t.Errorf("a telemetry section by default:\n%s", g.text)
			}
			if len(g.c.Env) != 0 {
				t.Errorf("gateway env %v by default", g.c.Env)
			}
		}},
		{"external Redis", renderOptions{files: []string{"external-redis.yaml"}}, func(t *testing.T, r *release) {
			if n := count[*appsv1.Deployment](r, "redis") + count[*corev1.Service](r, "redis") + count[*networkingv1.NetworkPolicy](r, "redis"); n != 0 {
				t.Errorf("%d Redis objects with redis.enabled=false", n)
			}
			if u := gatewayOf(t, r).cfg.RedisURL; u != "redis://redis.shared.svc.cluster.local:6379/2" {
				t.Errorf("redis_url %q, want redis.external.url", u)
			}
		}},
		{"external Redis from a Secret", renderOptions{files: []string{"external-redis-secret.yaml"}}, func(t *testing.T, r *release) {
			g := gatewayOf(t, r)
			if g.cfg.RedisURLFile != "/etc/mcpfleet/redis/redis-url" || g.cfg.RedisURL != "" || strings.Contains(g.text, "redis_url:") {
				t.Errorf("redis_url_file %q, redis_url %q: want the file alone\n%s", g.cfg.RedisURLFile, g.cfg.RedisURL, g.text)
			}
			vol, key := secretVolumeAt(t, g, "redis_url_file", g.cfg.RedisURLFile)
			if vol.SecretName != "mcpfleet-redis" || key != "redis-url" {
				t.Errorf("redis_url_file from Secret %s key %s, want mcpfleet-redis key redis-url", vol.SecretName, key)
			}
			if perm, gid := kubeletFile(g.pod, vol, key); perm != 0o440 || gid != imageUser {
				t.Errorf("kubelet writes mode %04o group %d, want 0440 group %d", perm, gid, imageUser)
			}
			if err := secretFileReadable(g.pod, vol, key); err != nil {
				t.Error(err)
			}
			if n := count[*appsv1.Deployment](r, "redis") + otherSecrets(r); n != 0 {
				t.Errorf("%d Redis Deployments or Secrets: the Secret is yours", n)
			}
			if !strings.Contains(r.notes, "create secret generic mcpfleet-redis --from-file=redis-url=") {
				t.Errorf("the notes do not say how to make the Redis URL's Secret:\n%s", r.notes)
			}
		}},
		{"autoscaler and ServiceMonitor", renderOptions{files: []string{"autoscaling-monitoring.yaml"}}, func(t *testing.T, r *release) {
			if count[*autoscalingv2.HorizontalPodAutoscaler](r, "gateway") != 1 || count[*monitoringv1.ServiceMonitor](r, "gateway") != 1 {
				t.Error("want one autoscaler and one ServiceMonitor")
			}
			if sm := all[*monitoringv1.ServiceMonitor](r)[0]; sm.Labels["release"] != "prometheus" {
				t.Errorf("ServiceMonitor labels %v, want serviceMonitor.labels among them", sm.Labels)
			}
		}},
		{"Secret made by the chart", renderOptions{set: createdSecret(t)}, func(t *testing.T, r *release) {
			if n := otherSecrets(r); n != 1 {
				t.Errorf("%d Secrets beside the admin token's, want the chart's", n)
			}
			if gatewayOf(t, r).deploy.Spec.Template.Annotations["checksum/secret"] == "" {
				t.Error("no checksum/secret: a new secret.value would not roll the gateways")
			}
		}},
		{"preStop, long drain, shared limits", renderOptions{files: []string{"prestop.yaml"}}, func(t *testing.T, r *release) {
			g := gatewayOf(t, r)
			if l := g.c.Lifecycle; l == nil || l.PreStop == nil || l.PreStop.Sleep == nil || l.PreStop.Sleep.Seconds != 5 {
				t.Errorf("preStop %v, want a 5 s sleep", l)
			}
			if tg := *g.pod.TerminationGracePeriodSeconds; tg != 5+20+30+5 {
				t.Errorf("terminationGracePeriodSeconds %d, want 60", tg)
			}
			if g.cfg.Limits.Rate != 5 || g.cfg.Balance != "least-inflight" {
				t.Errorf("gateway.config not in the configuration: %+v", g.cfg.Limits)
			}
		}},
		{"one gateway without Redis", renderOptions{files: []string{"single-gateway.yaml"}}, func(t *testing.T, r *release) {
			c := gatewayOf(t, r).cfg
			if c.Idempotency != "memory" || c.TaskStore != "memory" || c.RedisURL != "" {
				t.Errorf("idempotency %s, task_store %s, redis_url %q: want the process's own", c.Idempotency, c.TaskStore, c.RedisURL)
			}
		}},
		{"own replicas", renderOptions{files: []string{"own-upstreams.yaml"}}, func(t *testing.T, r *release) {
			if n := count[*appsv1.StatefulSet](r, "") + count[*corev1.Service](r, "example-server"); n != 0 {
				t.Errorf("%d example objects with exampleServer.enabled=false", n)
			}
			if d := gatewayOf(t, r).cfg.Discovery; d.DNSName != "mcp-server.mcp.svc.cluster.local" || d.Port != 3000 {
				t.Errorf("discovery %+v, want gateway.discovery's", d)
			}
			ours := func(np *networkingv1.NetworkPolicy) bool {
				return np.Spec.PodSelector.MatchLabels["app"] == "mcp-server"
			}
			if nps := all[*networkingv1.NetworkPolicy](r); len(nps) != 3 || !slices.ContainsFunc(nps, ours) {
				t.Errorf("want a NetworkPolicy for the replicas' pods beside Redis's and the gateways'")
			}
		}},
		{"a static list of replicas", renderOptions{set: map[string]any{
			"exampleServer": map[string]any{"enabled": false},
			"gateway": map[string]any{"upstreams": []any{
				map[string]any{"name": "a", "url": "http://mcp-0.mcp-server.mcp.svc.cluster.local:3000/mcp"},
				map[string]any{"name": "b", "url": "http://mcp-1.mcp-server.mcp.svc.cluster.local:3000/mcp"},
			}},
		}}, func(t *testing.T, r *release) {
			if c := gatewayOf(t, r).cfg; len(c.Upstreams) != 2 || c.Discovery.DNSName != "" {
				t.Errorf("upstreams %v, discovery %q: want gateway.upstreams", c.Upstreams, c.Discovery.DNSName)
			}
		}},
		{"replica capacity for discovered replicas", renderOptions{files: []string{"own-upstreams.yaml"}, set: map[string]any{
			"replicaCount": 3,
			"gateway": map[string]any{"discovery": map[string]any{"maxInflight": 8, "maxConnections": 100},
				"config": map[string]any{"upstream_pool_size": 32, "queue_timeout": "2s"}},
		}}, func(t *testing.T, r *release) {
			c := gatewayOf(t, r).cfg
			if c.Discovery.MaxInflight != 8 || c.Discovery.MaxConnections != 100 || c.Gateways != 3 || c.UpstreamPoolSize != 32 {
				t.Errorf("discovery %+v, gateways %d, upstream_pool_size %d: want the values' capacity and 3 gateways", c.Discovery, c.Gateways, c.UpstreamPoolSize)
			}
		}},
		{"a Redis Cluster of one's own", renderOptions{set: map[string]any{"redis": map[string]any{"enabled": false, "mode": "cluster",
			"external": map[string]any{"url": "redis://redis-0.redis.shared:6379?addr=redis-1.redis.shared:6379&addr=redis-2.redis.shared:6379"}}}}, func(t *testing.T, r *release) {
			c := gatewayOf(t, r).cfg
			if c.RedisMode != "cluster" || !strings.Contains(c.RedisURL, "?addr=redis-1.redis.shared:6379&addr=") || c.Limits.Store != "redis" {
				t.Errorf("redis_mode %q, redis_url %q, limits.store %q: want the cluster's seeds for every store", c.RedisMode, c.RedisURL, c.Limits.Store)
			}
		}},
		{"sentinels of one's own", renderOptions{set: map[string]any{"redis": map[string]any{"enabled": false, "mode": "sentinel", "sentinelMaster": "mymaster",
			"external": map[string]any{"url": "redis://sentinel-0.redis:26379?addr=sentinel-1.redis:26379"}}}}, func(t *testing.T, r *release) {
			if c := gatewayOf(t, r).cfg; c.RedisMode != "sentinel" || c.RedisSentinelMaster != "mymaster" {
				t.Errorf("redis_mode %q, redis_sentinel_master %q", c.RedisMode, c.RedisSentinelMaster)
			}
		}},
		{"admin token from a Secret", renderOptions{set: map[string]any{"adminToken": map[string]any{"existingSecret": "mcpfleet-admin"}}}, func(t *testing.T, r *release) {
			g := gatewayOf(t, r)
			if g.cfg.AdminTokenFile != "/etc/mcpfleet/admin/admin-token" {
				t.Fatalf("admin_token_file %q, want the mounted Secret's file", g.cfg.AdminTokenFile)
			}
			vol, key := secretVolumeAt(t, g, "admin_token_file", g.cfg.AdminTokenFile)
			if vol.SecretName != "mcpfleet-admin" || key != "admin-token" {
				t.Errorf("admin_token_file from Secret %s key %s, want mcpfleet-admin key admin-token", vol.SecretName, key)
			}
			if perm, gid := kubeletFile(g.pod, vol, key); perm != 0o440 || gid != imageUser {
				t.Errorf("kubelet writes mode %04o group %d, want 0440 group %d", perm, gid, imageUser)
			}
			if err := secretFileReadable(g.pod, vol, key); err != nil {
				t.Error(err)
			}
		}},
		{"another release name", renderOptions{release: "edge"}, func(t *testing.T, r *release) {
			if d := gatewayOf(t, r).deploy; d.Name != "edge-mcpfleet" {
				t.Errorf("Deployment %q, want edge-mcpfleet", d.Name)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, tc.opts)
			checkRelease(t, r)
			tc.check(t, r)
		})
	}
}

// TestChecksumRollsThePods checks that the pod template's checksums are
// the same for the same values and change with the configuration or the
// Secret, so that `helm upgrade` rolls the gateways exactly when serve
// would read something new.
func TestChecksumRollsThePods(t *testing.T) {
	annotation := func(opts renderOptions, key string) string {
		t.Helper()
		return gatewayOf(t, mustRender(t, opts)).deploy.Spec.Template.Annotations[key]
	}
	base := annotation(renderOptions{}, "checksum/config")
	if again := annotation(renderOptions{}, "checksum/config"); again != base {
		t.Errorf("two renders of the same values differ: %s, %s", base, again)
	}
	changed := renderOptions{set: map[string]any{"gateway": map[string]any{"config": map[string]any{"balance": "round-robin"}}}}
	if got := annotation(changed, "checksum/config"); got == base {
		t.Error("checksum/config unchanged by a new balance")
	}
	if got := annotation(renderOptions{files: []string{"prestop.yaml"}}, "checksum/config"); got == base {
		t.Error("checksum/config unchanged by a new drain delay")
	}
	traced := renderOptions{set: map[string]any{"gateway": map[string]any{"telemetry": map[string]any{"otlpEndpoint": "http://otel-collector.observability:4318"}}}}
	if got := annotation(traced, "checksum/config"); got == base {
		t.Error("checksum/config unchanged by a telemetry endpoint")
	}
	one, two := createdSecret(t), createdSecret(t)
	if annotation(renderOptions{set: one}, "checksum/secret") == annotation(renderOptions{set: two}, "checksum/secret") {
		t.Error("checksum/secret unchanged by a new secret.value")
	}
}

// TestBadValuesAreRefused checks that values.schema.json and the chart's
// own checks refuse values that would give a broken fleet, each with a
// message that names what to change.
func TestBadValuesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		set   map[string]any
		want  string
	}{
		{"a values file", []string{"bad-values.yaml"}, nil, "more than one gateway needs a shared store"},
		{"misspelled key", nil, map[string]any{"replicacount": 2}, "additional properties 'replicacount' not allowed"},
		{"a cluster on the bundled Valkey", nil, map[string]any{"redis": map[string]any{"mode": "cluster"}}, "the bundled Valkey is one server"},
		{"sentinels without the master's name", nil, map[string]any{"redis": map[string]any{"enabled": false, "mode": "sentinel", "external": map[string]any{"url": "redis://s0:26379"}}}, "redis.sentinelMaster: required"},
		{"an unknown redis mode", nil, map[string]any{"redis": map[string]any{"mode": "ring"}}, "redis/mode"},
		{"mis-cased key", nil, map[string]any{"gateway": map[string]any{"drainDelayseconds": 5}}, "'drainDelayseconds' not allowed"},
		{"wrong type", nil, map[string]any{"replicaCount": "three"}, "at '/replicaCount': got string, want integer"},
		{"drain beyond serve's 5m", nil, map[string]any{"gateway": map[string]any{"drainDelaySeconds": 301}}, "drainDelaySeconds"},
		{"root", nil, map[string]any{"podSecurityContext": map[string]any{"runAsNonRoot": false}}, "runAsNonRoot"},
		{"several gateways, no store", nil, map[string]any{"redis": map[string]any{"enabled": false}}, "more than one gateway needs a shared store"},
		{"autoscaled, no store", nil, map[string]any{"replicaCount": 1, "redis": map[string]any{"enabled": false},
			"autoscaling": map[string]any{"enabled": true}}, "more than one gateway needs a shared store"},
		{"no secret", nil, map[string]any{"secret": map[string]any{"existingSecret": ""}}, "every gateway needs the same secret file"},
		{"two secrets", nil, map[string]any{"secret": map[string]any{"create": true, "value": "x"}}, "not both"},
		{"created secret without value", nil, map[string]any{"secret": map[string]any{"existingSecret": "", "create": true}}, "at '/secret/value': minLength"},
		{"password in the Redis URL", nil, map[string]any{"redis": map[string]any{"enabled": false,
			"external": map[string]any{"url": "redis://app:hunter2@redis:6379/0"}}}, "carries a password"},
		{"not a Redis URL", nil, map[string]any{"redis": map[string]any{"enabled": false,
			"external": map[string]any{"url": "http://redis:6379"}}}, "does not match pattern"},
		{"bundled and external Redis", nil, map[string]any{"redis": map[string]any{"external": map[string]any{"url": "redis://r:6379"}}}, "redis.enabled=false"},
		{"bundled Redis and a Secret", nil, map[string]any{"redis": map[string]any{"external": map[string]any{"existingSecret": "mcpfleet-redis"}}}, "redis.enabled=false"},
		{"a URL and a Secret", nil, map[string]any{"redis": map[string]any{"enabled": false,
			"external": map[string]any{"url": "redis://redis:6379/0", "existingSecret": "mcpfleet-redis"}}}, "not both"},
		{"a password with a slash", nil, map[string]any{"redis": map[string]any{"enabled": false,
			"external": map[string]any{"url": "redis://app:hun/ter2@redis:6379/0"}}}, "redis.external.existingSecret"},
		{"an empty Secret key", nil, map[string]any{"redis": map[string]any{"enabled": false,
			"external": map[string]any{"existingSecret": "mcpfleet-redis", "existingSecretKey": ""}}}, "at '/redis/external/existingSecretKey': minLength"},
		{"a key the chart owns", nil, map[string]any{"gateway": map[string]any{"config": map[string]any{"listen": "127.0.0.1:8080"}}}, "gateway.config.listen: the chart sets this key itself, from the image's ports"},
		{"limits.store", nil, map[string]any{"gateway": map[string]any{"config": map[string]any{"limits": map[string]any{"store": "memory"}}}}, "gateway.config.limits.store"},
		{"no replicas", nil, map[string]any{"exampleServer": map[string]any{"enabled": false}}, "the gateway needs its replicas"},
		{"discovery without port", nil, map[string]any{"exampleServer": map[string]any{"enabled": false},
			"gateway": map[string]any{"discovery": map[string]any{"dnsName": "x.mcp.svc.cluster.local"}}}, "gateway.discovery.port"},
		{"an OTLP protocol serve does not speak", nil, map[string]any{"gateway": map[string]any{"telemetry": map[string]any{"protocol": "zipkin"}}}, "at '/gateway/telemetry/protocol': value must be one of '', 'http/protobuf', 'grpc'"},
		{"a sample ratio of 2", nil, map[string]any{"gateway": map[string]any{"telemetry": map[string]any{"sampleRatio": 2}}}, "at '/gateway/telemetry/sampleRatio': maximum: got 2, want 1"},
		{"a negative sample ratio", nil, map[string]any{"gateway": map[string]any{"telemetry": map[string]any{"sampleRatio": -0.1}}}, "at '/gateway/telemetry/sampleRatio': minimum: got -0.1, want 0"},
		{"a sample ratio as a string", nil, map[string]any{"gateway": map[string]any{"telemetry": map[string]any{"sampleRatio": "0.5"}}}, "at '/gateway/telemetry/sampleRatio': got string, want null or number"},
		{"an OTLP endpoint without a scheme", nil, map[string]any{"gateway": map[string]any{"telemetry": map[string]any{"otlpEndpoint": "otel-collector:4317"}}}, "at '/gateway/telemetry/otlpEndpoint': 'otel-collector:4317' does not match pattern"},
		{"credentials in the OTLP endpoint", nil, map[string]any{"gateway": map[string]any{"telemetry": map[string]any{"otlpEndpoint": "https://app:hunter2@otel-collector.observability:4318"}}}, "gateway.telemetry.otlpEndpoint carries credentials"},
		{"a key in the OTLP endpoint's query", nil, map[string]any{"gateway": map[string]any{"telemetry": map[string]any{"otlpEndpoint": "https://otel-collector.observability:4318/?api_key=hunter2"}}}, "gateway.telemetry.otlpEndpoint carries credentials, a query or a fragment"},
		{"a control character in the service name", nil, map[string]any{"gateway": map[string]any{"telemetry": map[string]any{"serviceName": "mcp\nfleet"}}}, "at '/gateway/telemetry/serviceName'"},
		{"an unknown telemetry value", nil, map[string]any{"gateway": map[string]any{"telemetry": map[string]any{"endpoint": "http://otel:4318"}}}, "additional properties 'endpoint' not allowed"},
		{"telemetry in gateway.config", nil, map[string]any{"gateway": map[string]any{"config": map[string]any{"telemetry": map[string]any{"otlp_endpoint": "http://otel:4318"}}}},
			"gateway.config.telemetry: the chart sets this key itself, from gateway.telemetry"},
		{"an environment variable without a name", nil, map[string]any{"gateway": map[string]any{"extraEnv": []any{map[string]any{"value": "x"}}}},
			"at '/gateway/extraEnv/0': missing property 'name'"},
		{"a misspelled EnvVar field", nil, map[string]any{"gateway": map[string]any{"extraEnv": []any{map[string]any{"name": "OTEL_EXPORTER_OTLP_HEADERS",
			"valueForm": map[string]any{"secretKeyRef": map[string]any{"name": "otel-collector-auth", "key": "headers"}}}}}},
			`unknown field "spec.template.spec.containers[0].env[0].valueForm"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(renderOptions{files: tc.files, set: tc.set})
			t.Logf("%v", err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want an error with %q, got %v", tc.want, err)
			}
			if err != nil && (strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "ter2@")) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// TestServeRefusesABadConfig checks that a configuration serve would refuse
// fails the render's checks: gateway.config passes through the schema
// untyped, and only serve's own parser knows its keys.
func TestServeRefusesABadConfig(t *testing.T) {
	for _, cfg := range []map[string]any{
		{"balanse": "hash"},        // unknown key
		{"balance": "random"},      // bad value
		{"Balance": "round-robin"}, // keys are case-sensitive
		{"cache": map[string]any{"mode": "shared", "ttl": "2h"}}, // above max_ttl
	} {
		r := mustRender(t, renderOptions{set: map[string]any{"gateway": map[string]any{"config": cfg}}})
		var cm *corev1.ConfigMap
		for _, m := range all[*corev1.ConfigMap](r) {
			cm = m
		}
		if _, err := config.Parse([]byte(cm.Data["mcpfleet.yaml"])); err == nil {
			t.Errorf("gateway.config %v: serve's parser accepts it", cfg)
		} else {
			t.Logf("gateway.config %v: %v", cfg, err)
		}
	}
}

// TestHelmLint runs `helm lint` on the chart: Chart.yaml, values and
// templates, with Helm's own rules.
func TestHelmLint(t *testing.T) {
	l := lint.All(chartDir, nil, namespace, false)
	for _, m := range l.Messages {
		t.Log(m)
	}
	if l.HighestSeverity >= support.WarningSev {
		t.Errorf("helm lint: highest severity %d", l.HighestSeverity)
	}
}

// TestPoolTooLargeForTheReplicasIsRefused: with autoscaling on, the chart
// counts the most gateways that may run, so a pool that fits three
// gateways but not maxReplicas of them is refused by serve at start.
func TestPoolTooLargeForTheReplicasIsRefused(t *testing.T) {
	r, err := render(renderOptions{files: []string{"own-upstreams.yaml"}, set: map[string]any{
		"autoscaling": map[string]any{"enabled": true, "maxReplicas": 10},
		"gateway": map[string]any{"discovery": map[string]any{"maxConnections": 100},
			"config": map[string]any{"upstream_pool_size": 32}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); gatewayOf(rec, r) }()
	<-done
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "discovery.max_connections: 100 connections, but 10 gateways") {
		t.Errorf("serve's verdict on the render: %q, want the pool arithmetic refused for 10 gateways", rec.errs)
	}
}

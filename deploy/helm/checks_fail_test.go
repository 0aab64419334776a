package helm

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// recorder is a testing.TB that keeps the failures of a check instead of
// failing the test, so that a test can show that the check fails.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

func (r *recorder) Error(a ...any) { r.Errorf("%s", fmt.Sprint(a...)) }

func (r *recorder) Fatalf(format string, a ...any) {
	r.Errorf(format, a...)
	runtime.Goexit()
}

func (r *recorder) Fatal(a ...any) { r.Fatalf("%s", fmt.Sprint(a...)) }

// failures runs checkRelease on r and returns what it reported.
func failures(t *testing.T, r *release) []string {
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkRelease(rec, r)
	}()
	<-done
	return rec.errs
}

// edit returns r with one object's manifest changed from old to new and
// decoded again: the first object of kind whose component is c.
func edit(t *testing.T, r *release, kind, c, old, new string) *release {
	t.Helper()
	out := *r
	out.objects = slices.Clone(r.objects)
	for i, o := range out.objects {
		if o.gvk.Kind != kind || component(o.obj) != c {
			continue
		}
		if !strings.Contains(o.raw, old) {
			t.Fatalf("%s of %s has no %q", kind, c, old)
		}
		d, err := decode(strings.Replace(o.raw, old, new, 1))
		if err != nil {
			t.Fatalf("the edited %s: %v", kind, err)
		}
		out.objects[i] = d
		return &out
	}
	t.Fatalf("no %s of component %s", kind, c)
	return nil
}

// without returns r without the objects of kind and component c.
func without(r *release, kind, c string) *release {
	out := *r
	out.objects = slices.DeleteFunc(slices.Clone(r.objects), func(o object) bool {
		return o.gvk.Kind == kind && component(o.obj) == c
	})
	return &out
}

// TestChecksCatchBrokenCharts shows that each invariant fails when a
// rendered object breaks it: the defaults pass, and each edit of one
// object makes checkRelease report the broken invariant.
func TestChecksCatchBrokenCharts(t *testing.T) {
	base := mustRender(t, renderOptions{})
	if errs := failures(t, base); len(errs) > 0 {
		t.Fatalf("the defaults fail: %q", errs)
	}
	withMonitor := mustRender(t, renderOptions{files: []string{"autoscaling-monitoring.yaml"}})
	withRedisSecret := mustRender(t, renderOptions{files: []string{"external-redis-secret.yaml"}})
	withServices := mustRender(t, renderOptions{set: map[string]any{"gateway": map[string]any{"services": []any{
		map[string]any{"name": "a", "path": "/a/mcp"}, map[string]any{"name": "b", "path": "/b/mcp"}}}}})
	for _, tc := range []struct {
		name string
		r    func(t *testing.T) *release
		want string
	}{
		{"grace shorter than drain plus grace", func(t *testing.T) *release {
			return edit(t, base, "Deployment", "gateway", "terminationGracePeriodSeconds: 32", "terminationGracePeriodSeconds: 27")
		}, "terminationGracePeriodSeconds"},
		{"a gateway container that may escalate", func(t *testing.T) *release {
			return edit(t, base, "Deployment", "gateway", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true")
		}, "restricted Pod Security Standard forbids it: allowPrivilegeEscalation"},
		{"a Redis pod that may run as root", func(t *testing.T) *release {
			return edit(t, base, "Deployment", "redis", "runAsNonRoot: true", "runAsNonRoot: false")
		}, "restricted Pod Security Standard forbids it: runAsNonRoot"},
		{"readiness on /healthz", func(t *testing.T) *release {
			return edit(t, base, "Deployment", "gateway", "path: /readyz", "path: /healthz")
		}, "readiness probe"},
		{"readiness on the admin port", func(t *testing.T) *release {
			return edit(t, base, "Deployment", "gateway", "path: /readyz\n              port: http", "path: /readyz\n              port: metrics")
		}, "readiness probe"},
		{"probe on a port the container lacks", func(t *testing.T) *release {
			return edit(t, base, "Deployment", "gateway", "path: /healthz\n              port: http", "path: /healthz\n              port: web")
		}, `no port named "web"`},
		{"listen on loopback", func(t *testing.T) *release {
			return edit(t, base, "ConfigMap", "gateway", "listen: 0.0.0.0:8080", "listen: 127.0.0.1:8080")
		}, "not 127.0.0.1"},
		{"config serve refuses", func(t *testing.T) *release {
			return edit(t, base, "ConfigMap", "gateway", "grace: 15s", "grace: 15")
		}, "serve refuses the rendered configuration"},
		{"stale checksum", func(t *testing.T) *release {
			return edit(t, base, "ConfigMap", "gateway", "grace: 15s", "grace: 14s")
		}, "checksum/config"},
		{"memory stores behind three gateways", func(t *testing.T) *release {
			return edit(t, base, "ConfigMap", "gateway", "task_store: redis", "task_store: memory")
		}, "each would keep its own"},
		{"redis_url elsewhere", func(t *testing.T) *release {
			return edit(t, base, "ConfigMap", "gateway", "mcpfleet-redis.mcp.svc", "redis.mcp.svc")
		}, "want the bundled Service"},
		{"discovery of another name", func(t *testing.T) *release {
			return edit(t, base, "ConfigMap", "gateway", "dns_name: mcpfleet-example.mcp", "dns_name: mcpfleet-examples.mcp")
		}, "discovery.dns_name"},
		{"discovery on another port", func(t *testing.T) *release {
			return edit(t, base, "ConfigMap", "gateway", "port: 9001", "port: 9002")
		}, "discovery.port"},
		{"a service with a store of its own behind three gateways", func(t *testing.T) *release {
			return edit(t, withServices, "ConfigMap", "gateway", "      name: b\n", "      name: b\n      task_store: memory\n")
		}, "service b: stores: 3 gateways"},
		{"a service discovering the example on another port", func(t *testing.T) *release {
			return edit(t, withServices, "ConfigMap", "gateway", "port: 9001\n      name: b", "port: 9002\n      name: b")
		}, "service b: discovery.port 9002"},
		{"secret file elsewhere", func(t *testing.T) *release {
			return edit(t, base, "ConfigMap", "gateway", "secret_file: /etc/mcpfleet/secret/secret.yaml", "secret_file: /etc/mcpfleet/secret.yaml")
		}, "is not a file of a mounted Secret"},
		{"secret others may read", func(t *testing.T) *release {
			return edit(t, base, "Deployment", "gateway", "defaultMode: 256", "defaultMode: 292")
		}, "readable by others"},
		{"redis_url_file elsewhere", func(t *testing.T) *release {
			return edit(t, withRedisSecret, "ConfigMap", "gateway", "redis_url_file: /etc/mcpfleet/redis/redis-url", "redis_url_file: /etc/mcpfleet/redis-url")
		}, "redis_url_file /etc/mcpfleet/redis-url is not a file of a mounted Secret"},
		{"the Redis URL's file others may read", func(t *testing.T) *release {
			return edit(t, withRedisSecret, "Deployment", "gateway", "secretName: mcpfleet-redis\n            defaultMode: 256", "secretName: mcpfleet-redis\n            defaultMode: 292")
		}, "redis_url_file: serve refuses the file as the kubelet writes it"},
		{"no fsGroup", func(t *testing.T) *release {
			return edit(t, base, "Deployment", "gateway", "        fsGroup: 65532\n", "")
		}, "cannot read it"},
		{"writable root filesystem", func(t *testing.T) *release {
			return edit(t, base, "Deployment", "redis", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false")
		}, "readOnlyRootFilesystem"},
		{"a capability kept", func(t *testing.T) *release {
			return edit(t, base, "StatefulSet", "example-server", "              drop:\n", "              add:\n                - NET_RAW\n              drop:\n")
		}, "drop ALL"},
		{"root", func(t *testing.T) *release {
			return edit(t, base, "StatefulSet", "example-server", "runAsNonRoot: true", "runAsNonRoot: false")
		}, "runAsNonRoot"},
		{"a selector across components", func(t *testing.T) *release {
			return edit(t, base, "Service", "gateway", "\n    app.kubernetes.io/component: gateway\n  ports:", "\n  ports:")
		}, "selects"},
		{"a Service that reaches the replicas", func(t *testing.T) *release {
			return edit(t, base, "Service", "example-server", "clusterIP: None", "clusterIP: \"\"")
		}, "around the gateway"},
		{"replicas unreachable by policy", func(t *testing.T) *release {
			return without(base, "NetworkPolicy", "example-server")
		}, "no NetworkPolicy"},
		{"a policy that admits everyone", func(t *testing.T) *release {
			return edit(t, base, "NetworkPolicy", "redis", "app.kubernetes.io/component: gateway", "app.kubernetes.io/part-of: mcpfleet")
		}, "want the gateways"},
		{"a policy from another namespace", func(t *testing.T) *release {
			return edit(t, base, "NetworkPolicy", "example-server", "- from:\n", "- from:\n        - namespaceSelector: {}\n")
		}, "other than pods of this namespace"},
		{"a policy on another port", func(t *testing.T) *release {
			return edit(t, base, "NetworkPolicy", "example-server", "port: 9001", "port: 9090")
		}, "admits port"},
		{"a budget over every pod", func(t *testing.T) *release {
			return edit(t, base, "PodDisruptionBudget", "gateway", "\n      app.kubernetes.io/component: gateway", "")
		}, "PodDisruptionBudget"},
		{"no budget for the gateways", func(t *testing.T) *release {
			return without(base, "PodDisruptionBudget", "gateway")
		}, "no PodDisruptionBudget for the gateways"},
		{"an autoscaler of another Deployment", func(t *testing.T) *release {
			return edit(t, withMonitor, "HorizontalPodAutoscaler", "gateway", "name: mcpfleet\n  minReplicas", "name: mcpfleet-redis\n  minReplicas")
		}, "want Deployment/mcpfleet"},
		{"a ServiceMonitor over the MCP Service", func(t *testing.T) *release {
			return edit(t, withMonitor, "ServiceMonitor", "gateway", "      app.kubernetes.io/part-of: mcpfleet-metrics", "")
		}, "want the metrics Service only"},
		{"an invalid name", func(t *testing.T) *release {
			return edit(t, base, "Service", "redis", "name: mcpfleet-redis", "name: mcpfleet_redis")
		}, "name:"},
		{"request above limit", func(t *testing.T) *release {
			return edit(t, base, "Deployment", "gateway", "memory: 64Mi", "memory: 1Gi")
		}, "above its limit"},
		{"replicas beside the autoscaler", func(t *testing.T) *release {
			return edit(t, withMonitor, "Deployment", "gateway", "spec:\n  selector:", "spec:\n  replicas: 2\n  selector:")
		}, "reset the scale"},
		{"ServiceMonitor on a missing port", func(t *testing.T) *release {
			return edit(t, withMonitor, "ServiceMonitor", "gateway", "port: metrics", "port: admin")
		}, `port "admin"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := failures(t, tc.r(t))
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
				t.Errorf("want a failure with %q, got %q", tc.want, errs)
			}
		})
	}
}

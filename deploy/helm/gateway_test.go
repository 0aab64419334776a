package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/config"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// The image's contract: its user and the ports of serve's listeners.
const (
	imageUser   = 65532
	mcpPort     = 8080
	adminPort   = 9090
	replicaPath = "/mcp" // testserver's MCP endpoint
)

// gateway is the rendered gateway: its pod, its container and the
// configuration serve reads, parsed and validated by serve's own parser.
type gateway struct {
	deploy *appsv1.Deployment
	pod    *corev1.PodSpec
	c      *corev1.Container
	text   string // the configuration file
	cfg    config.Config
}

// gatewayOf finds the gateway and the configuration file its container
// reads: the file named after --config must be mounted from the ConfigMap.
func gatewayOf(t testing.TB, r *release) gateway {
	t.Helper()
	d := only[*appsv1.Deployment](t, r, "gateway")
	g := gateway{deploy: d, pod: &d.Spec.Template.Spec}
	g.c = container(t, g.pod, "gateway")
	i := slices.Index(g.c.Args, "--config")
	if len(g.c.Args) == 0 || g.c.Args[0] != "serve" || i < 0 || i+1 >= len(g.c.Args) {
		t.Fatalf("gateway args %q, want serve --config FILE", g.c.Args)
	}
	file := g.c.Args[i+1]
	cm, key := mountedConfigMap(t, g.pod, g.c, file)
	for _, m := range all[*corev1.ConfigMap](r) {
		if m.Name == cm {
			g.text = m.Data[key]
		}
	}
	if g.text == "" {
		t.Fatalf("%s is mounted from ConfigMap %s key %s, which the release does not have", file, cm, key)
	}
	cfg, err := config.Parse([]byte(g.text))
	if err != nil {
		t.Fatalf("serve refuses the rendered configuration: %v\n%s", err, g.text)
	}
	g.cfg = cfg
	return g
}

// mountedConfigMap returns the ConfigMap and key that c sees at file.
func mountedConfigMap(t testing.TB, pod *corev1.PodSpec, c *corev1.Container, file string) (name, key string) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		key = m.SubPath
		if m.MountPath != file {
			if m.SubPath != "" || path.Dir(file) != m.MountPath {
				continue
			}
			key = path.Base(file)
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				return v.ConfigMap.Name, key
			}
		}
	}
	t.Fatalf("container %s mounts no ConfigMap at %s", c.Name, file)
	return "", ""
}

// hostPort splits a listen address into host and port.
func hostPort(t testing.TB, key, addr string) (string, int32) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s %q: %v", key, addr, err)
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		t.Fatalf("%s %q: %v", key, addr, err)
	}
	return h, int32(n)
}

// checkGateway checks the gateway's pod against its configuration: the
// listeners are the container's ports and all interfaces, the probes ask
// /readyz and /healthz on the MCP listener, the kubelet waits out the
// drain and the grace, the secret file is where the Secret is mounted,
// the pods roll when the configuration changes, and several gateways
// share their stores.
func checkGateway(t testing.TB, r *release) {
	t.Helper()
	g := gatewayOf(t, r)
	for _, l := range []struct {
		key, addr, port string
		want            int32
	}{{"listen", g.cfg.Listen, "http", mcpPort}, {"admin", g.cfg.Admin, "metrics", adminPort}} {
		h, p := hostPort(t, l.key, l.addr)
		if h != "0.0.0.0" && h != "" {
			t.Errorf("%s %s: the kubelet's probes and the Service reach the pod's IP, not %s", l.key, l.addr, h)
		}
		if got := namedPort(t, g.c, l.port); p != got || p != l.want {
			t.Errorf("%s on port %d, container port %s is %d, the image serves %d", l.key, p, l.port, got, l.want)
		}
	}
	checkProbe(t, g, "readiness", g.c.ReadinessProbe, "/readyz")
	checkProbe(t, g, "liveness", g.c.LivenessProbe, "/healthz")
	checkTermination(t, g)
	checkSecretFile(t, r, g)
	sum := sha256.Sum256([]byte(strings.TrimSuffix(g.text, "\n")))
	if got := g.deploy.Spec.Template.Annotations["checksum/config"]; got != hex.EncodeToString(sum[:]) {
		t.Errorf("checksum/config %q is not the configuration's sha256 %x", got, sum)
	}
	checkStores(t, r, g)
}

func checkProbe(t testing.TB, g gateway, what string, p *corev1.Probe, want string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("gateway %s probe: want httpGet %s", what, want)
		return
	}
	_, listen := hostPort(t, "listen", g.cfg.Listen)
	port, err := containerPort(g.c, p.HTTPGet.Port)
	if p.HTTPGet.Path != want || err != nil || port != listen || (p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP) {
		t.Errorf("gateway %s probe asks %s %s on port %d (%v), want http %s on the MCP listener's %d",
			what, p.HTTPGet.Scheme, p.HTTPGet.Path, port, err, want, listen)
	}
}

// checkTermination checks that terminationGracePeriodSeconds outlasts the
// preStop sleep, serve's drain_delay and its grace: otherwise the kubelet's
// SIGKILL cuts the calls the grace was meant to let finish.
func checkTermination(t testing.TB, g gateway) {
	t.Helper()
	var pre time.Duration
	if l := g.c.Lifecycle; l != nil && l.PreStop != nil {
		if l.PreStop.Exec != nil || l.PreStop.HTTPGet != nil || l.PreStop.TCPSocket != nil || l.PreStop.Sleep == nil {
			t.Error("gateway preStop is not a sleep: the image has no shell, and serve drains on SIGTERM")
		} else {
			pre = time.Duration(l.PreStop.Sleep.Seconds) * time.Second
		}
	}
	need := pre + time.Duration(g.cfg.DrainDelay) + time.Duration(g.cfg.Grace)
	tg := g.pod.TerminationGracePeriodSeconds
	if tg == nil || time.Duration(*tg)*time.Second <= need {
		t.Errorf("terminationGracePeriodSeconds %v, want more than preStop %s + drain_delay %s + grace %s",
			tg, pre, g.cfg.DrainDelay, g.cfg.Grace)
	}
	if g.cfg.DrainDelay == 0 {
		t.Error("drain_delay 0: the gateway stops accepting before the endpoints' removal has spread")
	}
}

// secretVolume returns the volume and item behind the gateway's
// secret_file, and the Secret's name.
func secretVolume(t testing.TB, g gateway) (*corev1.SecretVolumeSource, string) {
	t.Helper()
	return secretVolumeAt(t, g, "secret_file", g.cfg.SecretFile)
}

// secretVolumeAt returns the Secret volume, mounted read-only, and the key
// of the Secret behind the file that the configuration's key names.
func secretVolumeAt(t testing.TB, g gateway, key, file string) (*corev1.SecretVolumeSource, string) {
	t.Helper()
	for _, m := range g.c.VolumeMounts {
		if path.Dir(file) != m.MountPath || m.SubPath != "" {
			continue
		}
		if !m.ReadOnly {
			t.Errorf("the Secret volume of %s is mounted writable", key)
		}
		for _, v := range g.pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return v.Secret, path.Base(file)
			}
			for _, it := range v.Secret.Items {
				if it.Path == path.Base(file) {
					return v.Secret, it.Key
				}
			}
		}
	}
	t.Fatalf("%s %s is not a file of a mounted Secret", key, file)
	return nil, ""
}

// checkSecretFile checks that serve will read the secret file the kubelet
// writes, and the Redis URL's file if there is one, and that a Secret the
// chart makes holds a secret file serve loads.
func checkSecretFile(t testing.TB, r *release, g gateway) {
	t.Helper()
	vol, key := secretVolume(t, g)
	if err := secretFileReadable(g.pod, vol, key); err != nil {
		t.Error(err)
	}
	if f := g.cfg.RedisURLFile; f != "" {
		if rv, rk := secretVolumeAt(t, g, "redis_url_file", f); rv != nil {
			if err := secretFileReadable(g.pod, rv, rk); err != nil {
				t.Errorf("redis_url_file: %v", err)
			}
		}
	}
	for _, s := range all[*corev1.Secret](r) {
		if s.Name != vol.SecretName {
			continue
		}
		b, ok := s.Data[key]
		if !ok {
			t.Fatalf("Secret/%s has no key %s", s.Name, key)
		}
		f := path.Join(t.TempDir(), "secret.yaml")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := config.ReadSecret(f); err != nil {
			t.Errorf("Secret/%s: serve refuses its file: %v", s.Name, err)
		}
	}
}

// replicas is how many gateways may run at once: the Deployment's count,
// or the autoscaler's maximum.
func replicas(r *release, d *appsv1.Deployment) int32 {
	for _, h := range all[*autoscalingv2.HorizontalPodAutoscaler](r) {
		return h.Spec.MaxReplicas
	}
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// fleets returns the configuration's services as serve resolves them, each
// its own fleet and stores: one unnamed service without services.
func fleets(t testing.TB, c config.Config) []config.Service {
	t.Helper()
	ss, err := c.ResolveServices()
	if err != nil {
		t.Fatalf("serve refuses the rendered services: %v", err)
	}
	return ss
}

// serviceKey names a key of a service in a failure: the key alone for the
// one unnamed service.
func serviceKey(s config.Service, key string) string {
	if s.Name == "" {
		return key
	}
	return "service " + s.Name + ": " + key
}

// checkStores checks that several gateways share idempotency records, the
// task registry and limits in one Redis, every service's, and that
// redis_url names the bundled one's Service when there is one.
func checkStores(t testing.TB, r *release, g gateway) {
	t.Helper()
	c := g.cfg
	if n := replicas(r, g.deploy); n > 1 {
		for _, s := range fleets(t, c) {
			sc := s.Config
			if sc.Idempotency != "redis" || sc.TaskStore != "redis" || sc.Limits.Store != "redis" || (sc.RedisURL == "" && sc.RedisURLFile == "") {
				t.Errorf("%s: %d gateways with idempotency %s, task_store %s, limits.store %s: each would keep its own",
					serviceKey(s, "stores"), n, sc.Idempotency, sc.TaskStore, sc.Limits.Store)
			}
		}
	}
	redis := ofComponent[*corev1.Service](r, "redis")
	if len(redis) == 0 {
		return
	}
	u, err := url.Parse(c.RedisURL)
	if err != nil {
		t.Fatalf("redis_url: %v", err)
	}
	svc := redis[0]
	want := fmt.Sprintf("%s.%s.svc.cluster.local:%d", svc.Name, namespace, svc.Spec.Ports[0].Port)
	if u.Host != want || u.User != nil {
		t.Errorf("redis_url host %q, want the bundled Service %s, without credentials", u.Host, want)
	}
	valkey := container(t, &only[*appsv1.Deployment](t, r, "redis").Spec.Template.Spec, "valkey")
	if p, err := containerPort(valkey, svc.Spec.Ports[0].TargetPort); err != nil || p != 6379 || slices.Contains(valkey.Args, "--port") {
		t.Errorf("Service/%s reaches port %d (%v); valkey-server listens on 6379", svc.Name, p, err)
	}
}

// checkDiscovery checks that the gateway resolves the example replicas'
// headless Service and dials the port and path they serve: the one
// service does, and so does every service that discovers that Service.
func checkDiscovery(t testing.TB, r *release) {
	t.Helper()
	sts := ofComponent[*appsv1.StatefulSet](r, "example-server")
	if len(sts) == 0 {
		return
	}
	g := gatewayOf(t, r)
	svc := only[*corev1.Service](t, r, "example-server")
	if sts[0].Spec.ServiceName != svc.Name {
		t.Errorf("StatefulSet serviceName %q, want the headless Service %q", sts[0].Spec.ServiceName, svc.Name)
	}
	c := container(t, &sts[0].Spec.Template.Spec, "testserver")
	port := namedPort(t, c, "mcp")
	if i := slices.Index(c.Args, "--listen"); i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != fmt.Sprintf("0.0.0.0:%d", port) {
		t.Errorf("testserver args %q, want --listen 0.0.0.0:%d", c.Args, port)
	}
	want := fmt.Sprintf("%s.%s.svc.cluster.local", svc.Name, namespace)
	for _, s := range fleets(t, g.cfg) {
		d := s.Config.Discovery
		if d.DNSName != want {
			// With services, a service may have replicas of its own.
			if s.Name == "" {
				t.Errorf("discovery.dns_name %q, want the headless Service's %q", d.DNSName, want)
			}
			continue
		}
		// A headless Service's records are the pods' own addresses: the
		// gateway dials discovery.port on them, the container's port.
		if tp, err := containerPort(c, svc.Spec.Ports[0].TargetPort); err != nil || int32(d.Port) != port || tp != port {
			t.Errorf("%s %d, the replicas serve %d, the Service targets %d (%v)", serviceKey(s, "discovery.port"), d.Port, port, tp, err)
		}
		if d.Path != replicaPath || d.Scheme != "http" {
			t.Errorf("%s %s %s, want http %s", serviceKey(s, "discovery"), d.Scheme, d.Path, replicaPath)
		}
		if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != s.Config.HealthCheck.Path {
			t.Errorf("%s: replica readiness probe %v, want httpGet %s, the health check the gateway makes", serviceKey(s, "health_check"), p, s.Config.HealthCheck.Path)
		}
	}
}

package helm

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// restricted is Kubernetes' own Pod Security Standards evaluator (the
// pod-security-admission plugin's checks), at the restricted level of the
// newest version it knows.
var restricted = func() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(err)
	}
	return e
}()

// checkRestricted checks that every pod the release renders passes the
// restricted profile, as a namespace labelled
// pod-security.kubernetes.io/enforce=restricted admits it.
func checkRestricted(t testing.TB, r *release) {
	t.Helper()
	pods := map[string]struct {
		meta metav1.ObjectMeta
		spec corev1.PodSpec
	}{}
	for _, d := range all[*appsv1.Deployment](r) {
		pods["Deployment/"+d.Name] = struct {
			meta metav1.ObjectMeta
			spec corev1.PodSpec
		}{d.Spec.Template.ObjectMeta, d.Spec.Template.Spec}
	}
	for _, s := range all[*appsv1.StatefulSet](r) {
		pods["StatefulSet/"+s.Name] = struct {
			meta metav1.ObjectMeta
			spec corev1.PodSpec
		}{s.Spec.Template.ObjectMeta, s.Spec.Template.Spec}
	}
	if len(pods) == 0 {
		t.Fatal("the release renders no pods")
	}
	lv := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	for id, p := range pods {
		for _, res := range restricted.EvaluatePod(lv, &p.meta, &p.spec) {
			if !res.Allowed {
				t.Errorf("%s: the restricted Pod Security Standard forbids it: %s (%s)", id, res.ForbiddenReason, res.ForbiddenDetail)
			}
		}
	}
}

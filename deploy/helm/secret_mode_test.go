package helm

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/config"
	corev1 "k8s.io/api/core/v1"
)

// kubeletFile is a Secret volume's file as the kubelet writes it: owner
// root, group fsGroup (root without one), and the item's mode or the
// volume's defaultMode (0644 unset), to which a pod with fsGroup adds 0440
// on a read-only volume (pkg/volume/volume_linux.go, SetVolumeOwnership;
// kubernetes/kubernetes#57923).
func kubeletFile(pod *corev1.PodSpec, vol *corev1.SecretVolumeSource, key string) (perm fs.FileMode, gid int) {
	mode := corev1.SecretVolumeSourceDefaultMode
	if vol.DefaultMode != nil {
		mode = *vol.DefaultMode
	}
	for _, it := range vol.Items {
		if it.Key == key && it.Mode != nil {
			mode = *it.Mode
		}
	}
	perm = fs.FileMode(mode) & fs.ModePerm
	if sc := pod.SecurityContext; sc != nil && sc.FSGroup != nil {
		return perm | 0o440, int(*sc.FSGroup)
	}
	return perm, 0
}

// processIDs are the gateway process's user and groups in the pod: the
// runAsUser, its runAsGroup, and as supplementary groups fsGroup and
// supplementalGroups.
func processIDs(pod *corev1.PodSpec) (uid int, groups []int) {
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsUser == nil {
		return imageUser, []int{imageUser}
	}
	uid = int(*sc.RunAsUser)
	if sc.RunAsGroup != nil {
		groups = append(groups, int(*sc.RunAsGroup))
	}
	if sc.FSGroup != nil {
		groups = append(groups, int(*sc.FSGroup))
	}
	for _, g := range sc.SupplementalGroups {
		groups = append(groups, int(g))
	}
	return uid, groups
}

// secretFileReadable says whether the gateway can open a file of a Secret
// volume as the kubelet writes it and whether serve then accepts its mode
// (config.CheckSecretPerm, as serve's config.CheckSecretFile calls it for
// the secret file and redis_url_file).
func secretFileReadable(pod *corev1.PodSpec, vol *corev1.SecretVolumeSource, key string) error {
	perm, gid := kubeletFile(pod, vol, key)
	uid, groups := processIDs(pod)
	readable := perm&0o004 != 0 || (perm&0o040 != 0 && slices.Contains(groups, gid)) || (uid == 0 && perm&0o400 != 0)
	if !readable {
		return fmt.Errorf("file mode %04o, owner 0 group %d: user %d in groups %v cannot read it", perm, gid, uid, groups)
	}
	if err := config.CheckSecretPerm(perm, gid, groups); err != nil {
		return fmt.Errorf("serve refuses the file as the kubelet writes it (group %d, process groups %v): %w", gid, groups, err)
	}
	return nil
}

// TestSecretModeAsTheKubeletWritesIt checks the secret file's mode as the
// kubelet will set it against serve's own check, and that the check fails
// for the values that break it: a mode others may read, no fsGroup (a root
// file the non-root gateway cannot open), a group write bit.
func TestSecretModeAsTheKubeletWritesIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  map[string]any
		want string // "" passes; otherwise part of the error
	}{
		{"defaults", nil, ""},
		{"item mode 0600 under fsGroup", map[string]any{"secret": map[string]any{"defaultMode": 0o600}}, ""},
		{"others may read", map[string]any{"secret": map[string]any{"defaultMode": 0o644}}, "readable by others"},
		{"group may write", map[string]any{"secret": map[string]any{"defaultMode": 0o660}}, "writable or executable by its group"},
		{"no fsGroup", map[string]any{"podSecurityContext": map[string]any{"fsGroup": nil}}, "cannot read it"},
		{"runAsGroup other than fsGroup", map[string]any{"podSecurityContext": map[string]any{"runAsGroup": 1000}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, renderOptions{set: tc.set})
			g := gatewayOf(t, r)
			vol, key := secretVolume(t, g)
			perm, gid := kubeletFile(g.pod, vol, key)
			err := secretFileReadable(g.pod, vol, key)
			t.Logf("mode %04o group %d: %v", perm, gid, err)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("want accepted, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
}

// TestKubeletFileMode pins the model of the kubelet on the chart's default
// volume: 0400 becomes 0440, group fsGroup.
func TestKubeletFileMode(t *testing.T) {
	g := gatewayOf(t, mustRender(t, renderOptions{}))
	vol, key := secretVolume(t, g)
	if vol.DefaultMode == nil || *vol.DefaultMode != 0o400 {
		t.Errorf("defaultMode %v, want 0400", vol.DefaultMode)
	}
	if perm, gid := kubeletFile(g.pod, vol, key); perm != 0o440 || gid != imageUser {
		t.Errorf("kubelet writes mode %04o group %d, want 0440 group %d", perm, gid, imageUser)
	}
	if uid, groups := processIDs(g.pod); uid != imageUser || !slices.Contains(groups, imageUser) {
		t.Errorf("process %d in %v, want the image's user %d in its group", uid, groups, imageUser)
	}
}

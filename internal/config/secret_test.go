package config

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSecretRoundTrip(t *testing.T) {
	s, err := RandomSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSecretFile(&b, s); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSecret(writeFile(t, b.String(), 0o600))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Keys) != 1 || got.Keys[0] != s.Keys[0] || !bytes.Equal(got.Salt, s.Salt) {
		t.Error("secret changed on its way through the file")
	}
}

func TestReadSecretRefuses(t *testing.T) {
	const key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	const salt = "c2FsdHNhbHRzYWx0c2FsdA=="                    // 16 bytes
	good := "session_keys:\n  - id: 2\n    key: " + key + "\n  - id: 1\n    key: " + key + "\nrouting_salt: " + salt + "\n"
	if _, err := ReadSecret(writeFile(t, good, 0o600)); err != nil {
		t.Fatalf("a good file was refused: %v", err)
	}
	tests := []struct {
		name, body string
		mode       os.FileMode
		want       string
	}{
		{"group writable", good, 0o660, "chmod 600"},
		{"world readable", good, 0o604, "chmod 600"},
		{"no keys", "routing_salt: " + salt + "\n", 0o600, "session_keys"},
		{"short key", "session_keys: [{id: 1, key: c2hvcnQ=}]\nrouting_salt: " + salt + "\n", 0o600, "session_keys[0].key"},
		{"duplicate id", "session_keys: [{id: 1, key: " + key + "}, {id: 1, key: " + key + "}]\nrouting_salt: " + salt + "\n", 0o600, "session_keys[1].id"},
		{"id out of range", "session_keys: [{id: 300, key: " + key + "}]\nrouting_salt: " + salt + "\n", 0o600, "session_keys[0].id"},
		{"short salt", "session_keys: [{id: 1, key: " + key + "}]\nrouting_salt: c2FsdA==\n", 0o600, "routing_salt"},
		{"unknown key", good + "extra: " + key + "\n", 0o600, "not a valid secret file"},
		{"type error", "session_keys: [{id: " + key + ", key: x}]\n", 0o600, "not a valid secret file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSecret(writeFile(t, tt.body, tt.mode))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), salt) {
				t.Errorf("the error shows secret material: %v", err)
			}
		})
	}
}

func TestCheckSecretPerm(t *testing.T) {
	own := []int{1000, 2000}
	tests := []struct {
		name   string
		perm   os.FileMode
		gid    int
		wantOK bool
	}{
		{"owner only", 0o600, 0, true},
		{"owner read only", 0o400, 0, true},
		{"kubernetes fsGroup mount", 0o440, 2000, true},
		{"group read, our primary group", 0o640, 1000, true},
		{"group read, a stranger's group", 0o440, 3000, false},
		{"group read, group unknown", 0o440, -1, false},
		{"group write", 0o460, 2000, false},
		{"group exec", 0o450, 2000, false},
		{"world read", 0o604, 1000, false},
		{"world exec only", 0o601, 1000, false},
		{"kubernetes default mode 0644", 0o644, 2000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSecretPerm(tt.perm, tt.gid, own)
			if (err == nil) != tt.wantOK {
				t.Fatalf("CheckSecretPerm(%04o, %d) = %v, want ok %v", tt.perm, tt.gid, err, tt.wantOK)
			}
			if err != nil && !strings.Contains(err.Error(), "chmod 600") {
				t.Errorf("the error says no fix: %v", err)
			}
		})
	}
}

// TestReadSecretOwnGroup: a file its own group may read, as Kubernetes
// mounts a Secret under fsGroup, is read when that group is the process's.
func TestReadSecretOwnGroup(t *testing.T) {
	s, err := RandomSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSecretFile(&b, s); err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, b.String(), 0o440) // created with the process's egid
	if _, err := ReadSecret(p); err != nil {
		t.Fatalf("own-group 0440 refused: %v", err)
	}
}

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
		{"group readable", good, 0o640, "chmod 600"},
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

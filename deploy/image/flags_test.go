package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuilderUsage: flags that cannot make an image are refused with exit 2
// before anything is compiled.
func TestBuilderUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no output", nil, "nothing to write"},
		{"unknown arch", []string{"--out", t.TempDir(), "--arch", "mips"}, "--arch"},
		{"stray argument", []string{"--out", t.TempDir(), "extra"}, "unexpected argument"},
		{"unknown flag", []string{"--push"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 mentioning %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// TestClearLayout: --out replaces an earlier layout but never empties a
// directory that is something else.
func TestClearLayout(t *testing.T) {
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o600)
	if err := clearLayout(other); err == nil {
		t.Error("a directory that is not a layout was accepted")
	}
	if _, err := os.Stat(filepath.Join(other, "notes.txt")); err != nil {
		t.Errorf("the refused directory lost its file: %v", err)
	}
	old := t.TempDir()
	for _, f := range []string{"oci-layout", "index.json", "blobs/sha256/x"} {
		os.MkdirAll(filepath.Dir(filepath.Join(old, f)), 0o755)
		os.WriteFile(filepath.Join(old, f), nil, 0o600)
	}
	if err := clearLayout(old); err != nil {
		t.Fatal(err)
	}
	if names, _ := os.ReadDir(old); len(names) != 0 {
		t.Errorf("an earlier layout left %v", names)
	}
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "absent")} {
		if err := clearLayout(dir); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

func TestSPDXID(t *testing.T) {
	for text, want := range map[string]string{
		"\n                                 Apache License\n                           Version 2.0, January 2004\n": "Apache-2.0",
		"MIT License\n\nCopyright (c) 2026 someone\n":                                                               "MIT",
		"All rights reserved.\n": "",
		"":                       "",
	} {
		if got := spdxID(text); got != want {
			t.Errorf("spdxID(%q) = %q, want %q", text, got, want)
		}
	}
}

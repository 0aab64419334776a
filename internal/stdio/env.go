package stdio

import (
	"fmt"
	"slices"
	"strings"
)

// ChildPlaceholder in an env value, an env_files path or the directory is
// replaced by the child's stable name, so that each child may keep its
// own state (MEMORY_FILE_PATH: /var/lib/mem/{child}.jsonl).
const ChildPlaceholder = "{child}"

// Expand replaces ChildPlaceholder in s by child.
func Expand(s, child string) string { return strings.ReplaceAll(s, ChildPlaceholder, child) }

// Environ builds a child's environment: PATH and HOME as the gateway has
// them (getenv), then env, then each env_files key set to the content of
// its file (read by readFile, one trailing newline dropped), every value
// and path with ChildPlaceholder expanded. Nothing else of the gateway's
// own environment is passed on: no secret of the gateway reaches a
// server. Configured keys override PATH and HOME. The result is sorted,
// so that a child's environment is the same from one start to the next.
func Environ(child string, env, envFiles map[string]string, getenv func(string) string, readFile func(string) ([]byte, error)) ([]string, error) {
	vars := map[string]string{}
	for _, k := range []string{"PATH", "HOME"} {
		if v := getenv(k); v != "" {
			vars[k] = v
		}
	}
	for k, v := range env {
		vars[k] = Expand(v, child)
	}
	for k, p := range envFiles {
		if _, dup := env[k]; dup {
			return nil, fmt.Errorf("environment variable %s: set by both env and env_files", k)
		}
		path := Expand(p, child)
		b, err := readFile(path)
		if err != nil {
			// The path, never the content: it may be a secret.
			return nil, fmt.Errorf("environment variable %s: reading %s: %w", k, path, err)
		}
		vars[k] = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out, nil
}

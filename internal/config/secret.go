package config

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"syscall"

	"github.com/mcpfleet/mcpfleet/internal/session"
	"go.yaml.in/yaml/v3"
)

// Secret is what the secret file holds: the session keyring (current key
// first) and the salt of routing keys. Its bytes never reach a log, an error
// or a metric.
type Secret struct {
	Keys []session.Key
	Salt []byte
}

type secretFile struct {
	SessionKeys []struct {
		ID  int    `yaml:"id"`
		Key string `yaml:"key"`
	} `yaml:"session_keys"`
	RoutingSalt string `yaml:"routing_salt"`
}

var yamlLine = regexp.MustCompile(`line \d+`)

// ReadSecret reads a secret file. It refuses a file that others may read,
// or that a group other than the process's own may read (see
// [CheckSecretPerm]), and reports what is wrong without echoing any of the
// file's values.
func ReadSecret(path string) (Secret, error) {
	if err := CheckSecretFile(path); err != nil {
		return Secret{}, fmt.Errorf("secret file %s: %w", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Secret{}, fmt.Errorf("reading secret file: %w", err)
	}
	s, err := parseSecret(b)
	if err != nil {
		return Secret{}, fmt.Errorf("secret file %s: %w", path, err)
	}
	return s, nil
}

// CheckSecretFile applies [CheckSecretPerm] to the file at path: its mode and
// group, with the process's groups. It reads none of the file, and its error
// does not name path: the caller says which file it is. Every file that holds
// a credential is checked with it before it is read.
func CheckSecretFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err
		}
		return err
	}
	gid := -1
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		gid = int(sys.Gid)
	}
	groups, _ := os.Getgroups()
	return CheckSecretPerm(st.Mode().Perm(), gid, append(groups, os.Getegid()))
}

// CheckSecretPerm says whether a secret file with permissions perm, owned
// by group gid, may be read by a process in groups. Others may have no
// access at all. The group may read it only when it is one of the
// process's own groups, and may never write or execute it: that is how
// Kubernetes mounts a Secret for a non-root pod (mode 0440, group fsGroup,
// kubernetes/kubernetes#57923), where the group is the pod's and nothing
// else can read the file. Anything more open is refused.
func CheckSecretPerm(perm fs.FileMode, gid int, groups []int) error {
	switch {
	case perm&0o007 != 0:
		return fmt.Errorf("readable by others (mode %04o); chmod 600 it", perm)
	case perm&0o030 != 0:
		return fmt.Errorf("writable or executable by its group (mode %04o); chmod 600 it", perm)
	case perm&0o040 != 0 && (gid < 0 || !slices.Contains(groups, gid)):
		return fmt.Errorf("readable by group %d, not one of this process's groups (mode %04o); chmod 600 it", gid, perm)
	}
	return nil
}

func parseSecret(b []byte) (Secret, error) {
	var f secretFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		where := yamlLine.FindString(err.Error()) // the position only: never the values
		if where == "" {
			where = "file"
		}
		return Secret{}, fmt.Errorf("%s: not a valid secret file (want session_keys and routing_salt, docs/CONFIG.md)", where)
	}
	if len(f.SessionKeys) == 0 {
		return Secret{}, fmt.Errorf("session_keys: at least one key is required")
	}
	var s Secret
	seen := map[int]bool{}
	for i, k := range f.SessionKeys {
		if k.ID < 0 || k.ID > 255 || seen[k.ID] {
			return Secret{}, fmt.Errorf("session_keys[%d].id: want a unique id from 0 to 255", i)
		}
		seen[k.ID] = true
		raw, err := base64.StdEncoding.DecodeString(k.Key)
		if err != nil || len(raw) != 32 {
			return Secret{}, fmt.Errorf("session_keys[%d].key: want 32 bytes in base64", i)
		}
		key := session.Key{ID: uint8(k.ID)}
		copy(key.Secret[:], raw)
		s.Keys = append(s.Keys, key)
	}
	salt, err := base64.StdEncoding.DecodeString(f.RoutingSalt)
	if err != nil || len(salt) < 16 {
		return Secret{}, fmt.Errorf("routing_salt: want at least 16 bytes in base64")
	}
	s.Salt = salt
	return s, nil
}

// RandomSecret returns a fresh secret: one key with id 1 and a 32-byte salt.
func RandomSecret(rnd io.Reader) (Secret, error) {
	s := Secret{Keys: []session.Key{{ID: 1}}, Salt: make([]byte, 32)}
	if _, err := io.ReadFull(rnd, s.Keys[0].Secret[:]); err != nil {
		return Secret{}, fmt.Errorf("making secret: %w", err)
	}
	if _, err := io.ReadFull(rnd, s.Salt); err != nil {
		return Secret{}, fmt.Errorf("making secret: %w", err)
	}
	return s, nil
}

// WriteSecretFile writes s in the secret file's format.
func WriteSecretFile(w io.Writer, s Secret) error {
	var b bytes.Buffer
	b.WriteString("# mcpfleet secret file: keep it mode 0600 and out of version control.\n")
	b.WriteString("# The first session key seals new session IDs; later ones still open old ones.\n")
	b.WriteString("session_keys:\n")
	for _, k := range s.Keys {
		fmt.Fprintf(&b, "  - id: %d\n    key: %s\n", k.ID, base64.StdEncoding.EncodeToString(k.Secret[:]))
	}
	fmt.Fprintf(&b, "routing_salt: %s\n", base64.StdEncoding.EncodeToString(s.Salt))
	_, err := w.Write(b.Bytes())
	return err
}

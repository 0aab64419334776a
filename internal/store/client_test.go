package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/redis/go-redis/v9"
)

func TestNewRedisClientParsesURL(t *testing.T) {
	tests := []struct {
		url         string
		addr        string
		db          int
		tls         bool
		readTimeout time.Duration
	}{
		{"redis://localhost:6379", "localhost:6379", 0, false, DefaultReadTimeout},
		{"redis://:secret@valkey:6380/2", "valkey:6380", 2, false, DefaultReadTimeout},
		{"rediss://user:secret@valkey.internal:6380/0", "valkey.internal:6380", 0, true, DefaultReadTimeout},
		{"redis://valkey:6379/0?read_timeout=2s", "valkey:6379", 0, false, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			c, err := NewRedisClient(tt.url)
			if err != nil {
				t.Fatalf("NewRedisClient: %v", err)
			}
			defer c.Close()
			o := c.(*redis.Client).Options()
			if o.Addr != tt.addr || o.DB != tt.db || (o.TLSConfig != nil) != tt.tls {
				t.Errorf("Addr, DB, TLS = %q, %d, %v; want %q, %d, %v", o.Addr, o.DB, o.TLSConfig != nil, tt.addr, tt.db, tt.tls)
			}
			if o.ReadTimeout != tt.readTimeout || o.DialTimeout != DefaultDialTimeout || o.WriteTimeout != DefaultWriteTimeout {
				t.Errorf("timeouts dial %v read %v write %v", o.DialTimeout, o.ReadTimeout, o.WriteTimeout)
			}
		})
	}
}

// TestNewRedisClientErrorsHideTheURL checks that an error says what is wrong
// without quoting the URL: net/url and go-redis quote the part they refuse,
// and a password with a '/', '?', '#' or '%' in it is parsed into exactly
// that part (a port, a path, an option, an escape).
func TestNewRedisClientErrorsHideTheURL(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"", "empty"},
		{"http://:hunter2@valkey:6379", "invalid URL scheme"},
		{"hunter2:x@valkey:6379", "invalid URL scheme"},
		{"redis://:hunter2@valkey:6379/notadb", "invalid database number"},
		{"redis://:hunter2@val key:6379\x7f", "invalid control character"},
		{"redis://:hunter2@val key:6379", "invalid character in host name"},
		{"redis://:hunter2@valkey:6379/0?nonsense=1", "unexpected option"},
		{"redis://:hun/ter2@valkey:6379/0", "invalid port"},
		{"redis://:123/hunter2@valkey/0", "invalid URL path"},
		{"redis://:123/hunter2", "invalid database number"},
		{"redis://:12?hunter2@valkey", "unexpected option"},
		{"redis://:hunter2#x@valkey", "invalid port"},
		{"redis://:hu%zznter2@valkey", "invalid URL escape"},
		{"redis://valkey/0?read_timeout=hunter2", "invalid read_timeout duration"},
		{"redis://[hunter2", "missing ']' in host"},
	} {
		_, err := NewRedisClient(tt.url)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewRedisClient(%q) = %v, want an error with %q", tt.url, err, tt.want)
			continue
		}
		for _, part := range []string{"hunter2", "hun", "ter2", "%zz"} {
			if strings.Contains(err.Error(), part) {
				t.Errorf("NewRedisClient(%q) error quotes the URL (%q): %v", tt.url, part, err)
			}
		}
	}
}

func TestNewRedisClientTalksToServer(t *testing.T) {
	c, err := NewRedisClient("redis://" + redistest.Start(t) + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Ping(context.Background()).Result(); err != nil || got != "PONG" {
		t.Errorf("Ping = %q, %v", got, err)
	}
}

// TestNewClientModes: a cluster URL names its seed nodes, a sentinel URL
// its sentinels with the master's name given apart; both get the same
// short timeouts as a single server, and errors quote none of the URL.
func TestNewClientModes(t *testing.T) {
	c, err := NewClient(ModeCluster, "redis://:hunter2@n1:7000?addr=n2:7001&addr=n3:7002", "")
	if err != nil {
		t.Fatal(err)
	}
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("cluster mode gave a %T", c)
	}
	o := cc.Options()
	if strings.Join(o.Addrs, ",") != "n1:7000,n2:7001,n3:7002" || o.Password != "hunter2" || o.ReadTimeout != DefaultReadTimeout || o.MaxRedirects != 3 || o.ClusterStateReloadInterval != ClusterStateReload {
		t.Errorf("cluster options: addrs %v, read timeout %v, redirects %d", o.Addrs, o.ReadTimeout, o.MaxRedirects)
	}
	c.Close()

	s, err := NewClient(ModeSentinel, "redis://s1:26379?addr=s2:26379&addr=s3:26379", "mymaster")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*redis.Client); !ok {
		t.Fatalf("sentinel mode gave a %T", s)
	}
	s.Close()

	for _, tt := range []struct{ mode, url, master, want string }{
		{ModeSentinel, "redis://s1:26379", "", "redis_sentinel_master"},
		{ModeCluster, "redis://:hunter2@n1:7000/3", "", "parsing redis url (cluster)"},
		{ModeCluster, "redis://:hunter2@n1:7000?nonsense=1", "", "parsing redis url (cluster)"},
		{ModeSentinel, "redis://:hunter2@s1:26379?nonsense=1", "m", "parsing redis url (sentinel)"},
		{"ring", "redis://n1:7000", "", "want single, cluster or sentinel"},
	} {
		_, err := NewClient(tt.mode, tt.url, tt.master)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("NewClient(%s, %q): %v, want an error saying %q without the password", tt.mode, tt.url, err, tt.want)
		}
	}
}

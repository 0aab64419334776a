package chaos

import (
	"strings"
	"testing"
	"time"
)

// TestValidateRollingGateways refuses what rolling the gateways cannot run
// with, naming it.
func TestValidateRollingGateways(t *testing.T) {
	ok := Options{Roll: RollGateways, Binary: "/bin/mcpfleet", HAProxy: "/usr/sbin/haproxy", RedisServer: "/usr/bin/redis-server"}
	tests := []struct {
		name string
		edit func(*Options)
		want string // "" means valid
	}{
		{"complete", func(*Options) {}, ""},
		{"replicas need none of it", func(o *Options) { *o = Options{Roll: RollReplicas} }, ""},
		{"unknown roll", func(o *Options) { o.Roll = "gateway" }, `roll "gateway"`},
		{"too many gateways", func(o *Options) { o.Gateways = MaxGateways + 1 }, "gateways"},
		{"no binary", func(o *Options) { o.Binary = "" }, "mcpfleet binary"},
		{"no haproxy", func(o *Options) { o.HAProxy = "" }, "haproxy"},
		{"no redis-server", func(o *Options) { o.RedisServer = "" }, "redis-server"},
		{"hard kill", func(o *Options) { o.Kill = KillHard }, "SIGTERM only"},
		{"checks too often", func(o *Options) { o.HealthInterval = 50 * time.Millisecond }, "health interval"},
		{"the rest still checked", func(o *Options) { o.Rate = MaxRate + 1 }, "rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.edit(&o)
			err := o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error naming %q", err, tt.want)
			}
		})
	}
}

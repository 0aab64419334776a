package stdio

import (
	"testing"
	"time"
)

func TestPoolAdmitsAndRefills(t *testing.T) {
	l := poolLimits{Max: 8, Warm: 1}
	for _, tt := range []struct {
		name   string
		c      poolCounts
		admits bool
		start  int
	}{
		{"empty: one warm child", poolCounts{}, true, 1},
		{"warm one waiting", poolCounts{Warm: 1}, true, 0},
		{"a session took the warm one", poolCounts{Leased: 1}, true, 1},
		{"room for the last session only: it may be warm", poolCounts{Leased: 7}, true, 1},
		{"the last session on the warm child", poolCounts{Leased: 7, Warm: 1}, true, 0},
		{"full: no warm child beside", poolCounts{Leased: 8}, false, 0},
		{"more warm than wanted starts none", poolCounts{Warm: 3}, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := l.admits(tt.c); got != tt.admits {
				t.Errorf("admits %+v: %v, want %v", tt.c, got, tt.admits)
			}
			if got := l.toStart(tt.c); got != tt.start {
				t.Errorf("toStart %+v: %d, want %d", tt.c, got, tt.start)
			}
			if total := tt.c.Leased + tt.c.Warm + l.toStart(tt.c); tt.c.Warm <= l.Warm && total > l.Max {
				t.Errorf("%+v: %d children after the refill, over max %d", tt.c, total, l.Max)
			}
		})
	}
	if got := (poolLimits{Max: 4, Warm: 3}).toStart(poolCounts{Leased: 2}); got != 2 {
		t.Errorf("warm 3 beside 2 of 4 leased: starts %d, want 2", got)
	}
}

func TestPoolExpiry(t *testing.T) {
	opened := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	l := poolLimits{Idle: time.Minute, MaxAge: time.Hour}
	for _, tt := range []struct {
		name  string
		at    time.Duration // after opened
		quiet time.Duration
		want  string
	}{
		{"fresh", time.Second, time.Second, ""},
		{"quiet just under idle", 2 * time.Minute, 59 * time.Second, ""},
		{"quiet for idle", 2 * time.Minute, time.Minute, endIdle},
		{"busy at its max age", time.Hour, 0, endMaxAge},
		{"busy long, under max age", 59 * time.Minute, 0, ""},
	} {
		if got := l.expiry(opened, tt.quiet, opened.Add(tt.at)); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := (poolLimits{}).expiry(opened, 1000*time.Hour, opened.Add(1000*time.Hour)); got != "" {
		t.Errorf("no bounds: ended (%q)", got)
	}
}

func TestPoolSweepEvery(t *testing.T) {
	for _, tt := range []struct {
		l    poolLimits
		want time.Duration
	}{
		{poolLimits{}, time.Second},
		{poolLimits{Idle: 10 * time.Minute, MaxAge: 24 * time.Hour}, time.Second},
		{poolLimits{Idle: 400 * time.Millisecond}, 100 * time.Millisecond},
		{poolLimits{Idle: time.Minute, MaxAge: 200 * time.Millisecond}, 50 * time.Millisecond},
		{poolLimits{Idle: 10 * time.Millisecond}, 20 * time.Millisecond},
	} {
		if got := tt.l.sweepEvery(); got != tt.want {
			t.Errorf("%+v: every %v, want %v", tt.l, got, tt.want)
		}
	}
}

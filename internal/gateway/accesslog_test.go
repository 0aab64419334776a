package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// slogLine is the line slog's JSON handler writes for l at t.
func slogLine(t testing.TB, l *accessLine, at time.Time, service string) string {
	var buf bytes.Buffer
	var h slog.Handler = slog.NewJSONHandler(&buf, nil)
	if service != "" {
		h = h.WithAttrs([]slog.Attr{slog.String("service", service)})
	}
	r := slog.NewRecord(at, slog.LevelInfo, "request", 0)
	r.AddAttrs(l.attrs()...)
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

var sampleLine = accessLine{
	httpMethod: "POST", method: "tools/call", tool: "get_weather", era: "2026-07-28", replica: "127.0.0.1:18203",
	status: 200, outcome: "ok", attempts: 1, early: false, upstreamStatus: 200, bytes: 75, durationMS: 1.821,
}

// TestAccessLineIsSlogs: the gateway's own access log line is, byte for
// byte, the one slog's JSON handler writes, for every kind of value.
func TestAccessLineIsSlogs(t *testing.T) {
	at := time.Date(2026, 12, 3, 6, 11, 58, 190222074, time.UTC)
	lines := []accessLine{sampleLine, {}, {
		httpMethod: "GET", method: "other", tool: "a<b>&c", era: "2025-11-25", replica: "replica-<a>&b",
		status: 503, outcome: "rejected", attempts: 3, limit: "refused", cache: "hit", capacity: "queued",
		early: true, upstreamStatus: -1, events: 1 << 40, keepAlives: 7, bytes: -9, durationMS: 123456.789,
	}, {durationMS: 0.001}, {durationMS: 1e20}}
	for _, at := range []time.Time{at, at.Truncate(time.Second), at.In(time.FixedZone("x", -3*3600))} {
		for _, svc := range []string{"", "billing"} {
			for _, l := range lines {
				if !l.plain() {
					t.Fatalf("%+v is not plain", l)
				}
				got, want := string(l.appendJSON(nil, at, svc)), slogLine(t, &l, at, svc)
				if got != want {
					t.Errorf("line\n got %s\nwant %s", got, want)
				}
			}
		}
	}
}

// TestAccessLogFallsBackToSlog: a value the gateway would have to escape
// (a replica named with a quote) or a service name that needs it goes
// through the Logger, so the line is right whatever it holds; a logger
// above Info writes nothing.
func TestAccessLogFallsBackToSlog(t *testing.T) {
	for _, tc := range []struct {
		replica, service string
		level            slog.Level
		want             string // in the line; "" for no line
	}{
		{"127.0.0.1:1", "", slog.LevelInfo, `"replica":"127.0.0.1:1"`},
		{`rep"lica`, "", slog.LevelInfo, `"replica":"rep\"lica"`},
		{"répl\u2028", "", slog.LevelInfo, `"replica":"répl\u2028"`},
		{"r", "svc\n", slog.LevelInfo, `"msg":"request","service":"svc\n"`},
		{"r", "svc", slog.LevelInfo, `"msg":"request","service":"svc","http_method"`},
		{"r", "", slog.LevelWarn, ""},
		{"r", "", slog.LevelInfo, `"method":"tools/call","tool":"get_w\u0000eather"`},
	} {
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: tc.level}))
		if tc.service != "" {
			log = log.With("service", tc.service)
		}
		g := &Gateway{log: log, opts: Options{AccessLog: &buf, Service: tc.service}}
		l := sampleLine
		l.replica = tc.replica
		if strings.Contains(tc.want, "tool") {
			l.tool = "get_w\x00eather" // a tool name that needs an escape
		}
		g.logAccess(context.Background(), &l)
		got := buf.String()
		if tc.want == "" {
			if got != "" {
				t.Errorf("at level %v: %s", tc.level, got)
			}
			continue
		}
		if !strings.Contains(got, tc.want) || strings.Count(got, "\n") != 1 {
			t.Errorf("replica %q, service %q: %s; want %s in one line", tc.replica, tc.service, got, tc.want)
		}
	}
}

// FuzzAccessLine: whatever the strings, the line the gateway writes (itself
// or through slog) is slog's.
func FuzzAccessLine(f *testing.F) {
	f.Add("POST", "tools/call", "get_weather", "127.0.0.1:1", "svc", int64(1821))
	f.Add("GET", "x\"y", "a\u2028b", "\xff", "", int64(0))
	f.Fuzz(func(t *testing.T, httpMethod, method, tool, replica, service string, micros int64) {
		at := time.Unix(1764740000, micros)
		l := sampleLine
		l.httpMethod, l.method, l.tool, l.replica, l.durationMS = httpMethod, method, tool, replica, float64(micros)/1000
		var buf bytes.Buffer
		var h slog.Handler = slog.NewJSONHandler(&buf, nil)
		if service != "" {
			h = h.WithAttrs([]slog.Attr{slog.String("service", service)})
		}
		g := &Gateway{log: slog.New(fixedTime{h, at}), opts: Options{AccessLog: &timeFixer{&buf, at}, Service: service}}
		g.logAccess(context.Background(), &l)
		if want := slogLine(t, &l, at, service); buf.String() != want {
			t.Fatalf("line\n got %s\nwant %s", buf.String(), want)
		}
	})
}

// fixedTime gives every record the time at, as timeFixer does to a line
// the gateway writes itself, so that the two compare.
type fixedTime struct {
	slog.Handler
	at time.Time
}

func (h fixedTime) Handle(ctx context.Context, r slog.Record) error {
	r.Time = h.at
	return h.Handler.Handle(ctx, r)
}

// timeFixer rewrites the time of the line written to it to at.
type timeFixer struct {
	w  io.Writer
	at time.Time
}

func (f *timeFixer) Write(p []byte) (int, error) {
	_, rest, ok := bytes.Cut(p, []byte(`","level":`))
	if !ok {
		return 0, io.ErrUnexpectedEOF
	}
	line := append([]byte(`{"time":"`+f.at.Format(time.RFC3339Nano)+`","level":`), rest...)
	return f.w.Write(line)
}

// BenchmarkAccessLine: one request's access log line written by the
// gateway itself (own) and through slog's JSON handler (slog), to
// io.Discard.
func BenchmarkAccessLine(b *testing.B) {
	ctx := context.Background()
	for _, own := range []bool{true, false} {
		b.Run(map[bool]string{true: "own", false: "slog"}[own], func(b *testing.B) {
			g := &Gateway{log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
			if own {
				g.opts.AccessLog = io.Discard
			}
			l := sampleLine
			b.ReportAllocs()
			for b.Loop() {
				g.logAccess(ctx, &l)
			}
		})
	}
}

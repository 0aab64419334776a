package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metric is one value of a metric: its family's name, its labels.
type metric struct {
	name   string
	labels map[string]string
	value  float64
}

// samples is what one gateway's metrics said at one moment.
type samples []metric

// sum adds the values of name whose labels include match.
func (ss samples) sum(name string, match map[string]string) float64 {
	var n float64
next:
	for _, s := range ss {
		if s.name != name {
			continue
		}
		for k, v := range match {
			if s.labels[k] != v {
				continue next
			}
		}
		n += s.value
	}
	return n
}

// gather reads the counters and gauges of an in-process gateway's registry.
func gather(reg *prometheus.Registry) (samples, error) {
	families, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("reading gateway metrics: %w", err)
	}
	var ss samples
	for _, f := range families {
		for _, m := range f.GetMetric() {
			s := metric{name: f.GetName(), labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				s.value = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				s.value = m.GetGauge().GetValue()
			default:
				continue
			}
			ss = append(ss, s)
		}
	}
	return ss, nil
}

// scrape reads a gateway process's /metrics at url, within one second.
func scrape(ctx context.Context, url string) (samples, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	return parseText(resp.Body)
}

// parseText reads the Prometheus text exposition format: one sample a
// line, "name{label="value",...} value [timestamp]"; comments and
// histograms' and summaries' lines are read like the rest.
func parseText(r io.Reader) (samples, error) {
	var ss samples
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("reading metrics: %w in %q", err, line)
		}
		ss = append(ss, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	return ss, nil
}

// parseLine reads one sample line.
func parseLine(line string) (metric, error) {
	s := metric{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return s, fmt.Errorf("no value")
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		var err error
		if line, err = parseLabels(line[1:], s.labels); err != nil {
			return s, err
		}
	}
	fields := strings.Fields(line)
	if len(fields) == 0 || len(fields) > 2 {
		return s, fmt.Errorf("want a value and at most a timestamp")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, err
	}
	s.value = v
	return s, nil
}

// parseLabels reads `name="value",...}` into labels and returns the rest
// of the line.
func parseLabels(line string, labels map[string]string) (string, error) {
	for {
		line = strings.TrimLeft(line, ", ")
		if strings.HasPrefix(line, "}") {
			return line[1:], nil
		}
		eq := strings.Index(line, `="`)
		if eq <= 0 {
			return "", fmt.Errorf("bad label")
		}
		name := line[:eq]
		line = line[eq+2:]
		var v strings.Builder
		for {
			if line == "" {
				return "", fmt.Errorf("unterminated label value")
			}
			c := line[0]
			line = line[1:]
			if c == '"' {
				break
			}
			if c == '\\' && line != "" {
				c, line = unescape(line[0]), line[1:]
			}
			v.WriteByte(c)
		}
		labels[name] = v.String()
	}
}

// unescape is the byte a backslash escape in a label value stands for.
func unescape(c byte) byte {
	if c == 'n' {
		return '\n'
	}
	return c // \\ and \"
}

// addCounters adds one gateway's counters to the report's.
func (r *Report) addCounters(ss samples) {
	if r.GatewayRetries == nil {
		r.GatewayRetries, r.GatewayIdem = map[string]int{}, map[string]int{}
	}
	for _, s := range ss {
		v := int(s.value)
		switch s.name {
		case "mcpfleet_session_not_found_total":
			r.GatewayNotFound += v
		case "mcpfleet_retries_total":
			r.GatewayRetries[s.labels["reason"]] += v
		case "mcpfleet_idempotency_total":
			r.GatewayIdem[s.labels["outcome"]] += v
		}
	}
}

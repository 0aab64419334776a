// Package bench holds the benchmark scripts' own checks: the programs they
// run are in its subdirectories.
package bench

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// featureList reads a bash array NAME=(...) of the script.
func featureList(script, name string) []string {
	m := regexp.MustCompile(`(?m)^` + name + `=\(([^)]*)\)`).FindStringSubmatch(script)
	if m == nil {
		return nil
	}
	return strings.Fields(m[1])
}

// featureTables returns the rows of the tables under the doc's section
// "What each feature costs" (up to its first subsection), by the feature
// each row names, a table each.
func featureTables(doc string) []map[string][]string {
	_, sec, _ := strings.Cut(doc, "\n## What each feature costs\n")
	sec, _, _ = strings.Cut(sec, "\n#") // the next heading, a subsection's too
	var tables []map[string][]string
	var cur map[string][]string
	for line := range strings.SplitSeq(sec, "\n") {
		switch {
		case strings.HasPrefix(line, "| feature |"):
			cur = map[string][]string{}
			tables = append(tables, cur)
		case cur != nil && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			cur[strings.Trim(cells[0], "`")] = cells[1:]
		case !strings.HasPrefix(line, "|"):
			cur = nil
		}
	}
	return tables
}

// isNumber takes 1,234, 0.5, 1.07x, -0.3.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSuffix(strings.ReplaceAll(s, ",", ""), "x"), 64)
	return err == nil
}

// checkFeatureTables says what the doc's two tables (HTTP/1.1, then
// HTTP/2) lack of the script's features: a row each, numbers in its first
// nine cells (CPU, ratio, latencies, allocations, Redis counts, the load
// generator's share), or "not yet built", or over HTTP/2 for a feature
// whose load changes each call "HTTP/1.1 only"; and rows of features the
// script does not know.
func checkFeatureTables(script, doc string) []string {
	features := featureList(script, "FEATURES")
	notBuilt := featureList(script, "NOT_YET_BUILT")
	h1Only := featureList(script, "H1_ONLY")
	if len(features) == 0 {
		return []string{"the script lists no FEATURES"}
	}
	tables := featureTables(doc)
	if len(tables) != 2 {
		return []string{"want two tables (HTTP/1.1, HTTP/2) under \"What each feature costs\", found " + strconv.Itoa(len(tables))}
	}
	var bad []string
	for ti, rows := range tables {
		proto := []string{"HTTP/1.1", "HTTP/2"}[ti]
		for _, f := range features {
			cells, ok := rows[f]
			switch {
			case !ok:
				bad = append(bad, proto+": no row for "+f)
			case slices.Contains(notBuilt, f):
				if !strings.HasPrefix(cells[0], "not yet built") {
					bad = append(bad, proto+": "+f+" is not yet built, its row says "+cells[0])
				}
			case ti == 1 && slices.Contains(h1Only, f):
				if !strings.HasPrefix(cells[0], "HTTP/1.1 only") {
					bad = append(bad, proto+": "+f+" runs over HTTP/1.1 only, its row says "+cells[0])
				}
			case len(cells) < 9:
				bad = append(bad, proto+": the row of "+f+" has "+strconv.Itoa(len(cells))+" figures, want 9")
			default:
				for i, c := range cells[:9] {
					if !isNumber(c) {
						bad = append(bad, proto+": the row of "+f+" has no number in column "+strconv.Itoa(i+2)+": "+c)
					}
				}
			}
		}
		for f := range rows {
			if !slices.Contains(features, f) {
				bad = append(bad, proto+": a row for "+f+", which bench/features.sh does not run")
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// TestEveryFeatureHasARowWithNumbers: every feature bench/features.sh
// measures has its row of figures in docs/BENCHMARKS.md, so that a feature
// added to the script cannot be left out of the doc silently (and a
// feature that lands must take its "not yet built" row's place with
// numbers).
func TestEveryFeatureHasARowWithNumbers(t *testing.T) {
	script, err := os.ReadFile("features.sh")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range checkFeatureTables(string(script), string(doc)) {
		t.Error(b)
	}
}

// TestFeatureTableCheckFails holds the check to what it promises on a
// small script and doc: each fault is reported, a clean doc is not.
func TestFeatureTableCheckFails(t *testing.T) {
	script := "FEATURES=(none jwt\n\tauthz idem)\nNOT_YET_BUILT=(authz)\nH1_ONLY=(idem)\n"
	row := func(f string) string {
		return "| `" + f + "` | 80 | 1.00x | 2.47 | 6.93 | 44 | 0.00 | 0 | 1 | 0.14 | - |\n"
	}
	table := func(rows ...string) string {
		return "| feature | CPU |\n|---|---:|\n" + strings.Join(rows, "")
	}
	doc := func(h1, h2 string) string {
		return "# B\n\n## What each feature costs\n\nHTTP/1.1\n\n" + h1 + "\nHTTP/2\n\n" + h2 + "\n## Next\n\n" + table(row("stray"))
	}
	good1 := table(row("none"), row("jwt"), "| `authz` | not yet built |\n", row("idem"))
	good2 := table(row("none"), row("jwt"), "| `authz` | not yet built |\n", "| `idem` | HTTP/1.1 only: h2load sends one request |\n")
	cases := []struct {
		name, doc string
		want      []string
	}{
		{"clean", doc(good1, good2), nil},
		{"a row missing", doc(table(row("none"), "| `authz` | not yet built |\n", row("idem")), good2), []string{"HTTP/1.1: no row for jwt"}},
		{"a dash for a number", doc(strings.Replace(good1, "| 44 |", "| - |", 1), good2), []string{"HTTP/1.1: the row of none has no number in column 6: -"}},
		{"a stray row", doc(good1, good2+row("cache")), []string{"HTTP/2: a row for cache, which bench/features.sh does not run"}},
		{"one table", "# B\n\n## What each feature costs\n\n" + good1, []string{"want two tables (HTTP/1.1, HTTP/2) under \"What each feature costs\", found 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkFeatureTables(script, c.doc); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

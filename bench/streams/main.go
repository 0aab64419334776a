// Command streams is the benchmark's stream client. In "hold" mode it opens n
// idle SSE streams (legacy 2025-11-25 sessions: initialize, initialized, then a
// GET stream) through a gateway and holds them, printing "held N" once they
// are open, so that the caller can read the gateway's memory. In "progress"
// mode it makes one 2026-07-28 sleep call with a progress token and reports
// how long the burst of progress notifications took to arrive end to end.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const legacyVersion = "2025-11-25"

func main() {
	mode := flag.String("mode", "hold", "hold or progress")
	url := flag.String("url", "http://127.0.0.1:8080/mcp", "MCP endpoint `URL`")
	n := flag.Int("n", 2000, "hold: streams to open")
	workers := flag.Int("workers", 64, "hold: concurrent openers")
	hold := flag.Duration("hold", 60*time.Second, "hold: how long to keep the streams open after opening")
	budget := flag.Duration("budget", 60*time.Second, "hold: time allowed for opening")
	seconds := flag.Float64("seconds", 1, "progress: the call's sleep")
	every := flag.Float64("every", 0.001, "progress: seconds between progress notifications")
	flag.Parse()
	var err error
	switch *mode {
	case "hold":
		err = holdStreams(*url, *n, *workers, *hold, *budget)
	case "progress":
		err = progress(*url, *seconds, *every)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "streams:", err)
		os.Exit(1)
	}
}

// holdStreams opens n legacy GET streams with workers goroutines and keeps
// them until hold has passed or a signal arrives.
func holdStreams(url string, n, workers int, hold, budget time.Duration) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: 0}}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	openCtx, openCancel := context.WithTimeout(ctx, budget)
	defer openCancel()
	var held, failed atomic.Int64
	var firstErr sync.Once
	var bodies sync.Map
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				body, err := openStream(ctx, client, url, i)
				if err != nil {
					failed.Add(1)
					firstErr.Do(func() { fmt.Fprintln(os.Stderr, "first failure:", err) })
					continue
				}
				bodies.Store(i, body)
				held.Add(1)
			}
		}()
	}
	start := time.Now()
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-openCtx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	fmt.Printf("held %d failed %d open_seconds %.2f\n", held.Load(), failed.Load(), time.Since(start).Seconds())
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	bodies.Range(func(_, v any) bool { v.(io.Closer).Close(); return true })
	return nil
}

// openStream makes session i and returns its open GET stream.
func openStream(ctx context.Context, client *http.Client, url string, i int) (io.ReadCloser, error) {
	auth := fmt.Sprintf("Bearer stream-%d", i)
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`, legacyVersion)
	resp, err := post(ctx, client, url, auth, "", init)
	if err != nil {
		return nil, fmt.Errorf("initializing: %w", err)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	drain(resp)
	if resp.StatusCode != http.StatusOK || sid == "" {
		return nil, fmt.Errorf("initializing: status %d, session %q", resp.StatusCode, sid)
	}
	resp, err = post(ctx, client, url, auth, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		return nil, fmt.Errorf("sending initialized: %w", err)
	}
	drain(resp)
	// The stream holds its connection until its body is closed, so every
	// stream is a connection of its own.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	setHeaders(req, auth, sid)
	req.Header.Set("Accept", "text/event-stream")
	resp, err = client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("opening stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		drain(resp)
		return nil, fmt.Errorf("opening stream: status %d", resp.StatusCode)
	}
	return resp.Body, nil
}

func post(ctx context.Context, client *http.Client, url, auth, sid, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	setHeaders(req, auth, sid)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return client.Do(req)
}

func setHeaders(req *http.Request, auth, sid string) {
	req.Header.Set("Authorization", auth)
	req.Header.Set("Mcp-Protocol-Version", legacyVersion)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// progress makes one 2026-07-28 sleep call with a progress token and prints
// the events received, the time to the first and last progress event, and
// the time to the result.
func progress(url string, seconds, every float64) error {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"seconds":%g,"progress_every":%g},`+
		`"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, seconds, every)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "sleep")
	req.Header.Set("Authorization", "Bearer progress")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("calling sleep: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("calling sleep: status %d", resp.StatusCode)
	}
	var events int
	var first, last, result time.Duration
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data:") {
			continue
		}
		now := time.Since(start)
		switch {
		case strings.Contains(line, "notifications/progress"):
			if events == 0 {
				first = now
			}
			events++
			last = now
		case strings.Contains(line, `"result"`):
			result = now
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading answer: %w", err)
	}
	fmt.Printf("events %d first_ms %.1f last_ms %.1f result_ms %.1f\n", events,
		ms(first), ms(last), ms(result))
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

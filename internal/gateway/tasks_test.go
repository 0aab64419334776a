package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/balance"
	"github.com/mcpfleet/mcpfleet/internal/session/redistasks"
	"github.com/mcpfleet/mcpfleet/internal/store"
	"github.com/mcpfleet/mcpfleet/internal/store/redistest"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// taskReplica is a fake 2026-07-28 replica of the tasks extension: tools/call
// creates a task it alone knows; tasks/get answers for its own tasks only.
type taskReplica struct {
	name  string
	sse   bool
	mu    sync.Mutex
	tasks map[string]bool
	n     int
}

func (f *taskReplica) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	json.NewDecoder(r.Body).Decode(&msg)
	f.mu.Lock()
	var result string
	switch msg.Method {
	case "tools/call":
		f.n++
		id := fmt.Sprintf("task-%s-%d", f.name, f.n)
		f.tasks[id] = true
		result = `{"resultType":"task","taskId":"` + id + `","status":"working","ttlMs":60000}`
	case "tasks/get":
		if f.tasks[msg.Params.TaskID] {
			result = `{"resultType":"complete","taskId":"` + msg.Params.TaskID + `","status":"completed","replica":"` + f.name + `"}`
		}
	}
	f.mu.Unlock()
	body := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":` + result + `}`
	if result == "" {
		body = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":{"code":-32602,"message":"unknown task"}}`
	}
	if f.sse {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: "+body+"\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, body)
}

// TestTasksRouteToTheirReplica: a task created through the gateway is
// polled on the replica that runs it, whatever the balancing policy would
// pick, for JSON and SSE answers.
func TestTasksRouteToTheirReplica(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			var specs []upstream.Spec
			for _, name := range []string{"a", "b", "c"} {
				hs := httptest.NewServer(&taskReplica{name: name, sse: sse, tasks: map[string]bool{}})
				t.Cleanup(hs.Close)
				specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
			}
			gw := startGatewayOn(t, specs, &Options{Balance: balance.RoundRobin}, io.Discard)
			front := httptest.NewServer(gw)
			defer front.Close()
			r := newRaw(t, front.URL+"/mcp", "2026-07-28")
			pollTask(t, r, createTask(t, r), 6)
		})
	}
}

// TestTasksRouteThroughAnyGateway: with the registry in Redis, a task
// created through one gateway is polled on its replica through another,
// and through a gateway started after it.
func TestTasksRouteThroughAnyGateway(t *testing.T) {
	addr := redistest.Start(t)
	var specs []upstream.Spec
	for _, name := range []string{"a", "b", "c"} {
		hs := httptest.NewServer(&taskReplica{name: name, tasks: map[string]bool{}})
		t.Cleanup(hs.Close)
		specs = append(specs, upstream.Spec{Name: name, URL: hs.URL + "/mcp"})
	}
	gateway := func() *httptest.Server {
		client, err := store.NewRedisClient("redis://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		gw := startGatewayOn(t, specs, &Options{Balance: balance.RoundRobin, Tasks: redistasks.New(client, "test:task:")}, io.Discard)
		front := httptest.NewServer(gw)
		t.Cleanup(front.Close)
		return front
	}
	taskID := createTask(t, newRaw(t, gateway().URL+"/mcp", "2026-07-28"))
	for _, front := range []*httptest.Server{gateway(), gateway()} {
		pollTask(t, newRaw(t, front.URL+"/mcp", "2026-07-28"), taskID, 4)
	}
}

// createTask calls a tool that answers with a task and returns its ID.
func createTask(t *testing.T, r *raw) string {
	t.Helper()
	resp := r.post(context.Background(), 1, "tools/call", map[string]any{"name": "long", "arguments": map[string]any{}}, nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	i := strings.Index(string(b), `"taskId":"`)
	if i < 0 {
		t.Fatalf("no task created: %s", b)
	}
	return strings.SplitN(string(b[i+10:]), `"`, 2)[0]
}

// pollTask asks for the task n times; each must reach the replica that
// runs it.
func pollTask(t *testing.T, r *raw, taskID string, n int) {
	t.Helper()
	for k := range n {
		resp := r.post(context.Background(), k+2, "tasks/get", map[string]any{"taskId": taskID}, map[string]string{"Mcp-Name": taskID})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"status":"completed"`) {
			t.Fatalf("tasks/get %d reached a replica without the task: %s", k, b)
		}
	}
}

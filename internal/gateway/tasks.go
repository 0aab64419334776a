package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/mcpmsg"
	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/upstream"
)

// The tasks extension (SEP-2663) lets a replica answer a tools/call with a
// task ({"resultType":"task","taskId":...}) that the client then polls and
// cancels with tasks/* requests naming the task (Mcp-Name: the task id). Only
// the replica that runs the task knows it, so the gateway remembers the
// replica of every task it sees created and routes tasks/* there.

// defaultTaskTTL is how long a task is remembered when its answer gives no
// ttlMs.
const defaultTaskTTL = time.Hour

// taskReplica returns the replica of a tasks/* request's task, or nil. A
// registry that cannot answer leaves the request to be routed like any
// other: the replica that does not know the task says so. Another
// caller's task is answered here as unknown (binding.go), and reaches no
// replica.
func (g *Gateway) taskReplica(ctx context.Context, q *request, snap *upstream.Snapshot) (*upstream.Replica, *mcpmsg.Error) {
	if q.era != mcpmsg.EraStateless || !strings.HasPrefix(q.msg.Method, "tasks/") || q.msg.Name == "" {
		return nil, nil
	}
	task, ok, err := g.tasks.Lookup(ctx, q.msg.Name)
	if err != nil {
		g.log.Warn("task registry unavailable: routing the task's request like any other", "error", err)
	}
	if !ok {
		return nil, nil
	}
	if !g.checkTask(task, q) {
		return nil, errUnknownTask
	}
	return snap.Lookup(task.Replica), nil
}

// watchesTasks reports whether a request's answer may create a task.
func watchesTasks(q *request) bool {
	return q.era == mcpmsg.EraStateless && q.msg.Method == "tools/call"
}

// noteTask records the task an answer creates, if it creates one, with its
// opener. msg is one JSON-RPC message from the replica (a JSON body or an
// SSE event's data).
func (g *Gateway) noteTask(msg []byte, replica string, opener session.Opener) {
	id, ttl, ok := mcpmsg.ParseTaskResult(msg)
	if !ok {
		return
	}
	life := defaultTaskTTL
	if ttl > 0 {
		life = time.Duration(ttl) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(g.base, g.opts.DialTimeout)
	defer cancel()
	if err := g.tasks.Remember(ctx, id, session.Task{Replica: replica, Opener: opener}, life); err != nil {
		g.log.Warn("remembering a task's replica failed", "error", err)
	}
}

// noteAnswer learns from one message of a replica's answer: the final
// response of an idempotent call, the task a tools/call created, or the
// tool annotations of a tools/list.
func (g *Gateway) noteAnswer(q *request, msg []byte, rec *record) {
	noteResult(rec, q, msg)
	if rec.span != nil {
		if o, ok := mcpmsg.AnswerOutcome(msg); ok {
			rec.answer = o
		}
	}
	g.keepAnswer(q, msg, rec)
	replica := rec.replica
	switch {
	case watchesTasks(q):
		g.noteTask(msg, replica, q.caller)
	case watchesTools(q):
		g.annotations.learn(msg)
	}
}

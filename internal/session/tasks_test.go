package session

import (
	"fmt"
	"testing"
	"time"
)

func TestTasksRouteUntilExpiry(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tasks := NewTasks(3)
	alice := OpenerOf([OpenerLen]byte{1, 2, 3})
	tasks.Put("t1", Task{Replica: "a", Opener: alice}, t0, t0.Add(time.Minute))
	if r, ok := tasks.Get("t1", t0.Add(59*time.Second)); !ok || r != (Task{Replica: "a", Opener: alice}) {
		t.Fatalf("Get(t1) = %+v, %v", r, ok)
	}
	if _, ok := tasks.Get("t1", t0.Add(61*time.Second)); ok {
		t.Error("expired task still routed")
	}
	if tasks.Len() != 0 {
		t.Errorf("expired task still held: Len = %d", tasks.Len())
	}
}

func TestTasksBounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tasks := NewTasks(3)
	tasks.Put("old", Task{Replica: "a"}, t0, t0.Add(time.Second))
	for i := range 10 {
		tasks.Put(fmt.Sprint("t", i), Task{Replica: "b"}, t0.Add(time.Minute), t0.Add(time.Hour))
	}
	if tasks.Len() > 3 {
		t.Fatalf("registry grew to %d, bound 3", tasks.Len())
	}
	if _, ok := tasks.Get("t9", t0.Add(time.Minute)); !ok {
		t.Error("the newest task was dropped")
	}
}

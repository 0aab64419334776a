package session

import (
	"testing"
	"time"
)

func TestTableRemembersAndExpires(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tab := NewTable()
	tab.Put("s1", "a", t0)
	tab.Put("s2", "b", t0)
	if r, ok := tab.Get("s1", t0.Add(50*time.Minute)); !ok || r != "a" {
		t.Fatalf("Get(s1) = %q, %v; want a, true", r, ok)
	}
	if _, ok := tab.Get("nope", t0); ok {
		t.Fatal("Get of an unknown session succeeded")
	}
	// s2 idle for an hour and a minute; s1 was used 11 minutes ago.
	if n := tab.Expire(t0.Add(61*time.Minute), time.Hour); n != 1 {
		t.Fatalf("Expire removed %d, want 1", n)
	}
	if _, ok := tab.Get("s2", t0); ok {
		t.Error("idle session s2 survived expiry")
	}
	tab.Delete("s1")
	if tab.Len() != 0 {
		t.Errorf("Len = %d after deleting all", tab.Len())
	}
}

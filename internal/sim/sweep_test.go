package sim

import (
	"context"
	"errors"
	"testing"
)

func TestParallelRunsEveryJobInItsSlot(t *testing.T) {
	s := Default()
	s.TrafficSeconds = 60
	results := make([]*Result, 5)
	var seen []int
	err := Parallel(context.Background(), len(results), 3, func(i int) {
		sc := s
		sc.Replicas = i + 1
		results[i] = MustRun(sc)
	}, func(done, total int) { seen = append(seen, done) })
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if r == nil || r.Scenario.Replicas != i+1 {
			t.Fatalf("result %d is %+v", i, r)
		}
	}
	if len(seen) != 5 || seen[4] != 5 {
		t.Errorf("progress calls %v", seen)
	}
}

func TestParallelStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make([]bool, 100)
	err := Parallel(ctx, len(ran), 1, func(i int) {
		ran[i] = true
		if i == 2 {
			cancel()
		}
	}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if ran[len(ran)-1] {
		t.Error("jobs went on after the cancel")
	}
}

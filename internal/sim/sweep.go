package sim

import (
	"context"
	"runtime"
	"sync"
)

// Parallel calls job(i) for i in [0, n) on up to workers goroutines
// (GOMAXPROCS when workers < 1), outside any simulation's core loop: each
// job runs its own simulations. progress, if not nil, is called on the
// caller's goroutine after each job with the count done. When ctx ends,
// jobs not yet started are skipped and ctx's error is returned.
func Parallel(ctx context.Context, n, workers int, job func(i int), progress func(done, total int)) error {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, n))
	next := make(chan int)
	finished := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				job(i)
				finished <- struct{}{}
			}
		}()
	}
	go func() { wg.Wait(); close(finished) }()
	sent, done := 0, 0
	var err error
	stop := ctx.Done()
	for done < sent || sent < n {
		in := next
		if sent == n {
			in = nil
		}
		select {
		case in <- sent:
			sent++
		case <-finished:
			done++
			if progress != nil {
				progress(done, n)
			}
		case <-stop:
			err, n, stop = ctx.Err(), sent, nil // start nothing more
		}
	}
	close(next)
	for range finished { // wait for the workers to exit
	}
	return err
}

package trainer

import (
	"context"
	"fmt"
	"sync"
)

// Lease hands out GPUs so that two jobs never share one. It is shared by every Runner of
// the process. Acquire takes all of a job's GPUs at once or none, so two jobs that each
// want the other's GPU never deadlock. The zero value is ready to use.
type Lease struct {
	mu   sync.Mutex
	busy map[int]bool
	// wake is closed (and replaced) on every release, so waiters re-check without polling.
	wake chan struct{}
}

// Acquire blocks until every GPU in gpus is free, marks them busy and returns the function
// that frees them (safe to call more than once). It returns ctx's error if ctx ends first.
func (l *Lease) Acquire(ctx context.Context, gpus []int) (release func(), err error) {
	for {
		l.mu.Lock()
		if l.busy == nil {
			l.busy = map[int]bool{}
		}
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		free := true
		for _, g := range gpus {
			if l.busy[g] {
				free = false
				break
			}
		}
		if free {
			held := map[int]bool{}
			for _, g := range gpus {
				l.busy[g] = true
				held[g] = true
			}
			l.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { l.release(held) }) }, nil
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for GPUs %v: %w", gpus, ctx.Err())
		case <-wake:
		}
	}
}

func (l *Lease) release(held map[int]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for g := range held {
		delete(l.busy, g)
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

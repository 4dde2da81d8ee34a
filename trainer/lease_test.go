package trainer_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"tunebot/trainer"
)

func TestLease(t *testing.T) {
	t.Run("waits for a shared GPU, not for a disjoint one", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var l trainer.Lease
			ctx := context.Background()
			relA, err := l.Acquire(ctx, []int{0, 1})
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan func())
			go func() {
				rel, _ := l.Acquire(ctx, []int{1, 2})
				got <- rel
			}()
			synctest.Wait()
			select {
			case <-got:
				t.Fatal("GPU 1 was leased twice")
			default:
			}
			// All or nothing: the waiter did not take GPU 2 while it waits for GPU 1.
			rel2, err := l.Acquire(ctx, []int{2})
			if err != nil {
				t.Fatal(err)
			}
			rel2()
			relA()
			relA() // releasing twice is harmless
			relB := <-got
			relB()
		})
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var l trainer.Lease
			rel, _ := l.Acquire(context.Background(), []int{3})
			defer rel()
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error)
			go func() {
				_, err := l.Acquire(ctx, []int{3})
				errc <- err
			}()
			synctest.Wait()
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("Acquire after cancel = %v, want context.Canceled", err)
			}
		})
	})
}

package memsim

import (
	"encoding/json"
	"io"
	"sync"
)

// Parallel runs fn on every job, workers at a time, and writes each result it returns to w
// as a JSON line, in the order they finish (a line is written whole, under a lock). It
// returns the first error of fn or of the writes; the other jobs still run.
func Parallel[J, R any](workers int, jobs []J, w io.Writer, fn func(J) ([]R, error)) error {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	return Each(workers, jobs, func(j J) error {
		rs, err := fn(j)
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rs {
			if err == nil {
				err = enc.Encode(r)
			}
		}
		return err
	})
}

// Each runs fn on every job, workers at a time, and returns the first error of fn; the
// other jobs still run. fn guards whatever its calls share.
func Each[J any](workers int, jobs []J, fn func(J) error) error {
	ch := make(chan J)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				if err := fn(j); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return firstErr
}

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// compactTxSize bounds each write transaction of a compaction, so a large file is copied
// without holding all of it in memory.
const compactTxSize = 64 << 20

// afterCompactCopy, when set (by tests), runs on the compacted copy once it is written and
// closed, before it is checked: a failure or damage there must leave the data file as it was.
var afterCompactCopy func(path string) error

// Size returns the data file's size on disk.
func (d *DB) Size() (int64, error) {
	info, err := os.Stat(d.path)
	if err != nil {
		return 0, fmt.Errorf("reading the size of data file %s: %w", d.path, err)
	}
	return info.Size(), nil
}

// Free returns the bytes of the data file's pages that hold no record: those freed by
// deletes and thinned curves, which bbolt reuses but never gives back; Compact does. (bbolt
// also grows the file ahead of need, to a power of two up to 16 MiB and by 16 MiB past it, so
// a compacted file is never smaller than that rounding.)
func (d *DB) Free(ctx context.Context) (int64, error) {
	var free int64
	err := d.view(ctx, func(tx *bolt.Tx) error {
		st := tx.DB().Stats()
		free = int64(st.FreePageN+st.PendingPageN) * int64(tx.DB().Info().PageSize)
		return nil
	})
	return free, err
}

// Compact rewrites the data file without the pages that deleted or thinned records left
// free (bbolt reuses them but never gives them back): a compacted copy is written beside
// the file, synced, passes the consistency check `backup` and `doctor` use, is opened, and
// only then renamed over the file, which d uses from then on. A failure at any step leaves
// the file as it was and d on it. Writers wait meanwhile; readers go on. It returns the
// file's size before and after (docs/design.md §7).
func (d *DB) Compact(ctx context.Context) (before, after int64, err error) {
	if d.opts.ReadOnly {
		return 0, 0, errors.New("compacting: the data file is open read-only")
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	// No write may land in the old file after the copy is taken: it would be lost.
	d.writers.Lock()
	defer d.writers.Unlock()
	if before, err = d.Size(); err != nil {
		return 0, 0, err
	}
	dir := filepath.Dir(d.path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(d.path)+".compact-*")
	if err != nil {
		return 0, 0, fmt.Errorf("compacting: creating the copy in %s: %w", dir, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	var fresh *bolt.DB
	done := false
	defer func() {
		if !done {
			if fresh != nil {
				fresh.Close()
			}
			os.Remove(tmpPath)
		}
	}()
	if err := d.checkedCopy(tmpPath); err != nil {
		return 0, 0, err
	}
	// Opened before the rename, so the file is locked the moment it has the data file's
	// name: no other tunebot can take it in between.
	fresh, err = openBolt(tmpPath, &bolt.Options{Timeout: d.opts.Timeout, FreelistType: bolt.FreelistMapType}, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("compacting: opening the copy: %w", err)
	}
	fresh.NoSync = d.opts.NoSync
	info, err := os.Stat(tmpPath)
	if err != nil {
		return 0, 0, fmt.Errorf("compacting: %w", err)
	}
	if err := os.Rename(tmpPath, d.path); err != nil {
		return 0, 0, fmt.Errorf("compacting: moving the copy into place: %w", err)
	}
	done = true
	syncDir(dir)
	d.swapIn(fresh)
	return before, info.Size(), nil
}

// checkedCopy writes the compacted copy to tmpPath and checks it whole: a copy that fails
// its check never replaces the data file.
func (d *DB) checkedCopy(tmpPath string) error {
	if err := d.copyCompacted(tmpPath); err != nil {
		return err
	}
	if afterCompactCopy != nil {
		if err := afterCompactCopy(tmpPath); err != nil {
			return err
		}
	}
	if err := Check(tmpPath, Options{}); err != nil {
		return fmt.Errorf("the compacted copy failed its check, so %s was left as it was: %w", d.path, err)
	}
	return nil
}

// swapIn makes fresh the open data file and closes the old one: it is gone from the
// directory, so closing it releases its pages, and its close cannot fail in a way that
// matters now that nothing refers to it.
func (d *DB) swapIn(fresh *bolt.DB) {
	d.swap.Lock()
	old := d.bolt
	d.bolt = fresh
	d.swap.Unlock()
	_ = old.Close()
}

// copyCompacted writes a compacted copy of d's file to path, an empty file, and syncs it.
func (d *DB) copyCompacted(path string) error {
	dst, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: d.opts.Timeout, FreelistType: bolt.FreelistMapType, NoSync: true})
	if err != nil {
		return fmt.Errorf("compacting: creating the copy: %w", err)
	}
	// d.bolt stays put: Compact holds d.writers, and only Compact replaces it.
	if err := bolt.Compact(dst, d.bolt, compactTxSize); err != nil {
		dst.Close()
		return fmt.Errorf("compacting: copying %s: %w", d.path, err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return fmt.Errorf("compacting: writing the copy: %w", err)
	}
	var used int64
	_ = dst.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	if err := dst.Close(); err != nil {
		return fmt.Errorf("compacting: writing the copy: %w", err)
	}
	// bbolt grows a file ahead of need (by 16 MiB past 16 MiB); the copy needs no room
	// to grow until it is written to, and bbolt grows it again then.
	if err := os.Truncate(path, used); err != nil {
		return fmt.Errorf("compacting: trimming the copy: %w", err)
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		_ = f.Sync()
		f.Close()
	}
}

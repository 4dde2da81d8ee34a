package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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

// afterCompactRename, when set (by tests), runs right after the copy is renamed over the
// data file at path.
var afterCompactRename func(path string)

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
//
// The copy is made with O_EXCL and never reopened by name: bbolt, the check and the file d
// goes on with all get the descriptor made then (heldFile), so a name swapped for a link
// meanwhile leads nowhere (issue 44 item 2). Before the rename the copy's name must still be
// that file, and after it the data file's name must be.
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
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(d.path)+".compact-*") // O_EXCL
	if err != nil {
		return 0, 0, fmt.Errorf("compacting: creating the copy in %s: %w", dir, err)
	}
	defer tmp.Close()
	var fresh *bolt.DB
	done := false
	defer func() {
		if !done {
			if fresh != nil {
				fresh.Close()
			}
			if sameName(tmp.Name(), tmp) == nil { // never a file put in its place
				os.Remove(tmp.Name())
			}
		}
	}()
	if err := d.checkedCopy(tmp); err != nil {
		return 0, 0, err
	}
	// Opened before the rename, so the file is locked the moment it has the data file's
	// name: no other tunebot can take it in between.
	fresh, _, err = openBolt(tmp.Name(), &bolt.Options{Timeout: d.opts.Timeout, FreelistType: bolt.FreelistMapType}, heldFile(tmp))
	if err != nil {
		return 0, 0, fmt.Errorf("compacting: opening the copy: %w", err)
	}
	fresh.NoSync = d.opts.NoSync
	info, err := tmp.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("compacting: %w", err)
	}
	if err := d.rename(tmp); err != nil {
		return 0, 0, err
	}
	done = true
	syncDir(dir)
	d.swapIn(fresh)
	return before, info.Size(), nil
}

// rename moves the copy tmp over the data file, checking that the copy's name is still tmp
// before and that the data file's name is tmp after. Only something that can write the data
// directory could make either fail, and after the rename nothing can be undone: the store
// goes on with the data it has open, no longer under its name, and the error says to save
// it with `tunebot backup` (which copies from the open file) and restore that.
func (d *DB) rename(tmp *os.File) error {
	if err := sameName(tmp.Name(), tmp); err != nil {
		return fmt.Errorf("compacting: %w, so %s was left as it was", err, d.path)
	}
	if err := os.Rename(tmp.Name(), d.path); err != nil {
		return fmt.Errorf("compacting: moving the copy into place: %w", err)
	}
	if afterCompactRename != nil {
		afterCompactRename(d.path)
	}
	if err := sameName(d.path, tmp); err != nil {
		return fmt.Errorf("compacting: %w the moment it was renamed there: something that can write %s replaced it, and tunebot's data is no longer under that name; "+
			"run `tunebot backup` now (it copies the data tunebot has open), stop tunebot, make %s writable by tunebot's user alone and put the backup in place of %s",
			err, filepath.Dir(d.path), filepath.Dir(d.path), d.path)
	}
	return nil
}

// sameName says whether path still names f's file: not a link, not another file put in
// its place.
func sameName(path string, f *os.File) error {
	want, err := f.Stat()
	if err != nil {
		return err
	}
	got, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("%s is gone: %w", path, err)
	}
	if !os.SameFile(got, want) {
		return fmt.Errorf("%s is no longer the compacted copy tunebot made (now %s)", path, describe(got))
	}
	return nil
}

// describe is what a file is, for a message: a link, a FIFO, another file.
func describe(info fs.FileInfo) string {
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return "a symbolic link"
	case info.Mode().IsRegular():
		return "another file"
	case info.Mode()&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case info.Mode()&fs.ModeSocket != 0:
		return "a socket"
	case info.Mode()&fs.ModeDevice != 0:
		return "a device"
	case info.IsDir():
		return "a directory"
	}
	return "a file of mode " + info.Mode().String()
}

// heldFile is bbolt's OpenFile for a copy f tunebot made (a compaction's, a backup's): f's
// own name gets a duplicate of f's descriptor (bbolt closes what it is given), any other
// name is refused, so neither bbolt nor the check ever opens the copy by name.
func heldFile(f *os.File) func(string, int, os.FileMode) (*os.File, error) {
	return func(name string, _ int, _ os.FileMode) (*os.File, error) {
		if name != f.Name() {
			return nil, fmt.Errorf("%s is not the copy %s", name, f.Name())
		}
		return dupFile(f)
	}
}

// checkedCopy writes the compacted copy to tmp and checks it whole: a copy that fails its
// check never replaces the data file.
func (d *DB) checkedCopy(tmp *os.File) error {
	if err := d.copyCompacted(tmp); err != nil {
		return err
	}
	if afterCompactCopy != nil {
		if err := afterCompactCopy(tmp.Name()); err != nil {
			return err
		}
	}
	if err := Check(tmp.Name(), Options{OpenFile: heldFile(tmp)}); err != nil {
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

// copyCompacted writes a compacted copy of d's file to tmp, an empty file, through its
// descriptor, and syncs it.
func (d *DB) copyCompacted(tmp *os.File) error {
	dst, err := bolt.Open(tmp.Name(), 0o600, &bolt.Options{Timeout: d.opts.Timeout, FreelistType: bolt.FreelistMapType, NoSync: true, OpenFile: heldFile(tmp)})
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
	if err := tmp.Truncate(used); err != nil {
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

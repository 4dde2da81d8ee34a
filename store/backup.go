package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole data file to w: one read transaction's view,
// so writers go on meanwhile and the copy is the file as of one moment (docs/design.md §7).
func (d *DB) Backup(ctx context.Context, w io.Writer) (int64, error) {
	var n int64
	err := d.view(ctx, func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("copying data file %s: %w", d.path, err)
	}
	return n, nil
}

// WriteBackup writes a backup to path through fill, never leaving a half-written file
// there: the copy goes to a temporary file beside path, is synced and passes the
// consistency check, and only then is renamed over path. It returns the copy's size.
func WriteBackup(path string, fill func(io.Writer) error) (int64, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("creating the backup in %s: %w", dir, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp); err != nil {
		return 0, err
	}
	if err := tmp.Sync(); err != nil {
		return 0, fmt.Errorf("writing the backup %s: %w", tmp.Name(), err)
	}
	info, err := tmp.Stat()
	if err != nil {
		return 0, fmt.Errorf("writing the backup %s: %w", tmp.Name(), err)
	}
	// Checked through the descriptor it was written by, never reopened by name: what is
	// checked is what was written, whoever can write dir.
	if err := Check(tmp.Name(), Options{OpenFile: heldFile(tmp)}); err != nil {
		return 0, fmt.Errorf("the copy failed its check, so %s was not written: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("writing the backup %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, fmt.Errorf("moving the backup into place: %w", err)
	}
	done = true
	syncDir(dir)
	return info.Size(), nil
}

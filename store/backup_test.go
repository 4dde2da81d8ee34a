package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"tunebot/session"
	"tunebot/store"
)

// Backups taken while a writer keeps adding sessions are each a consistent file: they open,
// pass the check, and hold every session written before the backup began.
func TestBackupWhileWriting(t *testing.T) {
	db, _ := openDB(t)
	ctx := context.Background()
	var mu sync.Mutex
	written := 0
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := db.CreateSession(ctx, newSession(fmt.Sprintf("w%05d", i), session.StateSucceeded, t0)); err != nil {
				done <- err
				return
			}
			mu.Lock()
			written++
			mu.Unlock()
		}
	}()
	dir := t.TempDir()
	for i := range 5 {
		mu.Lock()
		before := written
		mu.Unlock()
		dst := filepath.Join(dir, fmt.Sprintf("copy%d.db", i))
		if _, err := store.WriteBackup(dst, func(w io.Writer) error { _, err := db.Backup(ctx, w); return err }); err != nil {
			t.Fatalf("backup %d: %v", i, err)
		}
		c, err := store.Open(dst, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("backup %d does not open: %v", i, err)
		}
		all, err := c.Sessions(ctx)
		c.Close()
		if err != nil || len(all) < before {
			t.Fatalf("backup %d: %d sessions (%v), want at least the %d written before it", i, len(all), err, before)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A backup that fails on the way, or is not a sound data file, leaves neither a partial
// file nor a temporary one, and an older backup at the path stays as it was.
func TestWriteBackupNeverLeavesAHalfFile(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "tunebot-backup.db")
	if err := os.WriteFile(dst, []byte("yesterday's backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, fill := range map[string]func(io.Writer) error{
		"cut short": func(w io.Writer) error {
			_, _ = w.Write(make([]byte, 8192))
			return errors.New("connection reset")
		},
		"not a data file": func(w io.Writer) error {
			_, err := w.Write([]byte("<html>proxy error</html>"))
			return err
		},
	} {
		if _, err := store.WriteBackup(dst, fill); err == nil {
			t.Errorf("%s: no error", name)
		}
		if got, _ := os.ReadFile(dst); string(got) != "yesterday's backup" {
			t.Errorf("%s: the older backup became %q", name, got)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%s: files left behind: %v", name, entries)
		}
	}
}

// Package disk measures free space, keeps a small reserve on the data disk, and writes
// files whole or not at all (docs/design.md §1, "A full disk").
package disk

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"tunebot/session"
)

// Usage measures the filesystem that holds path: the bytes an unprivileged writer may
// still use (statfs's f_bavail) and its size.
func Usage(path string) (session.DiskUsage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return session.DiskUsage{}, fmt.Errorf("measuring the free space of %s: %w", path, err)
	}
	bs := int64(st.Bsize) // its type differs by platform
	return session.DiskUsage{Path: path, Free: int64(st.Bavail) * bs, Total: int64(st.Blocks) * bs}, nil
}

// Usages measures the filesystems that hold paths, each once: a path on the filesystem of
// one before it (the same device id, as stat says) is left out, and so is one that cannot be
// measured. Free and total bytes cannot tell two filesystems apart: they change between two
// reads on a busy disk, and two filesystems of one size and use have the same.
func Usages(paths ...string) []session.DiskUsage { return usages(paths, Usage, device) }

// usages is Usages with its measures given (a test injects them).
func usages(paths []string, usage func(string) (session.DiskUsage, error), device func(string) (uint64, error)) []session.DiskUsage {
	var out []session.DiskUsage
	seen := map[uint64]bool{}
	for _, p := range paths {
		dev, err := device(p)
		if err != nil || seen[dev] {
			continue
		}
		u, err := usage(p)
		if err != nil {
			continue
		}
		seen[dev] = true
		out = append(out, u)
	}
	return out
}

// device is the id of the filesystem that holds path.
func device(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("finding the filesystem of %s: %w", path, err)
	}
	return uint64(st.Dev), nil // its type differs by platform
}

// ReserveSize is the space the reserve file holds on the data disk: enough for the store
// to record a pause and for the outbox to say so when everything else is full.
const ReserveSize = 4 << 20

// ReserveFile is the reserve's name in data_dir.
const ReserveFile = "space.reserve"

// Watch is session.Disks over the real filesystems, with its reserve at Reserve.
type Watch struct {
	Reserve string
	mu      sync.Mutex
}

var _ session.Disks = (*Watch)(nil)

// NewWatch keeps its reserve in dataDir.
func NewWatch(dataDir string) *Watch { return &Watch{Reserve: filepath.Join(dataDir, ReserveFile)} }

// Usage measures the filesystem that holds path.
func (w *Watch) Usage(path string) (session.DiskUsage, error) { return Usage(path) }

// Release deletes the reserve, so that a full disk has room for the pause's record.
func (w *Watch) Release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = os.Remove(w.Reserve)
}

// ReleaseIfFull deletes the reserve when the disk has less room than it holds, and reports
// whether it did: a tunebot started on a disk that filled while it was stopped needs room
// for its keys, its log and the pause it may have to record.
func (w *Watch) ReleaseIfFull() bool {
	u, err := Usage(filepath.Dir(w.Reserve))
	if err != nil || u.Free >= ReserveSize {
		return false
	}
	if _, err := os.Lstat(w.Reserve); err != nil {
		return false
	}
	w.Release()
	return true
}

// Restore writes the reserve again when it is missing and the disk has room for it twice
// over; a reserve that cannot be written whole is not left behind.
func (w *Watch) Restore() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if info, err := os.Lstat(w.Reserve); err == nil && info.Mode().IsRegular() && info.Size() == ReserveSize {
		return
	}
	if u, err := Usage(filepath.Dir(w.Reserve)); err != nil || u.Free < 2*ReserveSize {
		return
	}
	_ = Write(w.Reserve, 0o600, func(out io.Writer) error {
		zero := make([]byte, 1<<20)
		for range ReserveSize / len(zero) {
			if _, err := out.Write(zero); err != nil {
				return err
			}
		}
		return nil
	})
}

// WriteFile writes data to path whole or not at all, as Write does.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write fills a new file beside path and renames it over path once it is written and
// synced: a full disk, or a crash, leaves path as it was (or absent), never half-written,
// and the partial copy is removed. The copy is made with O_EXCL under a fresh name, so no
// file or link planted beside path is written through.
func Write(path string, perm fs.FileMode, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

package retention

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// beforeRemove is called before each file is removed (a test's hook).
var beforeRemove = func(dir, rel string) {}

// remove deletes the directory name under parent but the files in keep (relative to it),
// and the directory itself when nothing is kept, and returns the bytes freed (that would
// be, with dryRun). Every step is taken relative to a directory descriptor (os.Root), never
// by path: the directory is opened once, so one swapped for a link afterwards is not
// followed (the removals go on in the directory opened), and a name under it that is or
// becomes a link out of it is refused. A link in the tree is removed, never followed.
func remove(parent, name string, keep []string, dryRun bool) (int64, error) {
	if parent == "" {
		return 0, nil // no such directory configured: nothing of it to remove
	}
	top, err := openTop(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("removing %s: %w", filepath.Join(parent, name), err)
	}
	defer top.Close()
	info, err := top.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("removing %s: %w", filepath.Join(parent, name), err)
	}
	if !info.IsDir() {
		// A file or a link where a directory belongs: it goes itself, its target stays.
		if dryRun {
			return info.Size(), nil
		}
		beforeRemove(filepath.Join(parent, name), ".")
		if err := top.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("removing %s: %w", filepath.Join(parent, name), err)
		}
		return info.Size(), nil
	}
	dir, err := openSame(top, name, info)
	if err != nil {
		return 0, fmt.Errorf("removing %s: %w", filepath.Join(parent, name), err)
	}
	defer dir.Close()
	freed, err := removeUnder(dir, filepath.Join(parent, name), keep, dryRun)
	if err != nil || dryRun {
		return freed, err
	}
	// Empty now unless it holds a kept file; a link swapped in at name is not a directory
	// and stays, and the directory opened has been emptied wherever it was moved.
	if err := top.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) && !isNotEmpty(dir, ".") {
		return freed, fmt.Errorf("removing %s: %w", filepath.Join(parent, name), err)
	}
	return freed, nil
}

// openTop opens parent (sessions/ or reports/) as a root, refusing a link: os.OpenRoot
// follows one at the top, and a link planted for reports/ made prune remove files in the
// directory it named (issue 44 item 3).
func openTop(parent string) (*os.Root, error) {
	info, err := os.Lstat(parent)
	if err != nil {
		return nil, err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link: prune removes nothing through a link; remove it (tunebot makes the directory again)", parent)
	}
	top, err := os.OpenRoot(parent)
	if err != nil {
		return nil, err
	}
	if st, err := top.Stat("."); err != nil || !os.SameFile(st, info) {
		top.Close()
		return nil, fmt.Errorf("%s was replaced while prune opened it", parent)
	}
	return top, nil
}

// openSame opens directory name of top as a root and checks that it is the directory info
// describes: swapped for another between the two, it is refused.
func openSame(top *os.Root, name string, info fs.FileInfo) (*os.Root, error) {
	dir, err := top.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if st, err := dir.Stat("."); err != nil || !os.SameFile(st, info) {
		dir.Close()
		return nil, errors.New("the directory was replaced while prune opened it")
	}
	return dir, nil
}

// removeUnder deletes everything in dir but the files in keep, deepest directories last.
// path is dir's name, for messages.
func removeUnder(dir *os.Root, path string, keep []string, dryRun bool) (int64, error) {
	var freed int64
	var dirs []string
	err := fs.WalkDir(dir.FS(), ".", func(rel string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if rel != "." {
				dirs = append(dirs, rel)
			}
			return nil
		}
		if slices.Contains(keep, filepath.FromSlash(rel)) {
			return nil
		}
		if info, err := e.Info(); err == nil {
			freed += info.Size()
		}
		if dryRun {
			return nil
		}
		beforeRemove(path, rel)
		return dir.Remove(rel)
	})
	if err != nil {
		return freed, fmt.Errorf("removing %s: %w", path, err)
	}
	if dryRun {
		return freed, nil
	}
	for _, d := range slices.Backward(dirs) {
		if err := dir.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) && !isNotEmpty(dir, d) {
			return freed, fmt.Errorf("removing %s: %w", filepath.Join(path, d), err)
		}
	}
	return freed, nil
}

// isNotEmpty reports whether directory d of root still has entries.
func isNotEmpty(root *os.Root, d string) bool {
	f, err := root.Open(d)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return err == nil
}

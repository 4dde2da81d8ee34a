//go:build unix

package private

import (
	"errors"
	"io/fs"
	"syscall"
)

const (
	noFollow = syscall.O_NOFOLLOW
	nonBlock = syscall.O_NONBLOCK
)

// owner is the uid that owns the file info describes.
func owner(info fs.FileInfo) (int, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// isLoop reports an open refused because the last element is a link (O_NOFOLLOW).
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// links is how many names (hard links) the file info describes has.
func links(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

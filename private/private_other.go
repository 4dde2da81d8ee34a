//go:build !unix

package private

import "io/fs"

const (
	noFollow = 0
	nonBlock = 0
)

// owner is unknown where files have no uid.
func owner(fs.FileInfo) (int, bool) { return 0, false }

func isLoop(error) bool { return false }

// links is unknown here: one name.
func links(fs.FileInfo) uint64 { return 1 }

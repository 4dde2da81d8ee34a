package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// maxConfigFile bounds a config file: the example, every key documented, is about 15 KiB,
// and a few tasks' spaces inline add a few KiB each.
const maxConfigFile = 1 << 20

// readRegular reads the file at path whole: a regular file (a FIFO, a device or a
// directory is refused before it is opened, so nothing is waited on), at most limit bytes.
// A missing file's error is os.ErrNotExist's, for the caller to word.
func readRegular(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	// O_NONBLOCK: a FIFO swapped in since the first look must not hang the open.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() { // replaced since the first look
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return raw, nil
}

// isNotExist reports whether err says a file does not exist.
func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }

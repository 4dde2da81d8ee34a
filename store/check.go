package store

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"runtime/debug"
	"strings"
	"syscall"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"tunebot/session"
)

// DamagedError is a data file that bbolt cannot open or that fails its consistency check
// (docs/design.md §7). Its message is the one line a person sees; Detail is what was found,
// for the log and `tunebot doctor`.
type DamagedError struct {
	Path   string
	Detail string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("data file %s is damaged: restore a backup or move it aside", e.Path)
}

// Unwrap makes errors.Is(err, session.ErrDamaged) true.
func (e *DamagedError) Unwrap() error { return session.ErrDamaged }

// openBolt opens path with bbolt. A damaged file makes bbolt fail, panic or fault while it
// reads the meta and freelist pages; all three become a DamagedError. The freelist is loaded
// here even for a read-only file, so that tx.Check, which runs in a goroutine of its own
// where nothing can recover, never meets it first. After a panic the file bbolt opened is
// closed, but its mapping, and with it the file's lock, stays until the process exits: the
// callers are commands that exit on that error. file is the file bbolt opened, for a check
// that must not look the path up again.
func openBolt(path string, o *bolt.Options, openFile func(string, int, os.FileMode) (*os.File, error)) (db *bolt.DB, file *os.File, err error) {
	o.PreLoadFreelist = true
	if openFile == nil {
		openFile = openRegular
	}
	o.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := openFile(name, flag, perm)
		file = f
		return f, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				file.Close()
			}
			db, file, err = nil, nil, &DamagedError{Path: path, Detail: fmt.Sprint(r)}
		}
	}()
	db, err = bolt.Open(path, 0o600, o)
	if err != nil && (errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) ||
		errors.Is(err, berrors.ErrVersionMismatch) || strings.HasPrefix(err.Error(), "file size too small")) {
		return nil, nil, &DamagedError{Path: path, Detail: err.Error()}
	}
	if err != nil {
		return nil, nil, err
	}
	return db, file, nil
}

// openRegular is how the store opens a data file when its caller gives no OpenFile
// (backup, doctor): never waiting on a FIFO's open (O_NONBLOCK, which a regular file
// ignores), and refusing anything but a regular file. Tried as another user, a FIFO
// planted at tunebot.db held backup and doctor in open past SIGTERM.
func openRegular(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s is %s, not a regular file: tunebot opens no other kind as its data file", name, describe(info))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// check runs bbolt's consistency check on file, open in db: a file shorter than its pages
// say (truncated), garbled pages, pages both used and free. It returns a DamagedError or nil.
func check(db *bolt.DB, file *os.File, path string) (err error) {
	info, err := file.Stat()
	if err != nil {
		return fmt.Errorf("checking data file %s: %w", path, err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedError{Path: path, Detail: fmt.Sprint(r)}
		}
	}()
	var found []string
	err = db.View(func(tx *bolt.Tx) error {
		if tx.Size() > info.Size() {
			found = append(found, fmt.Sprintf("the file is %d bytes but its pages need %d: it was truncated", info.Size(), tx.Size()))
			return nil
		}
		// Read every bucket and value here first: a garbled page then panics or faults in
		// this goroutine, where it is recovered, and not in the one tx.Check starts.
		if err := walk(tx); err != nil {
			found = append(found, err.Error())
			return nil
		}
		for err := range tx.Check() {
			found = append(found, err.Error())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("checking data file %s: %w", path, err)
	}
	if len(found) > 0 {
		if len(found) > 3 {
			found = append(found[:3], fmt.Sprintf("and %d more problems", len(found)-3))
		}
		return &DamagedError{Path: path, Detail: strings.Join(found, "; ")}
	}
	return nil
}

// walk reads every key and value of every bucket, nested ones included, and checks that
// each bucket's keys come in order. The bytes are read, not only sliced (the checksum is
// otherwise unused), so a page that points outside the file faults here.
func walk(tx *bolt.Tx) error {
	var sum uint32
	var bucket func(b *bolt.Bucket, name string) error
	bucket = func(b *bolt.Bucket, name string) error {
		var prev []byte
		return b.ForEach(func(k, v []byte) error {
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				return fmt.Errorf("bucket %s: key %x is out of order", name, k)
			}
			prev = k
			if v == nil {
				child := b.Bucket(k)
				if child == nil {
					return fmt.Errorf("bucket %s: key %x has no value and is no bucket", name, k)
				}
				return bucket(child, name+"/"+string(k))
			}
			sum = crc32.Update(sum, crc32.IEEETable, v)
			return nil
		})
	}
	return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return bucket(b, string(name)) })
}

// Check opens the data file at path read-only and runs the consistency check Open runs. It
// fails with a DamagedError when the file is damaged, and with an error wrapping
// session.ErrLocked when a running tunebot holds it.
func Check(path string, opts Options) error {
	opts.ReadOnly = true
	db, err := Open(path, opts)
	if err != nil {
		return err
	}
	return db.Close()
}

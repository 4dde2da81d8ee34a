package store

import (
	"os"
	"syscall"
)

// dupFile is a second descriptor of f's open file, under f's name.
func dupFile(f *os.File) (*os.File, error) {
	conn, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var fd int
	var dupErr error
	if err := conn.Control(func(s uintptr) {
		fd, dupErr = syscall.Dup(int(s))
		if dupErr == nil {
			syscall.CloseOnExec(fd)
		}
	}); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

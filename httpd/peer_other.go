//go:build !linux

package httpd

import (
	"errors"
	"net"
)

// peerUID has no SO_PEERCRED to read here: the caller records an unknown operator.
func peerUID(*net.UnixConn) (int, error) {
	return 0, errors.New("this system does not report a socket peer's user")
}

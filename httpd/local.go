package httpd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"
)

// SocketName is the daemon's Unix socket in its data directory: the
// routes of the tunebot command on this machine (backup, prune, dashboard link and rotate,
// the presets while the daemon holds the store) are served there and nowhere else, so no
// proxy in front of the TCP listener can reach them, whatever headers it adds.
const SocketName = "tunebot.sock"

// maxSocketPath is the longest path a Unix socket may have (sun_path, less its NUL).
const maxSocketPath = 103

// Local serves the CLI's routes on a Unix socket, mode 0600.
type Local struct {
	path string
	mux  *http.ServeMux
	srv  *http.Server
	log  *slog.Logger
}

// NewLocal returns the server of the socket at path.
func NewLocal(path string, logger *slog.Logger) *Local {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Local{path: path, mux: http.NewServeMux(), log: logger}
	l.srv = &http.Server{Handler: samePeer(l.mux), ReadHeaderTimeout: 5 * time.Second, ConnContext: withPeer}
	return l
}

// Handle adds a route before Serve.
func (l *Local) Handle(pattern string, h http.Handler) { l.mux.Handle(pattern, h) }

// Listen binds the socket, replacing one a previous daemon left (the store's lock, taken
// first, says no other daemon runs on this data directory), and makes it 0600.
func (l *Local) Listen() (net.Listener, error) {
	if len(l.path) > maxSocketPath {
		return nil, fmt.Errorf("the daemon's socket %s is longer than a Unix socket path may be (%d bytes): use a shorter data_dir", l.path, maxSocketPath)
	}
	if info, err := os.Lstat(l.path); err == nil {
		if info.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s is in the way of the daemon's socket and is no socket: remove it", l.path)
		}
		_ = os.Remove(l.path)
	}
	ln, err := net.Listen("unix", l.path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", l.path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	if err := os.Chmod(l.path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("making %s private: %w", l.path, err)
	}
	return ln, nil
}

// Serve serves on ln until ctx ends, then shuts down within a few seconds; requests in
// flight (a backup, a prune) are cut past that.
func (l *Local) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- l.srv.Serve(ln) }()
	l.log.Info("the tunebot command's socket is listening", "path", l.path)
	select {
	case err := <-errc:
		return fmt.Errorf("socket %s: %w", l.path, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := l.srv.Shutdown(sctx); err != nil {
		_ = l.srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("socket %s: %w", l.path, err)
	}
	return nil
}

type peerKey struct{}

type peer struct {
	uid int
	err error
}

// withPeer keeps the connecting process's uid (the kernel's word for it, SO_PEERCRED) with
// each request on the connection.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return context.WithValue(ctx, peerKey{}, peer{err: errors.New("not a Unix socket connection")})
	}
	uid, err := peerUID(uc)
	return context.WithValue(ctx, peerKey{}, peer{uid: uid, err: err})
}

// PeerUID is the uid of the process that sent r on the daemon's socket, as the kernel
// reports it: who ran the tunebot command, whatever the request says.
func PeerUID(r *http.Request) (int, error) {
	p, ok := r.Context().Value(peerKey{}).(peer)
	if !ok {
		return 0, errors.New("the request did not come through the daemon's socket")
	}
	return p.uid, p.err
}

// samePeer answers only the daemon's own user (or root): the socket's mode says so
// already; this holds should its directory be opened by mistake. A caller whose
// credentials cannot be read (a connection that is no Unix socket's, a system without
// SO_PEERCRED) is refused: unknown is not the daemon's user.
func samePeer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid, err := PeerUID(r)
		if err != nil {
			http.Error(w, "the daemon's socket answers its own user only, and the caller's could not be read", http.StatusForbidden)
			return
		}
		if uid != os.Geteuid() && uid != 0 {
			http.Error(w, fmt.Sprintf("the daemon's socket answers its own user (uid %d) only, not uid %d", os.Geteuid(), uid), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ErrNoDaemon is the error of a call when no daemon listens on the socket.
var ErrNoDaemon = errors.New("no tunebot run answers")

// SocketClient is an HTTP client that reaches the daemon on the socket at path, whatever
// the URL's host.
func SocketClient(path string, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "unix", path)
			if err != nil {
				return nil, fmt.Errorf("%w on %s: %w", ErrNoDaemon, path, err)
			}
			return c, nil
		},
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// SocketURL is the URL of path on the daemon's socket, for SocketClient.
func SocketURL(path string) string { return "http://tunebot" + path }

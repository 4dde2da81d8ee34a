package httpd_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"tunebot/httpd"
)

// serveLocal serves the routes setup adds on a socket in a fresh directory, as the daemon
// does, until the test ends; it returns the socket's path.
func serveLocal(t *testing.T, setup func(*httpd.Local)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), httpd.SocketName)
	l := httpd.NewLocal(path, nil)
	setup(l)
	ln, err := l.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return path
}

// TestSocketIsPrivateAndKnowsItsCaller: the CLI's socket is 0600, replaces a stale socket,
// and tells a route the caller's uid as the kernel reports it (what prune records as the
// operator), not what the request claims.
func TestSocketIsPrivateAndKnowsItsCaller(t *testing.T) {
	path := serveLocal(t, func(l *httpd.Local) {
		l.Handle("POST /whoami", httpd.WithToken("s3cret", "asking", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			uid, err := httpd.PeerUID(r)
			fmt.Fprintf(w, "%d %v", uid, err)
		})))
	})
	info, err := os.Lstat(path)
	if err != nil || info.Mode().Type() != os.ModeSocket || info.Mode().Perm() != 0o600 {
		t.Fatalf("the socket: %v %v", info, err)
	}
	resp, err := httpd.Call(context.Background(), path, http.MethodPost, "/whoami", "s3cret", strings.NewReader(`{"by":"mallory"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("%d <nil>", os.Geteuid()); string(body) != want {
		t.Errorf("the caller: %q, want %q", body, want)
	}
	if _, err := httpd.Call(context.Background(), path, http.MethodPost, "/whoami", "wrong", nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong token: %v", err)
	}
	// A request that did not come through the socket has no caller to name.
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	if _, err := httpd.PeerUID(req); err == nil {
		t.Error("a request off the socket has a peer uid")
	}
}

// TestSocketRefusesACallerItCannotName: when the peer's credentials cannot be read (here
// the socket's server is reached over TCP, which has no SO_PEERCRED), the request is
// refused before any route, not let through as the daemon's user (issue 36).
func TestSocketRefusesACallerItCannotName(t *testing.T) {
	var reached atomic.Bool
	l := httpd.NewLocal(filepath.Join(t.TempDir(), httpd.SocketName), nil)
	l.Handle("GET /open", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Store(true) }))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx, ln) }()
	defer func() {
		cancel()
		<-done
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/open")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || reached.Load() {
		t.Errorf("a caller with no credentials: %d, route reached %v: %s", resp.StatusCode, reached.Load(), body)
	}
}

// TestStaleSocketIsReplaced: a socket a killed daemon left is taken over; a file that is no
// socket is not removed.
func TestStaleSocketIsReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, httpd.SocketName)
	first := httpd.NewLocal(path, nil)
	ln, err := first.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ln.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	ln.Close() // as after kill -9: the file stays
	second := httpd.NewLocal(path, nil)
	ln2, err := second.Listen()
	if err != nil {
		t.Fatalf("a stale socket: %v", err)
	}
	ln2.Close()
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := httpd.NewLocal(path, nil).Listen(); err == nil || !strings.Contains(err.Error(), "no socket") {
		t.Errorf("a regular file in the way: %v", err)
	}
}

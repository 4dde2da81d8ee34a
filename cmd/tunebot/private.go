package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"tunebot/config"
	"tunebot/httpd"
	"tunebot/private"
	"tunebot/session"
)

// socketPath is the daemon's Unix socket, where the tunebot command reaches it.
func socketPath(cfg config.Config) string { return filepath.Join(cfg.DataDir, httpd.SocketName) }

// daemonToken reads the token the running daemon asks of the tunebot command on its
// socket (backup, prune, presets), refusing one that is not the user's alone; what says
// what the command was about to do, for the message when there is none.
func daemonToken(cfg config.Config, what string) (string, error) {
	b, err := private.ReadFile(backupTokenPath(cfg))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("a running tunebot holds %s but has left no token in %s to ask it with: stop it to %s", dataFile(cfg), cfg.DataDir, what)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// socketCaller is who sent r on the daemon's socket, for the audit: the user the kernel
// says ran the tunebot command (SO_PEERCRED), never a name the request carries.
func socketCaller(r *http.Request) session.Actor {
	uid, err := httpd.PeerUID(r)
	if err != nil {
		return session.Actor{Platform: "cli", ID: "unknown", Name: "unknown (" + err.Error() + ")"}
	}
	id := strconv.Itoa(uid)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return session.Actor{Platform: "cli", ID: u.Username, Name: u.Username}
	}
	return session.Actor{Platform: "cli", ID: "uid " + id, Name: "uid " + id}
}

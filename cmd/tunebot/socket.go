package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"tunebot/httpd"
)

// startSocket serves the tunebot command's routes on the daemon's Unix socket, mode 0600
// in data_dir: the backup, prune, the presets while the daemon holds
// the store, and the operator's sign-in link and key rotation when the page runs. They are
// served nowhere else, so no proxy in front of the TCP listener reaches them; the token in
// backup.token (and the dashboard key's, for the operator's routes) is a second wall.
func (d *daemon) startSocket() error {
	token, err := writeBackupToken(d.app.cfg)
	if err != nil {
		return err
	}
	l := httpd.NewLocal(socketPath(d.app.cfg), d.log)
	l.Handle("GET "+httpd.BackupPath, httpd.BackupHandler(d.app.db, token, d.log))
	l.Handle("POST "+prunePath, httpd.WithToken(token, "a prune", pruneHandler(d.pruner, d.log)))
	d.presetRoutes(l, token)
	d.applyRoute(l, token)
	if d.dash != nil {
		op := d.dash.Operator()
		l.Handle("POST /api/link", op)
		l.Handle("POST /api/rotate", op)
	}
	ln, err := l.Listen()
	if err != nil {
		return fmt.Errorf("the tunebot command's socket: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.socketCancel = cancel
	d.serviceWG.Add(1)
	go func() {
		defer d.serviceWG.Done()
		if err := l.Serve(ctx, ln); err != nil && ctx.Err() == nil {
			d.log.Error("the tunebot command's socket stopped", "err", err)
		}
	}()
	return nil
}

// serveTuneSocket serves the same routes while a foreground tune holds the store, so
// preset, backup, prune and apply work beside it as beside the daemon (an apply that would
// change the checkout is refused while tune's session uses it). The func stops it.
func serveTuneSocket(a *app, e *env, log *slog.Logger) (func(), error) {
	d := &daemon{cfg: a.cfg, e: e, log: log, app: a, pruner: pruner(a.cfg, a.actions)}
	if err := d.startSocket(); err != nil {
		return nil, err
	}
	return func() {
		d.stopSocket()
		waitBounded(d.serviceWG.Wait, drainTimeout)
	}, nil
}

// stopSocket ends the socket's server, if it started, and removes its token, so the
// tunebot command opens the store itself again; the caller waits for serviceWG.
func (d *daemon) stopSocket() {
	if d.socketCancel != nil {
		d.socketCancel()
		_ = os.Remove(backupTokenPath(d.app.cfg))
	}
}

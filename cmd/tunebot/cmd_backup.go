package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"tunebot/config"
	"tunebot/httpd"
	"tunebot/private"
	"tunebot/session"
	"tunebot/store"
)

func init() {
	register("backup", "backup PATH [--config FILE] [--data-dir DIR]: a consistent, checked copy of the data file, also while the daemon runs", runBackup)
}

const backupUsage = "usage: tunebot backup PATH [--config FILE] [--data-dir DIR]"

// backupTokenFile, in the data dir, holds the token the running daemon
// asks of the tunebot command on its socket (backup, prune, presets): only the daemon's
// user can read it, as only they can read the data file.
const backupTokenFile = "backup.token"

func backupTokenPath(cfg config.Config) string {
	return filepath.Join(cfg.DataDir, backupTokenFile)
}

// writeBackupToken makes a new token for this daemon's socket and stores it, readable by
// its user only (never through a link planted in its place), for the tunebot command.
func writeBackupToken(cfg config.Config) (string, error) {
	token := rand.Text()
	if err := private.WriteFile(backupTokenPath(cfg), []byte(token+"\n")); err != nil {
		return "", fmt.Errorf("writing the backup token: %w", err)
	}
	return token, nil
}

func runBackup(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "backup", backupUsage)
	cfgPath := fs.String("config", "", "config file (default: the built-in defaults)")
	useDataDir := dataDirFlag(fs)
	// The flags may come before or after the path.
	operands, code, ok := parseInterleaved(e, fs, args)
	if !ok {
		return code
	}
	if len(operands) != 1 {
		return usageError(e, fs, "give one PATH to write the copy to")
	}
	cfg, err := config.Load(*cfgPath, e.getenv)
	if err != nil {
		printProblems(e, err)
		return 1
	}
	useDataDir(&cfg)
	n, err := backup(ctx, cfg, operands[0])
	if err != nil {
		fmt.Fprintln(e.stderr, "backup:", err)
		return 1
	}
	fmt.Fprintf(e.stdout, "backed up %s to %s (%d bytes; the copy passed its consistency check)\n", dataFile(cfg), operands[0], n)
	return 0
}

// backup copies the data file to dst: directly when no daemon holds it, else through the
// running daemon's socket.
func backup(ctx context.Context, cfg config.Config, dst string) (int64, error) {
	src := dataFile(cfg)
	if _, err := os.Stat(src); err != nil {
		return 0, fmt.Errorf("no data file at %s to back up: %w", src, err)
	}
	if same(src, dst) {
		return 0, fmt.Errorf("%s is the data file itself: write the backup elsewhere", dst)
	}
	db, err := store.Open(src, store.Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
	if err == nil {
		defer db.Close()
		return store.WriteBackup(dst, func(w io.Writer) error {
			_, err := db.Backup(ctx, w)
			return err
		})
	}
	if !errors.Is(err, session.ErrLocked) {
		return 0, err
	}
	token, err := daemonToken(cfg, "take a backup")
	if err != nil {
		return 0, err
	}
	n, err := store.WriteBackup(dst, func(w io.Writer) error {
		return httpd.FetchBackup(ctx, socketPath(cfg), token, w)
	})
	if err != nil {
		return 0, fmt.Errorf("a running tunebot holds %s, and %w", src, err)
	}
	return n, nil
}

// same reports whether a and b name one existing file.
func same(a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}

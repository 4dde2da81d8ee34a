package httpd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// BackupPath is where the daemon serves a consistent copy of its data file: while it runs,
// it holds the file's lock, so `tunebot backup` asks it for the copy.
const BackupPath = "/backup"

// backupTimeout bounds one backup download, past the server's general write timeout.
const backupTimeout = 10 * time.Minute

// Backuper writes a consistent copy of the data file; *store.DB implements it.
type Backuper interface {
	Backup(ctx context.Context, w io.Writer) (int64, error)
}

// BackupHandler serves src's copy, on the daemon's socket, with token as its bearer token
// (WithToken); the copy holds the audit log and chat references.
func BackupHandler(src Backuper, token string, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return WithToken(token, "a backup", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(backupTimeout))
		w.Header().Set("Content-Type", "application/octet-stream")
		n, err := src.Backup(r.Context(), w)
		if err != nil {
			// The body is cut short; the client's check of the copy refuses it.
			logger.Error("serving a backup failed", "bytes", n, "err", err)
			panic(http.ErrAbortHandler)
		}
		logger.Info("served a backup", "bytes", n)
	}))
}

// FetchBackup downloads the running daemon's copy of its data file, through its socket,
// into w.
func FetchBackup(ctx context.Context, socket, token string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, backupTimeout)
	defer cancel()
	resp, err := Call(ctx, socket, http.MethodGet, BackupPath, token, nil)
	if err != nil {
		return fmt.Errorf("asking for the copy: %w", err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("receiving the copy: %w", err)
	}
	return nil
}

package httpd

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
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

// BackupHandler serves src's copy to a request that carries token as its bearer token,
// from this machine only (LocalOnly). The token lives in a file only the daemon's user can
// read, so the copy (audit log and chat references included) goes to nobody who could not
// read the data file itself.
func BackupHandler(src Backuper, token string, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	want := []byte("Bearer " + token)
	return LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" || subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "a backup needs the token of this daemon's data dir", http.StatusUnauthorized)
			return
		}
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

// FetchBackup downloads the running daemon's copy of its data file, as configured by cfg,
// into w.
func FetchBackup(ctx context.Context, cfg Config, token string, w io.Writer) error {
	if cfg.Off() {
		return errors.New("its service is off (service.addr: off): set a service address, or stop the daemon, to take a backup")
	}
	host, port, err := net.SplitHostPort(cfg.addr())
	if err != nil {
		return fmt.Errorf("service address %q: %w", cfg.addr(), err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1" // listening everywhere includes loopback
	}
	url := "http://" + net.JoinHostPort(host, port) + BackupPath
	ctx, cancel := context.WithTimeout(ctx, backupTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("asking the daemon at %s for the copy: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("the daemon at %s refused the backup: %s %s", url, resp.Status, msg)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("receiving the copy from %s: %w", url, err)
	}
	return nil
}

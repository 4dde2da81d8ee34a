package httpd_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/httpd"
)

type fakeBackuper struct {
	data []byte
	fail bool
}

func (f fakeBackuper) Backup(ctx context.Context, w io.Writer) (int64, error) {
	if f.fail {
		n, _ := w.Write(f.data[:len(f.data)/2])
		return int64(n), errors.New("disk read error")
	}
	n, err := w.Write(f.data)
	return int64(n), err
}

// serveBackup serves b's copy on a socket, as the daemon does, and returns its path.
func serveBackup(t *testing.T, b fakeBackuper, token string) string {
	t.Helper()
	return serveLocal(t, func(l *httpd.Local) {
		l.Handle("GET "+httpd.BackupPath, httpd.BackupHandler(b, token, nil))
	})
}

// The copy goes only to a request with the daemon's token; a copy cut short is an error,
// never a short file taken for a backup.
func TestBackupEndpoint(t *testing.T) {
	data := bytes.Repeat([]byte("page"), 4096)
	ctx := context.Background()
	cfg := serveBackup(t, fakeBackuper{data: data}, "s3cret")
	var got bytes.Buffer
	if err := httpd.FetchBackup(ctx, cfg, "s3cret", &got); err != nil || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("with the token: %v, %d bytes of %d", err, got.Len(), len(data))
	}
	for _, token := range []string{"", "wrong"} {
		got.Reset()
		err := httpd.FetchBackup(ctx, cfg, token, &got)
		if err == nil || !strings.Contains(err.Error(), "401") || got.Len() != 0 {
			t.Errorf("token %q: %v, %d bytes", token, err, got.Len())
		}
	}
	// A daemon that has no token serves nobody.
	if err := httpd.FetchBackup(ctx, serveBackup(t, fakeBackuper{data: data}, ""), "", &got); err == nil {
		t.Error("an empty token was accepted")
	}
	got.Reset()
	if err := httpd.FetchBackup(ctx, serveBackup(t, fakeBackuper{data: data, fail: true}, "s3cret"), "s3cret", &got); err == nil {
		t.Errorf("a copy cut short after %d bytes was taken as complete", got.Len())
	}
	if err := httpd.FetchBackup(ctx, filepath.Join(t.TempDir(), httpd.SocketName), "s3cret", &got); !errors.Is(err, httpd.ErrNoDaemon) {
		t.Errorf("no daemon: %v", err)
	}
}

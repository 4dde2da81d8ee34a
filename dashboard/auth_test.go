package dashboard_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/dashboard"
)

func TestLoadKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dashboard.key")
	if _, err := dashboard.ReadKey(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadKey of no file: %v", err)
	}
	key, err := dashboard.LoadKey(path)
	if err != nil || len(key) != 32 {
		t.Fatalf("LoadKey: %d bytes, %v", len(key), err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v %v; want 0600", info.Mode(), err)
	}
	again, err := dashboard.LoadKey(path)
	if err != nil || !bytes.Equal(again, key) {
		t.Errorf("a restart must keep the key (and the sign-ins): %v", err)
	}
	if dashboard.OperatorToken(key) == dashboard.OperatorToken(make([]byte, 32)) || strings.Contains(dashboard.OperatorToken(key), string(key)) {
		t.Error("the operator token does not depend on the key")
	}
	if err := os.WriteFile(path, []byte("not hex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dashboard.LoadKey(path); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("a damaged key: %v", err)
	}
}

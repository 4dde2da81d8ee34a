package httpd_test

import (
	"path/filepath"
	"strings"
	"testing"

	"tunebot/httpd"
	"tunebot/session"
	"tunebot/store"
)

// TestMetricsExportFreeSpace: /metrics says how much each data filesystem has free, as the
// store source measured it at the scrape.
func TestMetricsExportFreeSpace(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	src := httpd.NewStoreSource(db, db, 0)
	src.Disks = func() []session.DiskUsage {
		return []session.DiskUsage{{Path: "/data", Free: 5 << 20, Total: 6 << 20}, {Path: "/shared/sessions", Free: 1 << 30, Total: 4 << 30}}
	}
	_, body := get(t, httpd.Handler(src, "v1", nil), "/metrics")
	for _, want := range []string{
		"# TYPE tunebot_disk_free_bytes gauge",
		`tunebot_disk_free_bytes{path="/data"} 5.24288e+06`,
		`tunebot_disk_free_bytes{path="/shared/sessions"} 1.073741824e+09`,
		`tunebot_disk_size_bytes{path="/data"} 6.291456e+06`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in\n%s", want, body)
		}
	}
}

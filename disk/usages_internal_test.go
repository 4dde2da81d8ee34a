package disk

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tunebot/session"
)

// TestUsagesTellsFilesystemsByDevice: two filesystems alike in size and use are both
// measured, and one path measured twice (its free space changing between the reads) once.
func TestUsagesTellsFilesystemsByDevice(t *testing.T) {
	free := int64(100)
	usage := func(p string) (session.DiskUsage, error) {
		free-- // a busy disk: every read differs
		if p == "/gone" {
			return session.DiskUsage{}, errors.New("gone")
		}
		return session.DiskUsage{Path: p, Free: 5, Total: 10}, nil
	}
	devs := map[string]uint64{"/data": 1, "/data/sessions": 1, "/shared": 2, "/shared/sessions": 2, "/other": 3, "/gone": 4}
	device := func(p string) (uint64, error) {
		if d, ok := devs[p]; ok {
			return d, nil
		}
		return 0, errors.New("no such path")
	}
	for _, c := range []struct {
		paths []string
		want  []string
	}{
		{[]string{"/data", "/data/sessions"}, []string{"/data"}},
		{[]string{"/data", "/shared"}, []string{"/data", "/shared"}},
		{[]string{"/data", "/missing", "/gone", "/other", "/shared/sessions", "/shared"}, []string{"/data", "/other", "/shared/sessions"}},
	} {
		var got []string
		for _, u := range usages(c.paths, usage, device) {
			got = append(got, u.Path)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("usages(%v) (-want +got):\n%s", c.paths, diff)
		}
	}
}

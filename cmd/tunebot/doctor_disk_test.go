package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDoctorSaysFreeSpaceAndFloor: doctor prints the data disk's free space and the floor
// (service.min_free, or the default from the largest run directory), and warns below it.
func TestDoctorSaysFreeSpaceAndFloor(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	run := filepath.Join(data, "sessions", "0123456789abcdef", "trial-001-rung-0")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "model_50.pt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(run, "model_50.pt"), 600<<20); err != nil { // sparse: no room taken
		t.Fatal(err)
	}
	for _, c := range []struct {
		minFree, want string
	}{
		{"64MiB", `ok +free space +\S+ \S+ free of \S+ \S+ on ` + regexp.QuoteMeta(data) + `; the floor is 64.0 MiB \(service.min_free\)\n`},
		{"4000TiB", `warn +free space +.* the floor is 4096000.0 GiB \(service.min_free\): a session pauses before its next job until space is freed`},
		{"", `free space +.* the floor is 1.2 GiB \(default: twice the largest run directory of any session, 600.0 MiB, and at least 1.0 GiB\)`},
	} {
		body := "data_dir: " + data + "\nsession: {fallback: true}\n"
		if c.minFree != "" {
			body += "service: {min_free: " + c.minFree + "}\n"
		}
		cfg := writeConfig(t, dir, body)
		_, out, errOut := runBin(t, dir, "doctor", "--config", cfg)
		if !regexp.MustCompile(c.want).MatchString(out) {
			t.Errorf("min_free %q: doctor says\n%s%s", c.minFree, out, errOut)
		}
	}
}

// config check names a min_free that is not a size (config's TestMinFreeIsASize: one that is).
func TestConfigCheckNamesAMinFreeThatIsNoSize(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "data_dir: "+dir+"\nservice:\n  min_free: lots\n")
	code, out, errOut := runBin(t, dir, "config", "check", "--config", cfg)
	if code == 0 || !strings.Contains(out+errOut, `line 3: service.min_free: "lots" is not a size like 512MiB, 2GiB or 5GB`) {
		t.Fatalf("config check of min_free: lots: exit %d\n%s%s", code, out, errOut)
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = "v1.4.0"
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}, []string{"version"})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	first, rest, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(first, "tunebot v1.4.0 (commit ") || !strings.HasSuffix(first, ")") || rest != runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n" {
		t.Errorf("output %q, want the version, its commit and Go's", out.String())
	}
	if code := dispatch(context.Background(), &env{stdout: &out, stderr: &errb}, []string{"version", "extra"}); code != 2 {
		t.Errorf("extra argument: exit %d, want 2", code)
	}
}

func TestVersionFromBuildInfo(t *testing.T) {
	tests := []struct {
		name     string
		main     string
		settings map[string]string
		want     string
	}{
		{"revision", "(devel)", map[string]string{"vcs.revision": "0123456789abcdef0123", "vcs.modified": "false"}, "devel (commit 0123456789ab)"},
		{"dirty", "(devel)", map[string]string{"vcs.revision": "0123456789abcdef0123", "vcs.modified": "true"}, "devel (commit 0123456789ab-dirty)"},
		{"module version and commit", "v0.3.1", map[string]string{"vcs.revision": "0123456789abcdef0123"}, "v0.3.1 (commit 0123456789ab)"},
		{"module version", "v0.3.1", nil, "v0.3.1 (commit unknown)"},
		{"set at build time", "v0.3.1", map[string]string{"vcs.revision": "abc"}, "v9 (commit abc)"},
		{"nothing", "(devel)", nil, "devel (commit unknown)"},
		// make build stamps the commit (git rev-parse) where Go recorded none (-buildvcs=false,
		// a worktree Go cannot read): issue 43, item 7.13.
		{"stamped commit", "(devel)", nil, "devel (commit 3643b8457e41-dirty)"},
		{"stamped commit, Go's revision first", "(devel)", map[string]string{"vcs.revision": "0123456789abcdef0123"}, "devel (commit 0123456789ab)"},
	}
	for _, tc := range tests {
		bi := &debug.BuildInfo{Main: debug.Module{Version: tc.main}}
		for k, v := range tc.settings {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: v})
		}
		set, stamped := "", ""
		if strings.HasPrefix(tc.name, "set") {
			set = "v9"
		}
		if strings.HasPrefix(tc.name, "stamped") {
			stamped = "3643b8457e41479d58f96ff592b67e2a4070cfdc-dirty"
		}
		if got := versionFromBuildInfo(bi, set, stamped); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if version == "" && strings.TrimSpace(versionString()) == "" {
		t.Errorf("versionString is empty")
	}
}

// make build stamps the version and the commit, so a binary it builds names its commit even
// where Go records no VCS stamp (GOFLAGS=-buildvcs=false here; issue 43, item 7.13).
func TestMakeBuildStampsTheCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tunebot with make")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout, or no git: %v", err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	bin := filepath.Join(t.TempDir(), "tunebot")
	build := exec.Command("make", "-s", "-C", "../..", "build", "BIN="+bin)
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "(commit " + string(head[:12]); !strings.Contains(string(out), want) {
		t.Errorf("tunebot version of a make build says %q, want %q", out, want)
	}
}

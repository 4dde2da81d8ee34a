package main

import (
	"bytes"
	"context"
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
	}
	for _, tc := range tests {
		bi := &debug.BuildInfo{Main: debug.Module{Version: tc.main}}
		for k, v := range tc.settings {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: v})
		}
		set := ""
		if strings.HasPrefix(tc.name, "set") {
			set = "v9"
		}
		if got := versionFromBuildInfo(bi, set); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if version == "" && strings.TrimSpace(versionString()) == "" {
		t.Errorf("versionString is empty")
	}
}

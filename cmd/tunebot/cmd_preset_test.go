package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/preset"
	"tunebot/session"
)

func runPresetCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if k == "USER" {
			return "carol"
		}
		return ""
	}
	code = dispatch(context.Background(), &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: getenv},
		append([]string{"preset"}, args...))
	return code, out.String(), errb.String()
}

func TestPresetCommands(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "tunebot.yaml")
	if err := os.WriteFile(cfgPath, []byte("data_dir: ./data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	space := session.DefaultSpace()
	c := space.Defaults()
	c.Weights["foot_slip"] = -0.4
	file := filepath.Join(dir, "in.json")
	if err := os.WriteFile(file, preset.Export(session.Preset{Config: c}), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := space.Defaults()
	bad.Weights["foot_slip"] = 2
	delete(bad.Params, "pose.walking_threshold")
	badFile := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(badFile, preset.Export(session.Preset{Config: bad}), 0o600); err != nil {
		t.Fatal(err)
	}
	exported := filepath.Join(dir, "out.json")

	steps := []struct {
		args           []string
		stdin          string
		code           int
		stdout, stderr string
	}{
		{args: []string{"list", "--config", cfgPath}, stdout: "no presets yet"},
		{args: []string{"import", "slippy", file, "--config", cfgPath}, stdout: "preset slippy imported; start a session from it with tunebot tune --preset slippy"},
		{args: []string{"import", "--config", cfgPath, "slippy", file}, code: 1, stderr: "preset slippy already exists; presets are immutable, pick another name"},
		// bad.json also lacks pose.walking_threshold, which the default fills in.
		{args: []string{"import", "broken", badFile, "--config", cfgPath}, code: 1,
			stderr: badFile + ": weights.foot_slip: 2 is outside its bounds [-1, 0]\n"},
		{args: []string{"import", "from-stdin", "-", "--config", cfgPath}, stdin: string(preset.Export(session.Preset{Config: c})), stdout: "preset from-stdin imported"},
		{args: []string{"list", "--config", cfgPath}, stdout: "imported"},
		{args: []string{"show", "slippy", "--config", cfgPath}, stdout: "approved:  carol"},
		{args: []string{"show", "nope", "--config", cfgPath}, code: 1, stderr: "preset nope does not exist"},
		{args: []string{"export", "slippy", "-o", exported, "--config", cfgPath}, stderr: "preset slippy written to " + exported},
		{args: []string{"export", "slippy", "--config", cfgPath}, stdout: `"foot_slip": -0.4,`},
		{args: []string{"show"}, code: 2, stderr: "usage: tunebot preset list"},
		{args: []string{"frobnicate", "x"}, code: 2, stderr: "usage:"},
		{args: []string{"list", "-o", "x", "--config", cfgPath}, code: 2, stderr: "-o applies to export only"},
	}
	for _, s := range steps {
		code, out, errOut := runPresetCmd(t, s.stdin, s.args...)
		if code != s.code || !strings.Contains(out, s.stdout) || !strings.Contains(errOut, s.stderr) {
			t.Errorf("preset %v: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout %q, stderr %q", s.args, code, out, errOut, s.code, s.stdout, s.stderr)
		}
	}
	got, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(file)
	if !bytes.Equal(got, orig) {
		t.Errorf("export of the imported file differs:\n%s\nvs\n%s", got, orig)
	}
}

// A preset file may name only what it changes (README: "import validates it like any
// patch"): the rest are the defaults, its values are rounded as every patch's are, and one
// real problem is one line, not a cascade of "missing" lines and a threshold order.
func TestPresetImportOfAPatch(t *testing.T) {
	cfgPath := writeConfig(t, t.TempDir(), "data_dir: ./data\n")
	patch := writeFile(t, "patch.json", `{"weights": {"is_terminated": -399.99999944548205, "foot_slip": -0.4}}`)
	typo := writeFile(t, "typo.json", `{"weights": {"foot_slipp": -0.4}}`)
	if code, out, errOut := runPresetCmd(t, "", "import", "patched", patch, "--config", cfgPath); code != 0 || !strings.Contains(out, "preset patched imported") {
		t.Fatalf("import of a patch: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runPresetCmd(t, "", "export", "patched", "--config", cfgPath)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	want := session.DefaultSpace().Defaults()
	want.Weights["is_terminated"], want.Weights["foot_slip"] = -400, -0.4
	if out != string(preset.Export(session.Preset{Config: want})) {
		t.Errorf("the imported patch exports as\n%s\nwant the defaults with is_terminated -400 and foot_slip -0.4", out)
	}
	code, out, errOut = runPresetCmd(t, "", "import", "typo", typo, "--config", cfgPath)
	if code != 1 || out != "" {
		t.Fatalf("import of a misspelt patch: exit %d, stdout %q", code, out)
	}
	wantLines(t, errOut, typo+": ", "weights.foot_slipp: unknown term (did you mean foot_slip?)")
}

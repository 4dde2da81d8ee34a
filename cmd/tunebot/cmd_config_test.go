package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheckAcceptsGoodFiles(t *testing.T) {
	for _, path := range []string{
		filepath.Join("testdata", "config_good.yaml"),
		filepath.Join("testdata", "config_crossing_space.yaml"),
		filepath.Join("..", "..", "config.example.yaml"), // the file the README points people at
	} {
		t.Run(path, func(t *testing.T) {
			code, stdout, stderr := runTunebot(t, "", nil, "config", "check", "--config", path)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			if stdout != path+": ok\n" {
				t.Errorf("stdout %q", stdout)
			}
		})
	}
}

// The good fixture sets every field away from its default; loading it must keep each value.
func TestConfigGoodFixtureIsRead(t *testing.T) {
	cfg, err := loadConfig(filepath.Join("testdata", "config_good.yaml"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Session
	if s.Mode != "approval" || s.RunName != "go2-flat.v1" || s.TrialCount != 20 || s.NumEnvs != 16384 || s.EvalNumEnvs != 4096 ||
		s.EvalSteps != 100000 || s.Seed != 2147483647 || s.Patience != 20 || !s.Fallback || !s.Control ||
		s.Objective["tracking"] != 50 || s.Objective["energy"] != 0 || len(s.GPUs) != 2 || s.Promote[0] != 20 {
		t.Errorf("session = %+v", s)
	}
	if cfg.Log.Level != "debug" || cfg.Log.Format != "json" || cfg.Advisor.Hybrid != "stall" || cfg.Chat.Ntfy.Topic != "go2-tuning" || cfg.Chat.Expire.Hours() != 12 ||
		cfg.Trainer.EvalTimeout.Minutes() != 30 || cfg.Trainer.ResumeArgs[1] != "{checkpoint}" {
		t.Errorf("config = %+v", cfg)
	}
}

func TestConfigCheckNamesEveryBadField(t *testing.T) {
	tests := []struct {
		file string
		want []string // one "  - " line each
	}{
		{"config_bad_fields.yaml", []string{
			"data_dir: must be set",
			`log.level: "verbose"`,
			`log.format: "xml"`,
			"trainer.train: must be a non-empty argv list",
			"trainer.evaluate: must be a non-empty argv list",
			"trainer.job_timeout: must not be negative",
			"trainer.grace: must not be negative",
			`session.mode: "manual"`,
			`session.run_name: "bad name!"`,
			"session.gpus: 256 is outside 0–255",
			"session.trial_count: 21 is outside 4–20",
			"session.rungs: rung 1: 300 is less than rung 0's 900",
			"session.num_envs: 16385",
			"session.eval_num_envs: 4097",
			"session.eval_steps: 9",
			"session.early_stop_patience: 0",
			"session.seed: 2147483648",
			"session.objective_weights: objective tracking: weight -1",
			`advisor.base_url: "ftp://example.com"`,
			"advisor.model: must be set",
			"advisor.temperature: 0 must be in (0, 2]",
			`advisor.hybrid: "sometimes"`,
			"advisor.stall_after: must be at least 1",
		}},
		{"config_bad_space.yaml", []string{
			"reward_space.term pose: default 3 outside [0, 2.5]",
			`reward_space.term "pose": empty or repeated name`,
			"reward_space.term drift: bounds [-1, 1] cross zero",
			"reward_space.order: unknown param pose.running_threshold",
			"reward_space.max_changes must be at least 1",
			"reward_space.step rule 0×–2×",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			code, stdout, stderr := runTunebot(t, "", nil, "config", "check", "--config", filepath.Join("testdata", tt.file))
			if code != 1 || stdout != "" {
				t.Fatalf("exit %d, stdout %q", code, stdout)
			}
			head, rest, _ := strings.Cut(stderr, "\n")
			if want := "config " + filepath.Join("testdata", tt.file) + ":"; head != want {
				t.Errorf("first line %q, want %q", head, want)
			}
			wantLines(t, rest, "  - ", tt.want...)
		})
	}
}

func TestConfigCheckRefusals(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "tunebot.yaml")
	tests := []struct {
		name string
		args []string
		code int
		want []string // substrings of stderr
	}{
		{"unknown key with its line", []string{"--config", filepath.Join("testdata", "config_unknown_key.yaml")}, 1,
			[]string{"config testdata/config_unknown_key.yaml:\n  - line 10: session.trails is not a setting"}},
		// Unknown keys, misspellings among them, come with the bad values, all at once.
		{"unknown keys and bad values together", []string{"--config", writeFile(t, "both.yaml", "session:\n  modee: approval\n  trial_count: 40\nchat:\n  slack:\n    chanel: C1\n")}, 1,
			[]string{"  - line 2: session.modee is not a setting (did you mean session.mode?)\n",
				"  - line 6: chat.slack.chanel is not a setting (did you mean chat.slack.channel?)\n",
				"  - session.trial_count: 40 is outside 4–20\n"}},
		{"missing file", []string{"--config", missing}, 1, []string{"config file " + missing + " does not exist"}},
		{"not YAML", []string{"--config", writeFile(t, "bad.yaml", "session: [unclosed\n")}, 1, []string{"bad.yaml: "}},
		{"wrong type", []string{"--config", writeFile(t, "type.yaml", "\nsession:\n\n  trial_count: many\n")}, 1, []string{`line 4: session.trial_count: "many" is not a whole number`}},
		{"no --config", nil, 2, []string{"--config FILE is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTunebot(t, "", nil, append([]string{"config", "check"}, tt.args...)...)
			if code != tt.code || stdout != "" {
				t.Errorf("exit %d (want %d), stdout %q", code, tt.code, stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
		})
	}
	if code, _, stderr := runTunebot(t, "", nil, "config"); code != 2 || !strings.Contains(stderr, "usage: tunebot config check") {
		t.Errorf("config without check: exit %d, stderr %q", code, stderr)
	}
}

func TestConfigCheckExpandsEnvironment(t *testing.T) {
	path := filepath.Join("testdata", "config_env.yaml")
	tests := []struct {
		name string
		vars map[string]string
		code int
		want []string // stdout on success, stderr lines otherwise
	}{
		{"set", map[string]string{"RUN_NAME": "go2-run", "DATA_DIR": "/var/lib/tunebot", "TRIALS": "8"}, 0, []string{path + ": ok"}},
		// A plain ${N} that becomes a number is a number.
		{"a number for an int field", map[string]string{"RUN_NAME": "go2-run", "DATA_DIR": "/d", "TRIALS": "30"}, 1,
			[]string{"config " + path + ":", "  - session.trial_count: 30 is outside 4–20"}},
		// The value reaches the field: a bad one is refused by the field's own rule.
		{"set to a bad value", map[string]string{"RUN_NAME": "bad name", "DATA_DIR": "/var/lib/tunebot", "TRIALS": "8"}, 1,
			[]string{"config " + path + ":", `  - session.run_name: "bad name" must match`}},
		// A value is a value: YAML inside it is not parsed as more config.
		{"YAML in a value stays a value", map[string]string{"RUN_NAME": "x\nlog: {level: nope}", "DATA_DIR": "/d", "TRIALS": "8"}, 1,
			[]string{"config " + path + ":", `  - session.run_name: "x\nlog: {level: nope}" must match`}},
		{"one unset", map[string]string{"RUN_NAME": "go2-run", "TRIALS": "8"}, 1, []string{"config " + path + ":", "  - environment variable(s) DATA_DIR not set"}},
		{"both unset", nil, 1, []string{"config " + path + ":", "  - environment variable(s) DATA_DIR, RUN_NAME, TRIALS not set"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTunebot(t, "", tt.vars, "config", "check", "--config", path)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			got := stdout
			if tt.code != 0 {
				got = stderr
			}
			wantLines(t, got, "", tt.want...)
		})
	}
	// The expanded value is what the config holds.
	cfg, err := loadConfig(path, func(k string) string {
		return map[string]string{"RUN_NAME": "go2-run", "DATA_DIR": "/var/lib/tunebot", "TRIALS": "8"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Session.RunName != "go2-run" || cfg.DataDir != "/var/lib/tunebot" || cfg.Session.TrialCount != 8 {
		t.Errorf("run_name %q, data_dir %q, trial_count %d", cfg.Session.RunName, cfg.DataDir, cfg.Session.TrialCount)
	}
}

// YAML merge keys lend their mapping's keys: those are checked like any other.
func TestConfigCheckMergeKeys(t *testing.T) {
	good := writeFile(t, "merge.yaml", "session:\n  <<: {mode: approval}\n  trial_count: 8\n")
	if code, stdout, stderr := runTunebot(t, "", nil, "config", "check", "--config", good); code != 0 || !strings.Contains(stdout, ": ok") {
		t.Errorf("a merge key: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	bad := writeFile(t, "merge-bad.yaml", "session:\n  trial_count: 8\n  <<: {modee: approval}\n")
	code, _, stderr := runTunebot(t, "", nil, "config", "check", "--config", bad)
	if code != 1 || !strings.Contains(stderr, "line 3: session.modee is not a setting (did you mean session.mode?)") {
		t.Errorf("a merged unknown key: exit %d, stderr %q", code, stderr)
	}
}

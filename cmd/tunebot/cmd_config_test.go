package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/config"
)

func TestConfigCheckAcceptsGoodFiles(t *testing.T) {
	for _, path := range []string{
		filepath.Join("..", "..", "config", "testdata", "config_good.yaml"),
		filepath.Join("testdata", "config_crossing_space.yaml"),
		filepath.Join("..", "..", "config.example.yaml"), // the file the README points people at
	} {
		t.Run(path, func(t *testing.T) {
			code, stdout, stderr := runTunebot(t, "", nil, "config", "check", "--config", path)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			if first, _, _ := strings.Cut(stdout, "\n"); first != path+": ok" {
				t.Errorf("stdout %q", stdout)
			}
		})
	}
}

// TestExecutorConfig: a clear message for each bad executor field (config's
// TestExecutorSlurmBackend: its defaults, and what it hands the trainer).
func TestExecutorConfig(t *testing.T) {
	bad := writeFile(t, "executor.yaml", `
session: {gpus: [0, 1]}
executor:
  backend: kubernetes
  parallel: -1
  gpus_per_trial: -2
  slurm:
    partition: "gpu queue"
    account: "a;b"
    time_limit: 30s
    poll_interval: 10ms
    cpus_per_trial: -4
    mem: lots
    sbatch_args: ["-p", "--output=/tmp/x", "--mail-user a@b"]
`)
	code, _, stderr := runTunebot(t, "", nil, "config", "check", "--config", bad)
	if code != 1 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	wantLines(t, stderr[strings.Index(stderr, "\n")+1:], "  - ",
		`executor.backend: "kubernetes" is not local, slurm or ray`,
		"executor.parallel: -1 must not be negative (0 means the default: local, len(session.gpus)/gpus_per_trial; slurm, 1; ray, the cluster's GPUs/gpus_per_trial)",
		"executor.gpus_per_trial: -2 must not be negative",
		"executor.slurm.time_limit: 30s is below Slurm's smallest time limit, one minute",
		"executor.slurm.poll_interval: 10ms is outside 100ms–10m",
		"executor.slurm.cpus_per_trial: -4 must not be negative",
		`executor.slurm.mem: "lots" is not a size like 32G, 16000M or 64000 (megabytes)`,
		`executor.slurm.partition: "gpu queue" may hold letters, digits and _.,:- only`,
		`executor.slurm.account: "a;b" may hold letters, digits and _.,:- only`,
		`executor.slurm.sbatch_args[0]: "-p" is not an option: want one word like --constraint=a100`,
		"executor.slurm.sbatch_args[1]: --output is set by tunebot for every job and cannot be changed",
		`executor.slurm.sbatch_args[2]: "--mail-user a@b" holds whitespace: give each option as its own word, --name=value`,
	)

	for _, tc := range []struct{ yaml, want string }{
		{"session: {gpus: [0, 1]}\nexecutor: {gpus_per_trial: 3}\n", "line 2: executor.gpus_per_trial: 3 is more than session.gpus holds (2: [0 1])"},
		{"session: {gpus: [0, 1]}\nexecutor: {parallel: 3}\n", "line 2: executor.parallel: 3 trials of 1 GPU(s) need 3 GPUs, but session.gpus holds 2 ([0 1]); GPUs are never shared: lower parallel or add GPUs"},
		{"executor: {gpus_per_trial: 0}\n", "line 1: executor.gpus_per_trial: 0 with backend local: each local job holds at least one of session.gpus"},
	} {
		code, _, stderr := runTunebot(t, "", nil, "config", "check", "--config", writeFile(t, "x.yaml", tc.yaml))
		if code != 1 || !strings.Contains(stderr, "  - "+tc.want+"\n") {
			t.Errorf("%q: exit %d, stderr %q, want %q", tc.yaml, code, stderr, tc.want)
		}
	}
	// Slurm assigns GPUs itself: neither limit of session.gpus applies, and 0 GPUs is a CPU job.
	ok := writeFile(t, "ok.yaml", "data_dir: "+filepath.Join(t.TempDir(), "d")+"\nsession: {gpus: [0]}\nexecutor: {backend: slurm, parallel: 8, gpus_per_trial: 0}\n")
	if code, _, stderr := runTunebot(t, "", nil, "config", "check", "--config", ok); code != 0 {
		t.Errorf("slurm with 8 parallel CPU jobs: exit %d, %s", code, stderr)
	}
	// A slurm section that is not used is said.
	unused := writeFile(t, "unused.yaml", "data_dir: "+filepath.Join(t.TempDir(), "d")+"\nexecutor:\n  slurm: {partition: gpu}\n")
	code, _, stderr = runTunebot(t, "", nil, "config", "check", "--config", unused)
	if code != 0 || !strings.Contains(stderr, "warning: executor.slurm is configured (line 3) but executor.backend is local") {
		t.Errorf("unused slurm section: exit %d, stderr %q", code, stderr)
	}
}

// TestExecutorRayConfig: each bad executor.ray field is named; the head's token is a
// secret (refused in the file, refused when it would cross the network in clear, refused
// too short to mask); a good config says what the nodes must share; an unused ray section
// is said.
func TestExecutorRayConfig(t *testing.T) {
	data := "data_dir: " + filepath.Join(t.TempDir(), "d") + "\n"
	bad := writeFile(t, "ray.yaml", data+`executor:
  backend: ray
  ray:
    address: "head:8265"
    cpus_per_trial: -1
    memory: lots
    poll_interval: 20ms
    head_timeout: 2h
`)
	code, _, stderr := runTunebot(t, "", nil, "config", "check", "--config", bad)
	if code != 1 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	wantLines(t, stderr[strings.Index(stderr, "\n")+1:], "  - ",
		`executor.ray.address: "head:8265": want an http:// or https:// URL of the head's job server, e.g. http://ray-head:8265`,
		"executor.ray.cpus_per_trial: -1 must not be negative",
		`executor.ray.memory: "lots" is not a size like 512MiB, 2GiB or 5GB`,
		"executor.ray.poll_interval: 20ms is outside 100ms–10m",
		"executor.ray.head_timeout: 2h0m0s is outside 1s–1h",
	)
	token := map[string]string{"RAY_AUTH_TOKEN": "ray-token-0123456789abcdef"}
	for _, tc := range []struct {
		name, yaml string
		vars       map[string]string
		want       string
	}{
		{"no address", "executor: {backend: ray}\n", nil, "executor.ray.address: empty: set it to the head's job server"},
		{"the token in clear", "executor: {backend: ray, ray: {address: \"http://10.0.0.5:8265\"}}\n", token,
			`executor.ray.address: "http://10.0.0.5:8265" is plain http to 10.0.0.5, which is not this machine: its token would cross the network in clear; use https, or set executor.ray.allow_insecure_http: true if that network is trusted (RAY_AUTH_TOKEN is set)`},
		{"the token in the file", "executor: {backend: ray, ray: {address: \"https://h/${RAY_AUTH_TOKEN}\"}}\n", token, "RAY_AUTH_TOKEN"},
		{"a token too short to mask", "executor: {backend: ray, ray: {address: \"http://127.0.0.1:8265\"}}\n", map[string]string{"RAY_AUTH_TOKEN": "abc"}, "RAY_AUTH_TOKEN"},
	} {
		code, _, stderr := runTunebot(t, "", tc.vars, "config", "check", "--config", writeFile(t, "x.yaml", data+tc.yaml))
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", tc.name, code, stderr, tc.want)
		}
	}
	ok := writeFile(t, "ok.yaml", data+"executor:\n  backend: ray\n  gpus_per_trial: 2\n  ray:\n    address: http://10.0.0.5:8265\n    allow_insecure_http: true\n    cpus_per_trial: 8\n    memory: 32GiB\n")
	code, stdout, stderr := runTunebot(t, "", token, "config", "check", "--config", ok)
	if code != 0 || !strings.Contains(stdout, "note: jobs run on the nodes of the Ray cluster at http://10.0.0.5:8265: data_dir (") ||
		!strings.Contains(stdout, "must be on storage they mount at the same path") {
		t.Errorf("a good ray config: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	cfg, err := config.Load(ok, func(k string) string { return token[k] })
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Executor.RayBackend(token["RAY_AUTH_TOKEN"])
	if b == nil || b.Client.Address != "http://10.0.0.5:8265" || b.Client.Token != token["RAY_AUTH_TOKEN"] || b.GPUs != 2 || b.CPUs != 8 || b.Memory != 32<<30 {
		t.Errorf("the ray backend of a good config: %+v", b)
	}
	unused := writeFile(t, "unused.yaml", data+"executor:\n  ray: {address: \"http://127.0.0.1:8265\"}\n")
	if code, _, stderr := runTunebot(t, "", nil, "config", "check", "--config", unused); code != 0 || !strings.Contains(stderr, "warning: executor.ray is configured (line 3) but executor.backend is local") {
		t.Errorf("unused ray section: exit %d, stderr %q", code, stderr)
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
			"trainer.events.max_tags: -1 must not be negative",
			"trainer.events.max_points: 5 is not from 16 to 4096",
			"trainer.events.max_bytes: -2 must not be negative",
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
			`reward_space.term drift: acts on "speed", which is not a metric`,
			`reward_space.param pose.walking_threshold: lowers "sideways" must be up, down or empty`,
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
				"  - line 3: session.trial_count: 40 is outside 4–20\n"}},
		{"missing file", []string{"--config", missing}, 1, []string{"config file " + missing + " does not exist"}},
		{"not YAML", []string{"--config", writeFile(t, "bad.yaml", "session: [unclosed\n")}, 1, []string{"bad.yaml: "}},
		{"wrong type", []string{"--config", writeFile(t, "type.yaml", "\nsession:\n\n  trial_count: many\n")}, 1, []string{`line 4: session.trial_count: "many" is not a whole number`}},
		{"no --config", nil, 2, []string{"--config FILE is required"}},
		// The final evaluation re-running the seeds that chose the finalist measures their luck
		// again (issue 43, item 1).
		{"final seeds that chose", []string{"--config", writeFile(t, "final.yaml", "session:\n  eval_seeds: [0, 1, 2]\n  final_eval_seeds: [0, 1, 5]\n")}, 1,
			[]string{"line 3: session.final_eval_seeds: 0 and 1 also in eval_seeds: the final evaluation must run on seeds that chose nothing"}},
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
			[]string{"config " + path + ":", "  - line 5: session.trial_count: ${TRIALS} is outside 4–20"}},
		// The value reaches the field: a bad one is refused by the field's own rule, and the
		// problem shows the value as written, never as expanded (it may be a secret).
		{"set to a bad value", map[string]string{"RUN_NAME": "bad name", "DATA_DIR": "/var/lib/tunebot", "TRIALS": "8"}, 1,
			[]string{"config " + path + ":", `  - line 4: session.run_name: "${RUN_NAME}" must match`}},
		// A value is a value: YAML inside it is not parsed as more config.
		{"YAML in a value stays a value", map[string]string{"RUN_NAME": "x\nlog: {level: nope}", "DATA_DIR": "/d", "TRIALS": "8"}, 1,
			[]string{"config " + path + ":", `  - line 4: session.run_name: "${RUN_NAME}" must match`}},
		// An unset variable is named at its line and key (issue 28).
		{"one unset", map[string]string{"RUN_NAME": "go2-run", "TRIALS": "8"}, 1, []string{"config " + path + ":", "  - line 2: data_dir: environment variable DATA_DIR is not set"}},
		{"all unset", nil, 1, []string{"config " + path + ":", "  - line 2: data_dir: environment variable DATA_DIR is not set",
			"  - line 4: session.run_name: environment variable RUN_NAME is not set", "  - line 5: session.trial_count: environment variable TRIALS is not set"}},
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
	cfg, err := config.Load(path, func(k string) string {
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
	// In a map too, and the merged values' types are checked like any other.
	weights := writeFile(t, "merge-map.yaml", "x: &w {tracking: 10}\nsession:\n  objective_weights: {<<: *w, energy: 1}\n")
	code, _, stderr := runTunebot(t, "", nil, "config", "check", "--config", weights)
	if code != 1 || strings.Contains(stderr, "objective_weights") || !strings.Contains(stderr, "line 1: x is not a setting") {
		t.Errorf("a merge key in a map: exit %d, stderr %q", code, stderr)
	}
	wrong := writeFile(t, "merge-map-bad.yaml", "session:\n  objective_weights: {<<: {tracking: lots}, energy: 1}\n")
	code, _, stderr = runTunebot(t, "", nil, "config", "check", "--config", wrong)
	if code != 1 || !strings.Contains(stderr, `line 2: session.objective_weights.tracking: "lots" is not a number`) {
		t.Errorf("a merged value of the wrong type: exit %d, stderr %q", code, stderr)
	}
	bad := writeFile(t, "merge-bad.yaml", "session:\n  trial_count: 8\n  <<: {modee: approval}\n")
	code, _, stderr = runTunebot(t, "", nil, "config", "check", "--config", bad)
	if code != 1 || !strings.Contains(stderr, "line 3: session.modee is not a setting (did you mean session.mode?)") {
		t.Errorf("a merged unknown key: exit %d, stderr %q", code, stderr)
	}
}

// One run names every problem: values of the wrong type with their key paths, next to
// unknown keys, bad templates and the values validate refuses; a value of
// the wrong type is not named a second time by the rule of its key.
func TestConfigCheckFindsEverything(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		yaml string
		want []string // the "  - " lines, each exactly once
	}{
		{"type errors with the rest", nil, `
log: {level: verbose}
trainer:
  job_timeout: 12 hours
  grace: [1s]
session:
  trial_count: many
  gpus: [0, x]
  fallback: sometimes
  seed: 1.5
  objective_weights: {tracking: lots}
  modee: approval
advisor: {temperature: hot}
chat:
  expire: 1d
`, []string{
			`line 4: trainer.job_timeout: "12 hours" is not a duration (like 90s, 45m or 12h)`,
			`line 5: trainer.grace: a list is not a duration`,
			`line 7: session.trial_count: "many" is not a whole number`,
			`line 8: session.gpus[1]: "x" is not a whole number`,
			`line 9: session.fallback: "sometimes" is not true or false`,
			`line 10: session.seed: "1.5" is not a whole number`,
			`line 11: session.objective_weights.tracking: "lots" is not a number`,
			`line 12: session.modee is not a setting (did you mean session.mode?)`,
			`line 13: advisor.temperature: "hot" is not a number`,
			`line 15: chat.expire: "1d" is not a duration`,
			`log.level: "verbose" is not debug, info, warn or error`,
		}},
		{"a section given a value", nil, "session: 12\nchat:\n  slack: [C1]\n", []string{
			`line 1: session: "12" is not a section of key: value lines`,
			`line 3: chat.slack: a list is not a section of key: value lines`,
		}},
		{"a variable that expands to the wrong type", map[string]string{"T": "12 hours"}, "trainer:\n  job_timeout: ${T}\n", []string{
			`line 2: trainer.job_timeout: "${T}" is not a duration`,
		}},
		// An unset variable is one problem among the others, not a stop, and the value it
		// left empty is not named again.
		{"unset variables with the rest", nil, "data_dir: ${DIR}\nsession:\n  trial_count: 40\n  mode: ${MODE}\n  seed: x\n", []string{
			"line 1: data_dir: environment variable DIR is not set",
			"line 3: session.trial_count: 40 is outside 4–20",
			"line 4: session.mode: environment variable MODE is not set",
			`line 5: session.seed: "x" is not a whole number`,
		}},
		{"templates", nil, `
trainer:
  train: ["{tunebot}", "sim-train", "--config={reward_confg}", "--seed", "{seed}", "{checkpoint}"]
  resume_args: ["--resume", "{chekpoint}"]
  evaluate: ["{tunebot}", "sim-eval", "--out", "{eval_output}", "{iterations}"]
`, []string{
			`trainer.train[2]: unknown placeholder {reward_confg} in "--config={reward_confg}" (did you mean {reward_config}?)`,
			`trainer.train[5]: placeholder {checkpoint} in "{checkpoint}" has no value in a train job`,
			`trainer.resume_args[1]: unknown placeholder {chekpoint} in "{chekpoint}" (did you mean {checkpoint}?)`,
			`trainer.evaluate[4]: placeholder {iterations} in "{iterations}" has no value in an evaluate job`,
			"trainer.train: no argument holds {reward_config}, so the trainer would never read the weights being tuned",
			"trainer.train: no argument holds {iterations} (or {target_iterations}), so every rung would train as long as the first",
		}},
		{"a template with {target_iterations} trains each rung to its length", nil,
			"trainer:\n  train: [x, \"{reward_config}\", \"--to={target_iterations}\"]\n  evaluate: [\"{python}\", e.py]\n  python: \"\"\n",
			[]string{"trainer.python: empty, but a template uses {python}"}},
		{"an apply section without repo", nil, "apply:\n  test: [make, test]\n", []string{
			`apply.repo "" must be an absolute path`,
			"apply.edits: at least one edit is needed",
		}},
		{"tabs", nil, "session:\n\ttrial_count: 8\nlog:\n  level: info\n \tformat: json\n", []string{
			"line 2: a tab indents this line; YAML indents with spaces only",
			"line 5: a tab indents this line; YAML indents with spaces only",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "tunebot.yaml", tt.yaml)
			code, stdout, stderr := runTunebot(t, "", tt.vars, "config", "check", "--config", path)
			if code != 1 || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
			}
			head, rest, _ := strings.Cut(stderr, "\n")
			if head != "config "+path+":" {
				t.Errorf("first line %q", head)
			}
			wantLines(t, rest, "  - ", tt.want...)
		})
	}
}

// urlsConfig is a config whose every token-carrying URL is base plus a path, each section
// with allow_insecure_http set to allow.
func urlsConfig(base string, allow bool) string {
	return fmt.Sprintf(`
advisor: {base_url: "%[1]s", allow_insecure_http: %[2]t}
chat:
  slack: {enabled: true, channel: C0123, allow_users: [U0123], api_url: "%[1]s/api/", allow_insecure_http: %[2]t}
  discord: {enabled: true, application_id: "123456789012345678", guild_id: "123456789012345678", channel_id: "123456789012345678",
            allow_users: ["123456789012345678"], api_url: "%[1]s/api/v9", allow_insecure_http: %[2]t}
  ntfy: {server: "%[1]s", topic: t, allow_insecure_http: %[2]t}
  webhook: {enabled: true, allow_insecure_http: %[2]t}
`, base, allow)
}

// A URL that carries a token is refused when it is plain http to another host, unless its
// section allows it; https and plain http to this machine (the tests' fakes, a local
// proxy) are fine. The webhook URL's secret path is never shown.
func TestConfigCheckClearTextURLs(t *testing.T) {
	tests := []struct {
		name  string
		base  string
		allow bool
		want  []string // the "  - " lines; none means the file is ok
	}{
		{"http to another host", "http://tunebot-proxy.example.org", false, []string{
			`advisor.base_url: "http://tunebot-proxy.example.org" is plain http to tunebot-proxy.example.org, which is not this machine: its token would cross the network in clear; use https, or set advisor.allow_insecure_http: true`,
			`chat.slack.api_url: "http://tunebot-proxy.example.org/api/" is plain http to tunebot-proxy.example.org, which is not this machine`,
			`chat.discord.api_url: "http://tunebot-proxy.example.org/api/v9" is plain http to tunebot-proxy.example.org`,
			`chat.ntfy.server: "http://tunebot-proxy.example.org" is plain http to tunebot-proxy.example.org, which is not this machine: its token would cross the network in clear; use https, or set chat.ntfy.allow_insecure_http: true`,
			"chat.webhook: TUNEBOT_WEBHOOK_URL is plain http to tunebot-proxy.example.org, which is not this machine: the secret in its path would cross the network in clear; use https, or set chat.webhook.allow_insecure_http: true",
		}},
		{"an address", "http://10.1.2.3:8080", false, []string{
			`advisor.base_url: "http://10.1.2.3:8080" is plain http to 10.1.2.3`, `chat.slack.api_url:`, `chat.discord.api_url:`, `chat.ntfy.server:`, `chat.webhook:`}},
		{"allowed in each section", "http://tunebot-proxy.example.org", true, nil},
		{"https", "https://tunebot-proxy.example.org", false, nil},
		{"localhost", "http://localhost:3001", false, nil},
		{"127.0.0.0/8", "http://127.8.9.10", false, nil},
		{"::1", "http://[::1]:2586", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "tunebot.yaml", urlsConfig(tt.base, tt.allow))
			vars := map[string]string{"TUNEBOT_WEBHOOK_URL": tt.base + "/T0/secret-path"}
			code, stdout, stderr := runTunebot(t, "", vars, "config", "check", "--config", path)
			if strings.Contains(stderr, "secret-path") {
				t.Errorf("the webhook URL's secret reached the output:\n%s", stderr)
			}
			if tt.want == nil {
				if code != 0 || stdout != path+": ok\n" || stderr != "" {
					t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
				}
				return
			}
			head, rest, _ := strings.Cut(stderr, "\n")
			if code != 1 || head != "config "+path+":" {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			wantLines(t, rest, "  - ", tt.want...)
		})
	}
}

// A chat section filled in but not enabled is said at check time (exit 0: it is not an
// error) and logged as a warning when the daemon starts.
func TestConfigWarnsOfUnenabledChat(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // warning lines
	}{
		{"slack without enabled", "chat:\n  slack:\n    channel: C0123\n", []string{"warning: chat.slack is configured but not enabled (line 5): set chat.slack.enabled: true"}},
		{"discord enabled: false with IDs", "chat:\n  discord:\n    enabled: false\n    guild_id: \"123456789012345678\"\n",
			[]string{"warning: chat.discord is configured but not enabled (line 5)"}},
		{"both", "chat:\n  slack: {mode: socket}\n  discord: {enabled: no, channel_id: \"1\"}\n", []string{
			"warning: chat.slack is configured but not enabled", "warning: chat.discord is configured but not enabled"}},
		{"enabled: false alone is a choice", "chat:\n  slack: {enabled: false}\n  discord:\n    enabled: false\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "tunebot.yaml", "data_dir: "+filepath.Join(t.TempDir(), "data")+"\nservice: {addr: \"off\"}\n"+tt.yaml)
			code, stdout, stderr := runTunebot(t, "", nil, "config", "check", "--config", path)
			if code != 0 || stdout != path+": ok\n" {
				t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			wantLines(t, stderr, "warning: ", tt.want...)

			// run logs the same at start; a context that has ended makes it stop at once.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var out, errb bytes.Buffer
			dispatch(ctx, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}, []string{"run", "--config", path})
			var warns []string
			for _, l := range strings.Split(errb.String(), "\n") {
				if strings.Contains(l, "configured but not enabled") {
					if !strings.Contains(l, "] warning: ") {
						t.Errorf("not a warning: %s", l)
					}
					warns = append(warns, l)
				}
			}
			if len(warns) != len(tt.want) {
				t.Errorf("run logged %d warnings, want %d:\n%s", len(warns), len(tt.want), errb.String())
			}
		})
	}
}

// apply from the command line without an apply: section says so, before anything else.
func TestApplyNotConfigured(t *testing.T) {
	path := writeFile(t, "tunebot.yaml", "data_dir: "+filepath.Join(t.TempDir(), "data")+"\n")
	for _, args := range [][]string{{"diff", "auto-tune-0123abcd"}, {"auto-tune-0123abcd", "--yes"}, {"rollback", "--yes"}} {
		code, stdout, stderr := runTunebot(t, "", nil, append(append([]string{"apply"}, args...), "--config", path)...)
		if code != 1 || stdout != "" || stderr != "apply is not configured: "+path+" has no apply: section; set apply.repo (and its edits and test command), see config.example.yaml\n" {
			t.Errorf("apply %v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

// An empty file, or one of comments only, is all defaults: the example config says tune
// works with no file at all.
func TestConfigEmptyFileIsTheDefaults(t *testing.T) {
	for name, body := range map[string]string{"empty": "", "comments only": "# tunebot.yaml\n# nothing set yet\n", "blank lines": "\n\n"} {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, "tunebot.yaml", body)
			if code, stdout, stderr := runTunebot(t, "", nil, "config", "check", "--config", path); code != 0 || stdout != path+": ok\n" {
				t.Fatalf("config check: exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			// A command that reads it (and opens a store under the data_dir it defaults to,
			// relative to the file) works as with no file.
			if code, stdout, stderr := runTunebot(t, "", nil, "preset", "list", "--config", path); code != 0 || !strings.Contains(stdout, "no presets yet") {
				t.Errorf("preset list: exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
		})
	}
}

// A config check names every problem, in the order of the file: a tab that indents a line
// hides nothing else and is named at its own line only; a file that is not text is said to
// be one in a line.
func TestConfigCheckInFileOrder(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // the "  - " lines, in this order
	}{
		{"a tab and every other problem", "session:\n\ttrial_count: 40\nbogus: 1\nlog:\n  level: loud\n", []string{
			"line 2: a tab indents this line; YAML indents with spaces only",
			"line 2: session.trial_count: 40 is outside 4–20",
			"line 3: bogus is not a setting",
			`line 5: log.level: "loud" is not debug, info, warn or error`,
		}},
		// YAML's own message put this tab on line 3.
		{"a tab below a key", "data_dir: x\nsession:\n  trial_count: 5\n\tgpus: [0]\n", []string{
			"line 4: a tab indents this line; YAML indents with spaces only",
		}},
		{"validate's problems among the others", "log:\n  level: loud\nsession:\n  modee: approval\n  trial_count: 2\nbogus: 1\n", []string{
			`line 2: log.level: "loud" is not debug, info, warn or error`,
			"line 4: session.modee is not a setting (did you mean session.mode?)",
			"line 5: session.trial_count: 2 is outside 4–20",
			"line 6: bogus is not a setting",
		}},
		{"an unset variable at its line", "session:\n  gpus: [0, 1]\ndata_dir: ${NOPE}\nexecutor:\n  parallel: 3\n", []string{
			"line 3: data_dir: environment variable NOPE is not set",
			"line 5: executor.parallel: 3 trials of 1 GPU(s) need 3 GPUs",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "tunebot.yaml", tt.yaml)
			code, _, stderr := runTunebot(t, "", nil, "config", "check", "--config", path)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if code != 1 || len(lines) != len(tt.want)+1 {
				t.Fatalf("exit %d, stderr:\n%s\nwant %d problems", code, stderr, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i+1], "  - "+w) {
					t.Errorf("problem %d is %q, want %q", i+1, lines[i+1], w)
				}
			}
		})
	}
	binary := filepath.Join(t.TempDir(), "tunebot")
	if err := os.WriteFile(binary, append([]byte("\x7fELF\x02\x01\x01\x00\x00\n\tx:"), bytes.Repeat([]byte("\n\t\x00\x01"), 500)...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runTunebot(t, "", nil, "config", "check", "--config", binary)
	if code != 1 || stderr != "config "+binary+" is not a YAML file: it holds binary data\n" {
		t.Errorf("a binary file: exit %d, stderr (%d lines) %q", code, strings.Count(stderr, "\n"), stderr)
	}
}

// config check names a time limit that is neither sbatch's nor a Go duration, at its line
// (config's TestSlurmTimeLimitForms: the forms it takes).
func TestConfigCheckRefusesABadSlurmTimeLimit(t *testing.T) {
	for _, value := range []string{"soon", `"1:2:3:4"`, `"-5"`, `"1-"`, `"x-1"`, `"1-2:3:4:5"`, "1.5"} {
		path := writeFile(t, "slurm.yaml", "executor:\n  backend: slurm\n  slurm:\n    time_limit: "+value+"\n")
		code, _, stderr := runTunebot(t, "", nil, "config", "check", "--config", path)
		if code != 1 || !strings.Contains(stderr, "line 4: executor.slurm.time_limit: ") || !strings.Contains(stderr, "is not a time limit as sbatch --time takes it") || strings.Count(stderr, "\n") != 2 {
			t.Errorf("time_limit: %s: exit %d, stderr %q", value, code, stderr)
		}
	}
}

package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tunebot/config"
	"tunebot/trainer"
)

// The good fixture sets every field away from its default; loading it must keep each value.
func TestConfigGoodFixtureIsRead(t *testing.T) {
	cfg, err := config.Load(filepath.Join("testdata", "config_good.yaml"), func(string) string { return "" })
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
		cfg.Trainer.EvalTimeout.Minutes() != 30 || cfg.Trainer.ResumeArgs[1] != "{checkpoint}" ||
		cfg.Trainer.Events != (trainer.EventLimits{MaxTags: 200, MaxPoints: 1000, MaxBytes: 256 << 20}) {
		t.Errorf("config = %+v", cfg)
	}
}

// TestExecutorSlurmBackend: the executor section's defaults, and what it hands the trainer
// (cmd/tunebot's TestExecutorConfig: a clear message for each bad field).
func TestExecutorSlurmBackend(t *testing.T) {
	cfg, err := config.Load(filepath.Join("testdata", "config_good.yaml"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	x := cfg.Executor
	sl := x.SlurmBackend()
	if x.Backend != "slurm" || x.Parallel != 6 || x.GPUsPerTrial != 2 || sl == nil || sl.Partition != "gpu" || sl.Account != "robotics-lab" ||
		sl.QOS != "normal" || sl.TimeLimit != 8*time.Hour || sl.CPUs != 16 || sl.Mem != "64G" || sl.GPUs != 2 ||
		!slices.Equal(sl.Extra, []string{"--constraint=a100", "--exclusive"}) {
		t.Errorf("executor %+v, slurm backend %+v", x, sl)
	}

	def := config.Default()
	if def.Executor.Backend != "local" || def.Executor.GPUsPerTrial != 1 || def.Executor.SlurmBackend() != nil {
		t.Errorf("default executor %+v", def.Executor)
	}
}

// executor.slurm.time_limit takes what sbatch --time takes, as well as Go durations.
func TestSlurmTimeLimitForms(t *testing.T) {
	for value, want := range map[string]time.Duration{
		"12h": 12 * time.Hour, "90m": 90 * time.Minute, "90": 90 * time.Minute, `"30:00"`: 30 * time.Minute,
		`"00:30:00"`: 30 * time.Minute, `"1:00:00"`: time.Hour, `"1-0"`: 24 * time.Hour, `"1-12"`: 36 * time.Hour,
		`"1-12:30"`: 36*time.Hour + 30*time.Minute, `"1-00:00:00"`: 24 * time.Hour, `"2-03:04:05"`: 51*time.Hour + 4*time.Minute + 5*time.Second,
	} {
		path := writeFile(t, filepath.Join(t.TempDir(), "slurm.yaml"), "data_dir: "+t.TempDir()+"\nexecutor:\n  backend: slurm\n  slurm:\n    time_limit: "+value+"\n")
		cfg, err := config.Load(path, func(string) string { return "" })
		if err != nil {
			t.Errorf("time_limit: %s: %v", value, err)
			continue
		}
		if got := cfg.Executor.SlurmBackend().TimeLimit; got != want {
			t.Errorf("time_limit: %s is %s, want %s", value, got, want)
		}
	}
}

// service.min_free is a size as disk.ParseSize reads it.
func TestMinFreeIsASize(t *testing.T) {
	dir := t.TempDir()
	c, err := config.Load(writeFile(t, filepath.Join(dir, "tunebot.yaml"), "data_dir: "+dir+"\nservice:\n  min_free: 20GiB\n"), os.Getenv)
	if err != nil || c.Service.MinFree != 20<<30 {
		t.Fatalf("min_free: 20GiB: %d %v", c.Service.MinFree, err)
	}
}

// trainer.sim_surface_seed and its family reach the sim templates; a bad one is named.
func TestSimSurfaceSeedConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := config.Load(write("trainer:\n  sim_surface_seed: 1003\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	train, evaluate := cfg.Trainer.Templates()
	for _, argv := range [][]string{train, evaluate} {
		if got := strings.Join(argv[len(argv)-2:], " "); got != "--surface-seed 1003" {
			t.Errorf("template ends %q, want the surface seed", got)
		}
	}
	if train, _ := config.Default().Trainer.Templates(); strings.Contains(strings.Join(train, " "), "surface") {
		t.Errorf("default template %v passes a surface seed", train)
	}
	for body, want := range map[string]string{
		"trainer:\n  sim_surface_seed: -2\n":                                      "trainer.sim_surface_seed: -2 must not be negative",
		"trainer:\n  sim_surface_seed: 4\n  train: [\"python3\", \"train.py\"]\n": "trainer.sim_surface_seed: only the built-in sim trainer",
	} {
		if _, err := config.Load(write(body), func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

// TestSharedDataDirSettingIsNamedRemoved: a config that still says service.shared_data_dir
// (a data_dir others may write, which let them plant links where tunebot writes: issue 44)
// is refused naming the key, that it was removed and why, not as a misspelling.
func TestSharedDataDirSettingIsNamedRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tunebot.yaml")
	if err := os.WriteFile(path, []byte("service:\n  addr: \"off\"\n  shared_data_dir: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(path, func(string) string { return "" })
	if err == nil {
		t.Fatal("a config with service.shared_data_dir was accepted")
	}
	for _, want := range []string{"line 3: service.shared_data_dir was removed", "chmod 700", "preset export"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a removed setting is named as a misspelling: %v", err)
	}
}

// TestSecretAfterALongListRefused: the walk that lists every value for the secret scan
// stopped after 65536 values, aliases or not, so a config whose list was longer than that
// (read_users of 70000 members) loaded with ${DEEPSEEK_API_KEY} in advisor.model below it.
// Only values reached through an alias spend the budget; every value written is scanned.
func TestSecretAfterALongListRefused(t *testing.T) {
	getenv := func(k string) string {
		if k == "DEEPSEEK_API_KEY" {
			return "sk-long-list-0123456789"
		}
		return ""
	}
	yaml := "data_dir: data\nchat:\n  slack:\n    read_users: [" + strings.Repeat("U0123ABCDE, ", 70000) +
		"U0123ABCDE]\nadvisor:\n  model: ${DEEPSEEK_API_KEY}\n"
	_, err := config.Load(writeFile(t, filepath.Join(t.TempDir(), "tunebot.yaml"), yaml), getenv)
	if err == nil || !strings.Contains(err.Error(), "line 6: advisor.model: ${DEEPSEEK_API_KEY} would put the secret DEEPSEEK_API_KEY") {
		t.Errorf("Load = %v, want the secret in advisor.model named", err)
	}
}

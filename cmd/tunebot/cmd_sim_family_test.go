package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/config"
	"tunebot/session"
)

// Every surface family is accepted where one is named: the config key (passed on to both
// of the sim trainer's templates) and sim-train's --surface-family; an unknown one is
// refused with the names there are.
func TestSimSurfaceFamilies(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, fam := range []string{"generic", "domain", "coupled", "separable"} {
		cfg, err := config.Load(write("trainer:\n  sim_surface_seed: 7\n  sim_surface_family: "+fam+"\n"), func(string) string { return "" })
		if err != nil {
			t.Fatalf("family %s: %v", fam, err)
		}
		train, evaluate := cfg.Trainer.Templates()
		for _, argv := range [][]string{train, evaluate} {
			if got := strings.Join(argv[len(argv)-4:], " "); got != "--surface-seed 7 --surface-family "+fam {
				t.Errorf("family %s: template ends %q", fam, got)
			}
		}
	}
	_, err := config.Load(write("trainer:\n  sim_surface_seed: 7\n  sim_surface_family: nope\n"), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), `trainer.sim_surface_family: surface family "nope" is unknown (generic, domain, coupled, separable or levers)`) {
		t.Errorf("unknown family: %v", err)
	}
	run := filepath.Join(dir, "run")
	cfgPath := filepath.Join(dir, "reward_config.json")
	b, _ := json.Marshal(session.DefaultSpace().Defaults())
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	train := []string{"sim-train", "--task", "Unitree-Go2-Flat", "--run-dir", run, "--reward-config", cfgPath,
		"--iterations", "2", "--target-iterations", "2", "--num-envs", "8", "--step-delay", "0", "--surface-seed", "3"}
	for _, fam := range []string{"coupled", "separable"} {
		if code, _, stderr := runSimCmd(t, nil, append(train, "--surface-family", fam, "--run-dir", run+"-"+fam)...); code != 0 {
			t.Errorf("sim-train on the %s family: exit %d, %s", fam, code, stderr)
		}
	}
	if code, _, stderr := runSimCmd(t, nil, append(train, "--surface-family", "nope")...); code != 2 || !strings.Contains(stderr, "generic, domain, coupled, separable or levers") {
		t.Errorf("sim-train on an unknown family: exit %d, %q", code, stderr)
	}
}

package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/trainer/ray/raytest"
)

// rayHead is the test binary's real Ray head (raytest), stopped by TestMain.
var rayHead raytest.Head

func rayDoctorConfig(t *testing.T, dataDir, executor string) string {
	t.Helper()
	return writeFile(t, "tunebot.yaml", "data_dir: "+dataDir+"\nsession: {fallback: true}\nexecutor:\n"+executor)
}

// TestDoctorRay runs doctor against the real head: it answers with its version, its 4 GPUs
// hold the jobs asked for, parallel's default is said, and what the nodes must share; a
// job asking for more GPUs than a node has is a warning, a head without the token or at
// an address where nothing listens fails saying what to do.
func TestDoctorRay(t *testing.T) {
	addr, token := rayHead.Need(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nothing := "http://" + l.Addr().String()
	l.Close()
	withToken := map[string]string{"RAY_AUTH_TOKEN": token}
	data := filepath.Join(t.TempDir(), "data")
	tests := []struct {
		name, executor string
		vars           map[string]string
		code           int
		want           []string
	}{
		{"a head with 4 GPUs", "  backend: ray\n  ray: {address: \"" + addr + "\"}\n", withToken, 0, []string{
			"ok    ray        the head at " + addr + " answers: Ray 2.60.0 (RAY_AUTH_TOKEN accepted)",
			"ok    gpus       the cluster has 4 GPUs",
			"each job asks for 1 on one node (entrypoint_num_gpus), and Ray gives it GPUs no other job holds",
			"ok    parallel   executor.parallel is 0: 4 job(s) at once, from the cluster's GPUs when tunebot starts",
			"ok    shared     the jobs write their run dirs under data_dir " + data + " and start the trainer's programs: every Ray node must mount " + data + " at that path",
		}},
		{"more GPUs than a node has", "  backend: ray\n  gpus_per_trial: 8\n  ray: {address: \"" + addr + "\"}\n", withToken, 0, []string{
			"warn  gpus       the cluster has 4 GPUs", "at most 4 on one node, but every job asks for 8 (executor.gpus_per_trial) on one node",
		}},
		{"too many at once", "  backend: ray\n  parallel: 6\n  ray: {address: \"" + addr + "\"}\n", withToken, 0, []string{
			"warn  parallel   executor.parallel 6 × 1 GPU(s) is more than the cluster's 4: the jobs beyond it wait in Ray's queue",
		}},
		{"no token", "  backend: ray\n  ray: {address: \"" + addr + "\"}\n", nil, 1, []string{
			"fail  ray        the head at " + addr + ": the head requires a token (401): set RAY_AUTH_TOKEN",
		}},
		{"nothing listening", "  backend: ray\n  ray: {address: \"" + nothing + "\"}\n", nil, 1, []string{
			"fail  ray        the Ray head at " + nothing + " does not answer", "check executor.ray.address (the head's job server",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTunebot(t, "", tt.vars, "doctor", "--config", rayDoctorConfig(t, data, tt.executor))
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %s\n%s", code, tt.code, stderr, stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("doctor does not say %q:\n%s", w, stdout)
				}
			}
		})
	}
}

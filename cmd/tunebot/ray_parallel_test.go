package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tunebot/config"
)

// TestRayParallelDefault: executor.parallel 0 on Ray is the cluster's GPUs over
// gpus_per_trial, read from the head's state API with the token; CPU jobs run one at a
// time; a head that does not answer leaves one at a time, said in the log; a parallel set
// is kept.
func TestRayParallelDefault(t *testing.T) {
	head := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v0/nodes" || r.Header.Get("Authorization") != "Bearer tok-0123456789" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"data": {"result": {"result": [
			{"node_ip": "10.0.0.1", "state": "ALIVE", "resources_total": {"GPU": 4, "CPU": 32}},
			{"node_ip": "10.0.0.2", "state": "ALIVE", "resources_total": {"GPU": 3, "CPU": 16}},
			{"node_ip": "10.0.0.3", "state": "DEAD", "resources_total": {"GPU": 8}}]}}}`))
	}))
	defer head.Close()
	getenv := func(k string) string { return map[string]string{"RAY_AUTH_TOKEN": "tok-0123456789"}[k] }
	for _, tc := range []struct {
		name          string
		addr          string
		perTrial, set int
		want          int
		log           string
	}{
		{"the cluster's 7 GPUs, 2 a job", head.URL, 2, 0, 3, "executor.parallel from the Ray cluster's GPUs"},
		{"one GPU a job", head.URL, 1, 0, 7, ""},
		{"CPU jobs", head.URL, 0, 0, 1, ""},
		{"set", head.URL, 1, 5, 5, ""},
		{"a head that does not answer", "http://127.0.0.1:1", 1, 0, 1, "executor.parallel is 1 until tunebot starts again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Executor = config.ExecutorConfig{Backend: config.BackendRay, GPUsPerTrial: tc.perTrial, Parallel: tc.set,
				Ray: config.RayConfig{Address: tc.addr}}
			var logs bytes.Buffer
			resolveRayParallel(t.Context(), &cfg, getenv, slog.New(slog.NewTextHandler(&logs, nil)))
			if cfg.Executor.Parallel != tc.want || !strings.Contains(logs.String(), tc.log) {
				t.Errorf("parallel %d, want %d; log %q, want %q", cfg.Executor.Parallel, tc.want, logs.String(), tc.log)
			}
		})
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"time"

	"tunebot/config"
	"tunebot/trainer/ray"
)

// rayAsk bounds each question doctor and the start ask the head.
const rayAsk = 15 * time.Second

// rayClient is the client of the configured head, with RAY_AUTH_TOKEN (from the environment
// or systemd's credentials) when it is set.
func rayClient(cfg config.Config, getenv func(string) string) *ray.Client {
	return cfg.Executor.RayBackend(getenv("RAY_AUTH_TOKEN")).Client
}

// clusterGPUs sums the GPUs of the cluster's live nodes and finds the most one node has.
func clusterGPUs(nodes []ray.Node) (total, most float64) {
	for _, n := range nodes {
		total += n.GPUs
		most = math.Max(most, n.GPUs)
	}
	return total, most
}

// rayParallel is executor.parallel's default on Ray: as many jobs as the cluster's GPUs
// hold, at least one; with gpus_per_trial 0 (CPU jobs), one at a time, as on Slurm.
func rayParallel(total float64, perTrial int) int {
	if perTrial <= 0 {
		return 1
	}
	return max(int(total)/perTrial, 1)
}

// resolveRayParallel sets executor.parallel when it is 0 and jobs run on Ray: the head is
// asked for its GPUs once, as tunebot starts. A head that does not answer leaves one job
// at a time, said in the log: sessions then run, one job after another, once it is back.
func resolveRayParallel(ctx context.Context, cfg *config.Config, getenv func(string) string, logger *slog.Logger) {
	x := &cfg.Executor
	if x.Backend != config.BackendRay || x.Parallel != 0 {
		return
	}
	c := rayClient(*cfg, getenv)
	qctx, cancel := context.WithTimeout(ctx, rayAsk)
	defer cancel()
	nodes, err := c.Nodes(qctx)
	if err != nil {
		x.Parallel = 1
		logger.Warn("asking the Ray head for its GPUs; executor.parallel is 1 until tunebot starts again (set it to choose)", "address", c.Address, "err", err)
		return
	}
	total, _ := clusterGPUs(nodes)
	x.Parallel = rayParallel(total, x.GPUsPerTrial)
	logger.Info("executor.parallel from the Ray cluster's GPUs", "gpus", total, "gpus_per_trial", x.GPUsPerTrial, "parallel", x.Parallel)
}

// doctorRay checks what the ray backend needs: a head that answers (with the token when it
// requires one), the GPUs a job asks for on one node, how many jobs run at once, and what
// the nodes must share.
func doctorRay(ctx context.Context, r *doctorReport, cfg config.Config, getenv func(string) string) {
	c := rayClient(cfg, getenv)
	qctx, cancel := context.WithTimeout(ctx, rayAsk)
	defer cancel()
	v, err := c.Version(qctx)
	if err != nil {
		r.line("fail", "ray", rayUnreachable(c.Address, err))
		return
	}
	r.line("ok", "ray", fmt.Sprintf("the head at %s answers: Ray %s%s", c.Address, v, tokenNote(c.Token)))
	nodes, err := c.Nodes(qctx)
	if err != nil {
		r.line("fail", "gpus", fmt.Sprintf("cannot list the cluster's nodes: %v", err))
		return
	}
	doctorRayGPUs(qctx, r, c, cfg.Executor, nodes)
	dir, _ := filepath.Abs(cfg.DataDir)
	r.line("ok", "shared", fmt.Sprintf("the jobs write their run dirs under data_dir %s and start the trainer's programs: every Ray node must mount %s at that path and have the trainer installed", dir, dir))
	if (dir == "/tmp" || strings.HasPrefix(dir, "/tmp/")) && !rayOnThisMachine(nodes) {
		r.line("warn", "data dir", dir+" is under /tmp, which Ray nodes seldom share: put data_dir on storage the nodes mount at the same path (NFS, a shared volume)")
	}
}

// doctorRayGPUs says the cluster's GPUs, whether gpus_per_trial fits one node, and how many
// jobs run at once.
func doctorRayGPUs(ctx context.Context, r *doctorReport, c *ray.Client, x config.ExecutorConfig, nodes []ray.Node) {
	total, most := clusterGPUs(nodes)
	free := ""
	if used, all, ok, err := c.GPUsInUse(ctx); err == nil && ok {
		free = fmt.Sprintf(", %g free", all-used)
	}
	have := fmt.Sprintf("the cluster has %g GPUs%s on %d node(s)", total, free, len(nodes))
	per := x.GPUsPerTrial
	switch {
	case per == 0:
		r.line("ok", "gpus", have+"; executor.gpus_per_trial is 0: jobs ask for no GPU")
	case float64(per) > most:
		r.line("warn", "gpus", fmt.Sprintf("%s, at most %g on one node, but every job asks for %d (executor.gpus_per_trial) on one node: jobs wait in Ray's queue until a node that large joins (an autoscaler may add one) and never start otherwise", have, most, per))
		return
	default:
		r.line("ok", "gpus", fmt.Sprintf("%s; each job asks for %d on one node (entrypoint_num_gpus), and Ray gives it GPUs no other job holds", have, per))
	}
	switch p := x.Parallel; {
	case p == 0:
		r.line("ok", "parallel", fmt.Sprintf("executor.parallel is 0: %d job(s) at once, from the cluster's GPUs when tunebot starts", rayParallel(total, per)))
	case per > 0 && float64(p*per) > total:
		r.line("warn", "parallel", fmt.Sprintf("executor.parallel %d × %d GPU(s) is more than the cluster's %g: the jobs beyond it wait in Ray's queue", p, per, total))
	default:
		r.line("ok", "parallel", fmt.Sprintf("executor.parallel: %d job(s) at once", p))
	}
}

// rayUnreachable says why the head could not be asked, and what to check.
func rayUnreachable(addr string, err error) string {
	switch {
	case ray.Unauthorized(err):
		return fmt.Sprintf("the head at %s: %v", addr, err)
	case errors.Is(err, ray.ErrUnreachable):
		return fmt.Sprintf("%v; check executor.ray.address (the head's job server, the dashboard's port: 8265 unless set otherwise) and that the head runs (ray status on it)", err)
	}
	return fmt.Sprintf("asking the head at %s: %v", addr, err)
}

func tokenNote(token string) string {
	if token == "" {
		return " (no RAY_AUTH_TOKEN set: the head requires none)"
	}
	return " (RAY_AUTH_TOKEN accepted)"
}

// rayOnThisMachine reports whether every node of the cluster is this machine (a loopback
// address), where anything under /tmp is shared with it.
func rayOnThisMachine(nodes []ray.Node) bool {
	for _, n := range nodes {
		if !strings.HasPrefix(n.IP, "127.") && n.IP != "::1" {
			return false
		}
	}
	return len(nodes) > 0
}

// Package slurmtest gives tests a real one-node Slurm (scripts/slurm.sh: Debian's 22.05
// with 2 fake GPUs), brought up once per test binary by the first test that needs it and
// taken down by TestMain. SLURM_CONF, when set, names a running cluster to use instead.
// Where Slurm is not installed, the tests that need it skip with the command that
// installs it.
package slurmtest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"tunebot/trainer/internal/repo"
)

// Cluster is the test binary's Slurm; its zero value is ready to use.
type Cluster struct {
	once   sync.Once
	conf   string
	skip   string
	dir    string
	script string
}

// Need returns the SLURM_CONF of the cluster, bringing it up on first use, or skips t
// saying why there is none.
func (c *Cluster) Need(t testing.TB) string {
	t.Helper()
	c.once.Do(c.up)
	if c.skip != "" {
		t.Skip(c.skip)
	}
	return c.conf
}

// Env is the environment that points the Slurm commands at the cluster.
func (c *Cluster) Env(t testing.TB) []string {
	t.Helper()
	return append(os.Environ(), "SLURM_CONF="+c.Need(t))
}

// Down stops a cluster this package brought up; call it after m.Run.
func (c *Cluster) Down() {
	if c.dir == "" {
		return
	}
	_ = exec.Command("bash", c.script, "down", c.dir).Run()
	os.RemoveAll(c.dir)
}

func (c *Cluster) up() {
	if conf := os.Getenv("SLURM_CONF"); conf != "" {
		c.conf = conf
		return
	}
	if _, err := exec.LookPath("slurmctld"); err != nil {
		c.skip = "Slurm is not installed here: `bash scripts/slurm.sh install` (root) installs Debian's slurmctld, slurmd, slurm-client and munge"
		return
	}
	script, err := repo.Script("slurm.sh")
	if err != nil {
		c.skip = err.Error()
		return
	}
	dir, err := os.MkdirTemp("", "tunebot-slurm-")
	if err != nil {
		c.skip = "no temp dir for Slurm: " + err.Error()
		return
	}
	c.dir, c.script = dir, script
	up := exec.Command("bash", script, "up", dir, "2")
	up.Stderr = os.Stderr
	out, err := up.Output()
	if err != nil {
		c.skip = fmt.Sprintf("bringing up Slurm failed (%v): logs in %s", err, dir)
		return
	}
	c.conf = strings.TrimPrefix(strings.TrimSpace(string(out)), "SLURM_CONF=")
}

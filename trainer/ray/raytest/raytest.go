// Package raytest gives tests a real one-node Ray cluster (scripts/ray.sh: PyPI's ray[default]
// at a pinned version; a head with 2 CPUs and 4 logical GPUs that requires a token), started
// once per test binary by the first test that needs it and stopped by TestMain. Where Ray is
// not installed it installs it first (scripts/ray.sh install: about 400 MB into a venv of its
// own); only where that fails do the tests that need a head skip, saying why.
package raytest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"tunebot/trainer/internal/repo"
	"tunebot/trainer/ray"
)

// GPUs is how many logical GPUs the test head declares.
const GPUs = 4

// Head is the test binary's Ray head; its zero value is ready to use.
type Head struct {
	once   sync.Once
	mu     sync.Mutex
	addr   string
	token  string
	skip   string
	dir    string
	script string
}

// Need returns the head's job server address and token, starting it on first use, or skips
// t saying why there is none.
func (h *Head) Need(t testing.TB) (addr, token string) {
	t.Helper()
	h.once.Do(h.up)
	if h.skip != "" {
		t.Skip(h.skip)
	}
	return h.addr, h.token
}

// Client is a client of the head, with its token.
func (h *Head) Client(t testing.TB) *ray.Client {
	t.Helper()
	addr, token := h.Need(t)
	return &ray.Client{Address: addr, Token: token}
}

// Jobs lists every job the head knows (GET /api/jobs/), as `ray job list` shows them.
func (h *Head) Jobs(t testing.TB) []ray.Info {
	t.Helper()
	addr, token := h.Need(t)
	req, err := http.NewRequest(http.MethodGet, addr+"/api/jobs/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("listing the head's jobs: %v", err)
	}
	defer resp.Body.Close()
	var jobs []ray.Info
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&jobs); err != nil {
		t.Fatalf("listing the head's jobs: %d: %v", resp.StatusCode, err)
	}
	return jobs
}

// Stop stops the head as a crash would take it away: its jobs end with it.
func (h *Head) Stop(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if out, err := h.run("stop", h.dir); err != nil {
		t.Fatalf("stopping the Ray head: %v\n%s", err, out)
	}
}

// Start brings a stopped head back, at the same address, knowing none of its old jobs.
func (h *Head) Start(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if out, err := h.run("start", h.dir, fmt.Sprint(GPUs)); err != nil {
		t.Fatalf("starting the Ray head again: %v\n%s", err, out)
	}
}

// Down stops a head this package started; call it after m.Run.
func (h *Head) Down() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dir == "" {
		return
	}
	_, _ = h.run("stop", h.dir)
	os.RemoveAll(h.dir)
}

func (h *Head) up() {
	script, err := repo.Script("ray.sh")
	if err != nil {
		h.skip = err.Error()
		return
	}
	h.script = script
	if out, err := h.run("install"); err != nil {
		h.skip = fmt.Sprintf("Ray could not be installed here (bash scripts/ray.sh install: %v): %s", err, lastLines(out))
		return
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	h.token = hex.EncodeToString(b)
	// Short: Ray's sockets live below it, and a socket's path is at most 107 bytes.
	dir, err := os.MkdirTemp("/tmp", "tunebot-ray-")
	if err != nil {
		h.skip = "no temp dir for the Ray head: " + err.Error()
		return
	}
	h.dir = dir
	out, err := h.run("start", dir, fmt.Sprint(GPUs))
	if err != nil {
		h.skip = fmt.Sprintf("starting a Ray head failed (%v): %s; logs in %s", err, lastLines(out), dir)
		return
	}
	for _, l := range strings.Split(out, "\n") {
		if a, ok := strings.CutPrefix(strings.TrimSpace(l), "RAY_ADDRESS="); ok {
			h.addr = a
		}
	}
	if h.addr == "" {
		h.skip = "scripts/ray.sh start printed no RAY_ADDRESS: " + lastLines(out)
	}
}

// run runs scripts/ray.sh with args in an environment of its own: the head and its jobs
// must not inherit what a test set in this process (a secret it checks never reaches a
// job), only what finds programs and the head's token.
func (h *Head) run(args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{h.script}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8", "RAY_AUTH_TOKEN=" + h.token}
	if v := os.Getenv("TUNEBOT_RAY_VENV"); v != "" {
		cmd.Env = append(cmd.Env, "TUNEBOT_RAY_VENV="+v)
	}
	if v := os.Getenv("XDG_CACHE_HOME"); v != "" {
		cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+v)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// lastLines is the end of a script's output, for a message.
func lastLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-5, 0):], "\n")
}

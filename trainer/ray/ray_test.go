package ray_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tunebot/trainer/ray"
	"tunebot/trainer/ray/raytest"
)

// head is the test binary's real Ray head (raytest): 4 logical GPUs, a token required.
var head raytest.Head

func TestMain(m *testing.M) {
	code := m.Run()
	head.Down()
	os.Exit(code)
}

// argvDump is a command that writes its argv as JSON to the file named by its first word.
var argvDump = []string{"python3", "-c", "import json,sys; json.dump(sys.argv[2:], open(sys.argv[1], 'w'))"}

// hostile words a run name or a config value could carry; none may be interpreted.
var hostile = []string{
	"plain", "two words", `"double"`, "it's", "$(touch pwned)", "`touch pwned`", "$HOME",
	"a;b", "x\ny", "*", "--flag=1", `back\slash`, "{gpu_ids}", "gpus=" + ray.GPUIDsMarker + "!", "",
}

// TestEntrypointKeepsEveryWordAndFillsGPUs runs an entrypoint as Ray does (`sh -c`): every
// word arrives as it was, nothing is run by a shell, {gpu_ids} is CUDA_VISIBLE_DEVICES as a
// JSON list, and the command starts in the job's workdir.
func TestEntrypointKeepsEveryWordAndFillsGPUs(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "argv.json")
	entry, err := ray.Entrypoint(ray.Job{ID: "a", Workdir: dir, Argv: slices.Concat(argvDump, []string{out}, hostile, []string{"pwd=$PWD"})})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", entry)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES=1,3")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("entrypoint: %v\n%s", err, b)
	}
	var got []string
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(hostile)
	want[len(want)-2] = "gpus=[1,3]!"
	want = append(want, "pwd=$PWD")
	if !slices.Equal(got, want) {
		t.Errorf("argv through the entrypoint:\n got %q\nwant %q", got, want)
	}
	for _, d := range []string{dir, cmd.Dir} {
		if _, err := os.Stat(filepath.Join(d, "pwned")); err == nil {
			t.Error("a word of argv was run by the shell")
		}
	}
}

func TestEntrypointRefusesBadJobs(t *testing.T) {
	tests := []struct {
		name string
		job  ray.Job
		want string
	}{
		{"id a flag", ray.Job{ID: "-x", Argv: []string{"true"}}, `job id "-x"`},
		{"id with a slash", ray.Job{ID: "a/b", Argv: []string{"true"}}, `job id "a/b"`},
		{"no argv", ray.Job{ID: "a"}, "empty argv"},
		{"relative workdir", ray.Job{ID: "a", Argv: []string{"true"}, Workdir: "src"}, `workdir "src" is not absolute`},
		{"bad env", ray.Job{ID: "a", Argv: []string{"true"}, Env: []string{"A B=1"}}, `env "A B=1"`},
		{"negative", ray.Job{ID: "a", Argv: []string{"true"}, GPUs: -1}, "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ray.Entrypoint(tc.job); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Entrypoint: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestParseAddress(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{in: "http://127.0.0.1:8265", want: "http://127.0.0.1:8265"},
		{in: "https://ray.example.org/dashboard/", want: "https://ray.example.org/dashboard"},
		{in: "", err: "empty"},
		{in: "127.0.0.1:8265", err: "want an http:// or https:// URL"},
		{in: "ray://head:10001", err: "not the GCS address"},
		{in: "http://", err: "has no host"},
		{in: "http://user:pw@head:8265", err: "holds a user or password"},
		{in: "http://head:8265/?x=1", err: "query or fragment"},
		{in: "http://head:99999", err: "port 99999 is not 1-65535"},
		{in: "http://head:8265 x", err: "is not a URL"},
	}
	for _, tc := range tests {
		got, err := ray.ParseAddress(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseAddress(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseAddress(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
		}
	}
}

// waitJob polls job id until it finished.
func waitJob(t *testing.T, c *ray.Client, id string) ray.Info {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		i, err := c.Job(context.Background(), id)
		if err != nil {
			t.Fatalf("job %s: %v", id, err)
		}
		if i.Finished() {
			return i
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is still %s", id, i.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestJobsOnARealHead: a job runs with the GPU Ray gave it and the environment asked for,
// reports its exit code and node; its log's end is read; its id is not taken twice; a job
// still running is stopped; an unknown job is ErrNotFound.
func TestJobsOnARealHead(t *testing.T) {
	c := head.Client(t)
	ctx := context.Background()
	id := "tunebot-test-" + time.Now().Format("150405.000000")
	err := c.Submit(ctx, ray.Job{ID: id, GPUs: 1, Env: []string{"ASKED=yes it's"},
		Metadata: map[string]string{"tunebot_run_dir": "/x"},
		Argv:     []string{"bash", "-c", `echo "gpus=$1 asked=$ASKED"; for i in $(seq 3000); do echo "line $i of a long log ...................................."; done; exit 3`, "job", "{gpu_ids}=" + ray.GPUIDsMarker}})
	if err != nil {
		t.Fatal(err)
	}
	i := waitJob(t, c, id)
	if i.Status != ray.Failed || i.DriverExitCode == nil || *i.DriverExitCode != 3 || i.Node() != "127.0.0.2" || i.Metadata["tunebot_run_dir"] != "/x" {
		t.Errorf("job ended %+v; want FAILED, exit code 3, on 127.0.0.2, with its metadata", i)
	}
	end, cut, err := c.LogEnd(ctx, id, 100)
	if err != nil || !cut || !strings.HasSuffix(end, "line 3000 of a long log ....................................\n") || len(end) != 100 {
		t.Errorf("log end %q (cut %v), %v", end, cut, err)
	}
	whole, cut, err := c.LogEnd(ctx, id, 1<<20)
	if err != nil || cut || !strings.Contains(whole, "gpus={gpu_ids}=[") || !strings.Contains(whole, "asked=yes it's") {
		t.Errorf("the whole log (cut %v, %v) lacks the GPU or the environment: %.300q", cut, err, whole)
	}
	if err := c.Submit(ctx, ray.Job{ID: id, Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second job of the same id: %v", err)
	}
	if _, err := c.Job(ctx, "tunebot-no-such-job"); !errors.Is(err, ray.ErrNotFound) {
		t.Errorf("an unknown job: %v, want ErrNotFound", err)
	}
	id += "-2"
	if err := c.Submit(ctx, ray.Job{ID: id, Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	for i, _ := c.Job(ctx, id); i.Status != ray.Running; i, _ = c.Job(ctx, id) {
		time.Sleep(100 * time.Millisecond)
	}
	if err := c.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	if i := waitJob(t, c, id); i.Status != ray.Stopped {
		t.Errorf("a stopped job is %s", i.Status)
	}
	if err := c.Stop(ctx, "tunebot-no-such-job"); !errors.Is(err, ray.ErrNotFound) {
		t.Errorf("stopping an unknown job: %v, want ErrNotFound", err)
	}
}

// TestHeadFacts: the head's version, its node with the 4 logical GPUs, and the GPUs in use.
func TestHeadFacts(t *testing.T) {
	c := head.Client(t)
	ctx := context.Background()
	if v, err := c.Version(ctx); err != nil || v != "2.60.0" {
		t.Errorf("version %q, %v", v, err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].GPUs != raytest.GPUs || !nodes[0].Head || nodes[0].IP != "127.0.0.2" {
		t.Errorf("nodes %+v, %v", nodes, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, total, ok, err := c.GPUsInUse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if total != raytest.GPUs {
				t.Errorf("cluster status: %v GPUs in all", total)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cluster status never reported GPUs")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestHeadRefusals: without the token, with a wrong one, at a port where nothing listens
// and at a server that is no job server, each error says which.
func TestHeadRefusals(t *testing.T) {
	addr, _ := head.Need(t)
	ctx := context.Background()
	if _, err := (&ray.Client{Address: addr}).Version(ctx); !ray.Unauthorized(err) || !strings.Contains(err.Error(), "requires a token (401): set RAY_AUTH_TOKEN") {
		t.Errorf("no token: %v", err)
	}
	if _, err := (&ray.Client{Address: addr, Token: "wrong-token-0123456789"}).Version(ctx); !ray.Unauthorized(err) || !strings.Contains(err.Error(), "refused the token (403)") {
		t.Errorf("a wrong token: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	if _, err := (&ray.Client{Address: closed}).Version(ctx); !errors.Is(err, ray.ErrUnreachable) || !strings.Contains(err.Error(), "the Ray head at "+closed+" does not answer") {
		t.Errorf("nothing listening: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>not Ray</html>")) })}
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	if _, err := (&ray.Client{Address: "http://" + l.Addr().String()}).Version(ctx); err == nil || !strings.Contains(err.Error(), "is it a Ray job server?") {
		t.Errorf("a server that is not Ray's: %v", err)
	}
}

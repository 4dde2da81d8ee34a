package trainer

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"tunebot/trainer/slurm"
)

// TestSlurmExitFileIsReadBounded: the exit file a Slurm job writes in its run directory is
// read through the bounded reader whichever client the backend was given (one made without
// a reader used to fall back to os.ReadFile): a FIFO there is refused at once, not waited on,
// and a link out is not followed.
func TestSlurmExitFileIsReadBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "job.exit")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "exit")
	if err := os.WriteFile(outside, []byte("0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "linked.exit")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.exit")
	if err := os.WriteFile(plain, []byte("3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Runner{
		"the default client":       {},
		"a client given no reader": {t: Templates{Slurm: &Slurm{Client: &slurm.Client{Env: []string{"PATH=/usr/bin"}}}}},
	} {
		c := r.slurmClient()
		if c.ReadExit == nil {
			t.Fatalf("%s: no bounded reader for the exit file", name)
		}
		done := make(chan error, 1)
		go func() { _, err := c.ReadExit(fifo); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: a FIFO read as an exit file", name)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: reading a FIFO as the exit file hangs", name)
		}
		if _, err := c.ReadExit(link); err == nil {
			t.Errorf("%s: a link out of the run directory was followed", name)
		}
		if b, err := c.ReadExit(plain); err != nil || string(b) != "3\n" {
			t.Errorf("%s: a plain exit file reads %q, %v", name, b, err)
		}
	}
}

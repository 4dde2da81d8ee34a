package config_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tunebot/config"
)

// A config file or a space file that is not a regular file (a FIFO nobody writes) is
// refused at once, never waited on; one past the cap is refused, not read whole.
func TestConfigFilesAreReadBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	big := writeFile(t, filepath.Join(dir, "big.yaml"), "data_dir: data\n"+strings.Repeat("# a comment line of a config file, over and over\n", 1<<15))
	spaceOf := func(file string) string {
		return writeFile(t, filepath.Join(dir, "with-"+filepath.Base(file)), "data_dir: data\nreward_spaces:\n  Task-A: {file: "+file+"}\n")
	}
	for _, tc := range []struct{ name, path, want string }{
		{"config FIFO", fifo, "is not a regular file"},
		{"config over the cap", big, "is larger than"},
		{"space file FIFO", spaceOf(fifo), "is not a regular file"},
		{"space file over the cap", spaceOf(big), "is larger than"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := config.Load(tc.path, func(string) string { return "" })
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: Load still waits after 5 s", tc.name)
		}
	}
}

// A merge key that names its own mapping, or a list that holds itself, is a loop: Load
// names a problem (the decoder's) and does not recurse until the stack overflows.
func TestMergeKeyLoopsAreNamed(t *testing.T) {
	for _, body := range []string{
		"session: &a {<<: *a}\n",
		"session: {<<: &m [*m]}\n",
		"session: {objective_weights: &a {<<: *a}}\n",
	} {
		path := writeFile(t, filepath.Join(t.TempDir(), "loop.yaml"), body)
		if _, err := config.Load(path, func(string) string { return "" }); err == nil {
			t.Errorf("%q: loaded", body)
		}
	}
}

// Merge keys that lend lists of one another (a few lines naming a value ten million times)
// are refused in a moment, as the decoder refuses them, not walked value by value.
func TestAliasBombIsRefusedQuickly(t *testing.T) {
	lines := []string{"data_dir: data", "x0: &a0 {mode: approval}"}
	for i := 1; i < 8; i++ {
		lines = append(lines, fmt.Sprintf("x%d: &a%d {<<: [%s]}", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", ")))
	}
	path := writeFile(t, filepath.Join(t.TempDir(), "bomb.yaml"), strings.Join(append(lines, "session: {<<: *a7}"), "\n")+"\n")
	done := make(chan error, 1)
	go func() {
		_, err := config.Load(path, func(string) string { return "" })
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
			t.Errorf("Load: %v, want the decoder's refusal", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("Load still walks the aliases after 10 s")
	}
}

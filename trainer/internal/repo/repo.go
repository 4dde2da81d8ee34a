// Package repo finds the repository's scripts for the test harnesses that bring up a real
// cluster (slurmtest, raytest): they run from a test's directory, somewhere below the
// module's root.
package repo

import (
	"fmt"
	"os"
	"path/filepath"
)

// Script is the path of scripts/name at the module's root, above the working directory.
func Script(name string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "scripts", name), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the test's directory: cannot find scripts/%s", name)
		}
		dir = parent
	}
}

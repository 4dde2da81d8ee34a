package trainer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeepCheckedRefusesASwappedClip: the clip recorded at collection is the file whose
// bytes were checked through the open descriptor; one swapped between the check and the
// rename is not kept under the checked clip's hash (issue 27, item 2).
func TestKeepCheckedRefusesASwappedClip(t *testing.T) {
	for _, swapped := range []bool{false, true} {
		run := t.TempDir()
		if err := os.WriteFile(filepath.Join(run, ClipFile), []byte("checked"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := OpenBounded(run, ClipFile, MaxClipBytes, "the clip")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if swapped {
			if err := os.WriteFile(filepath.Join(run, "other"), []byte("swapped"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(run, "other"), filepath.Join(run, ClipFile)); err != nil {
				t.Fatal(err)
			}
		}
		err = keepChecked(run, ClipFile, ClipFile+".gif", f)
		_, statErr := os.Lstat(filepath.Join(run, ClipFile+".gif"))
		switch {
		case !swapped && (err != nil || statErr != nil):
			t.Errorf("the checked clip was not kept: %v, %v", err, statErr)
		case swapped && (err == nil || !strings.Contains(err.Error(), "replaced while it was checked") || statErr == nil):
			t.Errorf("a swapped clip: %v; renamed file left: %v", err, statErr == nil)
		}
	}
}

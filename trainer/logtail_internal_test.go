package trainer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key a trainer printed across the place the 4 KiB tail begins is masked before the cut:
// the store masks only whole values, so a tail that began inside the key kept its end.
func TestLogTailNeverKeepsPartOfASecret(t *testing.T) {
	key := "sk-tail-straddling-0123456789abcdef"
	t.Setenv("DEEPSEEK_API_KEY", key)
	for _, inside := range []int{5, 15, 30} { // about as many of the key's bytes in the last 4 KiB
		log := strings.Repeat("a", 100) + key + strings.Repeat("b", tailBytes-len(cutMark)-inside) + "\n"
		path := filepath.Join(t.TempDir(), "train.log")
		if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
			t.Fatal(err)
		}
		tail := logTail(path)
		if strings.Contains(tail, key[len(key)-4:]) || !strings.HasPrefix(tail, cutMark) || len(tail) > tailBytes {
			t.Errorf("%d bytes of the key in the tail's window: the tail (%d bytes) starts %q", inside, len(tail), tail[:min(len(tail), 60)])
		}
	}
}

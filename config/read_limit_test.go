package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/config"
)

// TestReadLimitConfig: chat.read_limit is read, defaults when absent, and a limit that
// would block every read is named.
func TestReadLimitConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       bot.RateLimit
		wantErr    string
	}{
		{"absent", "", bot.RateLimit{}, ""},
		{"set", "chat:\n  read_limit: {burst: 4, every: 15s}\n", bot.RateLimit{Burst: 4, Every: 15 * time.Second}, ""},
		{"zero burst", "chat:\n  read_limit: {burst: 0, every: 15s}\n", bot.RateLimit{}, "chat.read_limit: burst (0) must be at least 1"},
		{"no interval", "chat:\n  read_limit: {burst: 4}\n", bot.RateLimit{}, "chat.read_limit: burst (4) must be at least 1 and every (0s) positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "tunebot.yaml")
			if err := os.WriteFile(p, []byte("data_dir: data\n"+tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(p, func(string) string { return "" })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Chat.ReadLimit != tc.want {
				t.Errorf("read_limit %+v, want %+v", cfg.Chat.ReadLimit, tc.want)
			}
		})
	}
}

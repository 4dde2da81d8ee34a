package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogsRedactSecrets: whatever a log line carries (a trainer's or a test's output, an
// error quoting a URL), the values of tunebot's secrets never reach the log file or the
// terminal.
func TestLogsRedactSecrets(t *testing.T) {
	const key, hook = "sk-planted-0123456789", "https://hooks.example/services/T0/B0/planted"
	t.Setenv("DEEPSEEK_API_KEY", key)
	t.Setenv("TUNEBOT_WEBHOOK_URL", hook)
	for _, format := range []string{"text", "json"} {
		var daemon, term bytes.Buffer
		newLogger(LogConfig{Level: "debug", Format: format}, &daemon).Error("test output: "+key, "err", "posting to "+hook+": 404")
		dir := t.TempDir()
		logger, closeLog, err := consoleLogger(LogConfig{Level: "debug", Format: format}, dir, &term)
		if err != nil {
			t.Fatal(err)
		}
		logger.Error("test output: "+key, "err", "posting to "+hook+": 404")
		closeLog()
		file, err := os.ReadFile(filepath.Join(dir, "tunebot.log"))
		if err != nil {
			t.Fatal(err)
		}
		for where, out := range map[string]string{"daemon log": daemon.String(), "log file": string(file), "terminal": term.String()} {
			if strings.Contains(out, key) || strings.Contains(out, "planted") || !strings.Contains(out, "[redacted]") {
				t.Errorf("%s (%s) not redacted: %s", where, format, out)
			}
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const agentKey = "sk-agent-test-secret-42"

// fakeChat answers every chat completion with status and body (a 200 gets a completion whose
// content is body) and records the requests' Authorization headers.
func fakeChat(t *testing.T, status int, body string) (*httptest.Server, *[]string) {
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		auths = append(auths, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		if status != 200 {
			w.WriteHeader(status)
			io.WriteString(w, body)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "model": "deepseek-v4-flash-0501",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": body}}},
			"usage":   map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &auths
}

func TestAgentTest(t *testing.T) {
	tests := []struct {
		name   string
		key    string
		status int
		body   string
		code   int
		want   []string
	}{
		{"no key", "", 200, `{"ok": true}`, 1, []string{"configured: no (DEEPSEEK_API_KEY is not set)", "live test:  skipped"}},
		{"ok", agentKey, 200, `{"ok": true}`, 0, []string{"configured: yes", "model:      deepseek-v4-flash\n", "live test:  ok: deepseek-v4-flash-0501 answered in"}},
		{"bad key echoed by the server", agentKey, 401, `{"error":{"message":"Authentication Fails, your api key: ` + agentKey + ` is invalid","type":"authentication_error"}}`, 1,
			[]string{"configured: yes", "live test:  FAILED", "DeepSeek rejected the API key (401)"}},
		{"server error echoing the key", agentKey, 503, `{"error":{"message":"overloaded for ` + agentKey + `","type":"server_error"}}`, 1,
			[]string{"DeepSeek server error (503)"}},
		{"balance", agentKey, 402, `{"error":{"message":"Insufficient Balance","type":"unknown_error"}}`, 1,
			[]string{"DeepSeek account balance is insufficient (402)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, auths := fakeChat(t, tc.status, tc.body)
			path := filepath.Join(t.TempDir(), "tunebot.yaml")
			if err := os.WriteFile(path, []byte("advisor:\n  base_url: "+srv.URL+"\n  timeout: 10s\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			getenv := func(k string) string {
				if k == "DEEPSEEK_API_KEY" {
					return tc.key
				}
				return ""
			}
			code := dispatch(context.Background(), &env{stdout: &out, stderr: &errb, getenv: getenv}, []string{"agent", "test", "--config", path})
			all := out.String() + errb.String()
			if code != tc.code {
				t.Errorf("exit %d, want %d; output:\n%s", code, tc.code, all)
			}
			for _, w := range append(tc.want, "base URL:   "+srv.URL) {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			if strings.Contains(all, agentKey) {
				t.Errorf("output contains the key:\n%s", all)
			}
			wantCalls := 1
			if tc.key == "" {
				wantCalls = 0
			}
			if len(*auths) != wantCalls || (wantCalls == 1 && (*auths)[0] != "Bearer "+agentKey) {
				t.Errorf("server saw %q, want %d call(s) with the key in the Authorization header", *auths, wantCalls)
			}
		})
	}
}

func TestAgentUsage(t *testing.T) {
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}, []string{"agent"})
	if code != 2 || !strings.Contains(errb.String(), "usage: tunebot agent test") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

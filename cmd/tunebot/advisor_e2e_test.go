package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"tunebot/session"
	"tunebot/store"
)

// fakeDeepSeek speaks the chat-completions API. Its first answer breaks the rules (five
// changes), so the advisor must repair; later answers move foot_gait.period to a value not
// used before, which is always a new, valid configuration.
type fakeDeepSeek struct {
	mu     sync.Mutex
	calls  int
	bodies []string
	auth   []string
	// script, when set, is the answer's content call by call (the last one repeats)
	// instead of the answers above.
	script []string
}

const testKey = "sk-test-SECRET-0123456789"

func (f *fakeDeepSeek) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.bodies = append(f.bodies, string(body))
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	if r.URL.Path != "/chat/completions" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var content string
	if len(f.script) > 0 {
		content = f.script[min(n, len(f.script))-1]
	} else if n == 1 {
		content = `{"patch": {"weights": {"pose": 1.1, "foot_slip": -0.3, "foot_gait": 0.6, "stand_still": -1.2, "body_ang_vel": -0.06}}, "rationale": "five at once", "expected_impact": {"tracking": "+"}, "confidence": 0.5}`
	} else {
		period := 0.42 + 0.03*float64(n)
		content = fmt.Sprintf(`{"patch": {"params": {"foot_gait.period": %.2f}}, "rationale": "@everyone try a gait period of %.2f", "expected_impact": {"slip": "-"}, "confidence": 0.6}`, period, period)
	}
	resp := map[string]any{
		"id": fmt.Sprint("cmpl-", n), "object": "chat.completion", "created": 1, "model": "deepseek-v4-flash-0901",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
		"usage":   map[string]any{"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960, "prompt_cache_hit_tokens": 640, "prompt_cache_miss_tokens": 260},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// advisorConfig starts a fake DeepSeek, answering script call by call when one is given,
// and writes a config whose advisor it is, with extra (YAML: the session's settings).
func advisorConfig(t *testing.T, extra string, script ...string) (*fakeDeepSeek, string) {
	t.Helper()
	fake := &fakeDeepSeek{script: script}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return fake, writeConfig(t, t.TempDir(), "data_dir: data\nadvisor:\n  base_url: "+srv.URL+"\n"+extra)
}

// TestSessionWithTheAdvisor runs a whole session whose proposals come from the DeepSeek
// advisor (against a local fake of the API): a refused answer is repaired, no invalid patch
// reaches the trainer, every call is audited, and the key appears nowhere on disk.
func TestSessionWithTheAdvisor(t *testing.T) {
	fake, cfg := advisorConfig(t, "log: {level: debug}\nsession:\n  trial_count: 4\n  rungs: [10, 20, 30]\n")
	dir := filepath.Dir(cfg)
	code, sum, out := tuneBinary(t, "", []string{"DEEPSEEK_API_KEY=" + testKey}, "tune", "--config", cfg, "--json")
	if code != 0 || sum.State != session.StateSucceeded {
		t.Fatalf("exit %d, state %s: %s\n%s", code, sum.State, sum.Reason, out)
	}
	for _, tr := range sum.Trials {
		if tr.Number > 0 && tr.Source != session.SourceAdvisor {
			t.Errorf("trial %d source %s", tr.Number, tr.Source)
		}
		if tr.Number > 0 && tr.Rung == 0 && tr.RewardConfig.Weights["pose"] != 1.0 {
			t.Errorf("trial %d ran the refused five-change patch", tr.Number)
		}
	}
	fake.mu.Lock()
	calls, bodies, auth := fake.calls, fake.bodies, fake.auth
	fake.mu.Unlock()
	if calls != 4 { // 3 proposals, the first repaired once
		t.Errorf("%d calls to the API, want 4", calls)
	}
	if !strings.Contains(bodies[1], "at most 4") {
		t.Errorf("the repair round does not name the broken rule:\n%s", bodies[1])
	}
	for i, b := range bodies {
		if strings.Contains(b, testKey) {
			t.Errorf("request %d carries the key in its body", i)
		}
		if auth[i] != "Bearer "+testKey {
			t.Errorf("request %d Authorization %q", i, auth[i])
		}
		for _, want := range []string{`"response_format":{"type":"json_object"}`, `"thinking":{"type":"disabled"}`, `"temperature":0.2`} {
			if !strings.Contains(strings.ReplaceAll(b, " ", ""), want) {
				t.Errorf("request %d lacks %s", i, want)
			}
		}
	}
	db, err := store.Open(filepath.Join(dir, "data", "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	audit, _ := db.Audit(context.Background(), sum.Session)
	ps, _ := db.Proposals(context.Background(), sum.Session)
	db.Close()
	advisorCalls := 0
	for _, a := range audit {
		if a.Kind == "advisor_call" {
			advisorCalls++
			if a.Detail["prompt_sha256"] == nil || a.Detail["model"] != "deepseek-v4-flash-0901" || a.Detail["usage"] == nil {
				t.Errorf("audit entry lacks hash, model or usage: %v", a.Detail)
			}
		}
	}
	if advisorCalls != 4 {
		t.Errorf("%d advisor calls audited, want 4", advisorCalls)
	}
	for _, p := range ps {
		if strings.Contains(p.Rationale, "@everyone") {
			t.Errorf("rationale not neutralised: %q", p.Rationale)
		}
	}
	// the key is nowhere on disk: store, log, run dirs
	_ = filepath.Walk(filepath.Join(dir, "data"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(testKey)) {
				t.Errorf("the API key is written in %s", p)
			}
		}
		return nil
	})
	if printed, _ := json.Marshal(sum); strings.Contains(out+string(printed), testKey) {
		t.Error("the API key was printed")
	}
}

// TestAdvisorValuesAreRounded runs a session whose DeepSeek answer carries float noise
// (-200 × 1.9999999997): the proposal, the trial that ran it and the preset hold -400.
func TestAdvisorValuesAreRounded(t *testing.T) {
	_, cfg := advisorConfig(t, "session:\n  trial_count: 4\n  rungs: [10, 20, 30]\n",
		`{"patch": {"weights": {"is_terminated": -399.99999944548205}}, "rationale": "double it", "expected_impact": {}, "confidence": 0.5}`,
		`{"patch": {"params": {"foot_gait.period": 0.45}}, "rationale": "quicker", "expected_impact": {}, "confidence": 0.5}`,
		`{"patch": {"params": {"foot_gait.period": 0.5}}, "rationale": "quicker", "expected_impact": {}, "confidence": 0.5}`)
	code, sum, stderr := tuneBinary(t, "", []string{"DEEPSEEK_API_KEY=" + testKey}, "tune", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if len(sum.Proposals) == 0 || sum.Proposals[0].Patch.Weights["is_terminated"] != -400 {
		t.Fatalf("proposal 1 is %+v, want is_terminated -400", sum.Proposals)
	}
	for _, tr := range sum.Trials {
		if tr.Number == 1 && tr.RewardConfig.Weights["is_terminated"] != -400 {
			t.Errorf("trial 1 @ rung %d ran is_terminated %v, want -400", tr.Rung, tr.RewardConfig.Weights["is_terminated"])
		}
	}
	checkRounded(t, sum)
}

package session_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tunebot/session"
)

// An engine that knows a space per task runs each session in its own task's space: the
// baseline trains that task's defaults and every proposal is asked and checked in it; a
// task without a space, and a preset of another task, are refused at the start.
func TestEngineSpacePerTask(t *testing.T) {
	h := newHarness(t, t.TempDir())
	b := session.DefaultSpace()
	for i := range b.Terms {
		if b.Terms[i].Name == "foot_slip" {
			b.Terms[i].Default = -0.3
		}
	}
	var mu sync.Mutex
	var asked []*session.Space
	sampler := &scriptAdvisor{fn: func(req session.ProposalRequest) (session.Suggestion, error) {
		mu.Lock()
		asked = append(asked, req.Space)
		mu.Unlock()
		s, err := improving(req)
		s.Source = session.SourceSampler
		return s, err
	}}
	eng, err := session.NewEngine(session.EngineConfig{Store: configStore{h.db}, Trainer: h.tr, Sampler: sampler,
		Spaces: map[string]*session.Space{"Task-A": session.DefaultSpace(), "Task-B": b}, SessionsDir: filepath.Join(h.dir, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := settings(session.ModeAutomatic)
	st.Fallback, st.Tasks, st.Task = true, []string{"Task-A", "Task-B", "Task-C"}, "Task-B"
	s, err := eng.Start(ctx, st, session.System)
	if err != nil {
		t.Fatal(err)
	}
	if s.Base.Weights["foot_slip"] != -0.3 {
		t.Errorf("task B's session starts from foot_slip %g, want its own default -0.3", s.Base.Weights["foot_slip"])
	}
	if s, err = eng.Wait(ctx, s.ID); err != nil || s.State != session.StateSucceeded {
		t.Fatalf("session: %v %s %s", err, s.State, s.Reason)
	}
	mu.Lock()
	for i, sp := range asked {
		if term, _ := sp.Term("foot_slip"); term.Default != -0.3 {
			t.Errorf("proposal %d was asked in a space whose foot_slip default is %g, not task B's", i+1, term.Default)
		}
	}
	mu.Unlock()
	if len(asked) == 0 {
		t.Error("no proposal was asked")
	}

	st.Task = "Task-C"
	if _, err := eng.Start(ctx, st, session.System); err == nil || !strings.Contains(err.Error(), "task Task-C has no reward space here (configured: Task-A, Task-B)") {
		t.Errorf("a task without a space: %v", err)
	}
	if err := h.db.SavePreset(ctx, session.Preset{Name: "of-a", Task: "Task-A", Config: session.DefaultSpace().Defaults(), CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st.Task, st.Preset = "Task-B", "of-a"
	_, err = eng.Start(ctx, st, session.System)
	if !errors.Is(err, session.ErrConflict) || !strings.Contains(err.Error(), "preset of-a was tuned on task Task-A, not Task-B") {
		t.Errorf("a preset of another task: %v", err)
	}
}

// A session names its task when several are configured and none is the default.
func TestSettingsNameATaskOfSeveral(t *testing.T) {
	st := session.DefaultSettings()
	st.Tasks, st.Task = []string{"Task-A", "Task-B"}, ""
	err := st.Validate()
	if err == nil || !strings.Contains(err.Error(), "task: none given, and several tasks are configured (Task-A, Task-B): name one (e.g. Task-A)") {
		t.Errorf("got %v", err)
	}
	st.Tasks = []string{"Task-A"}
	if err := st.Validate(); err == nil || !strings.Contains(err.Error(), `task: "" is not supported (supported: [Task-A])`) {
		t.Errorf("one task, none named: %v", err)
	}
}

// A preset is used only for its own task; one stored before presets had a task is not
// refused.
func TestCheckPresetTask(t *testing.T) {
	for _, tc := range []struct {
		preset, task string
		ok           bool
	}{{"A", "A", true}, {"", "A", true}, {"A", "", true}, {"A", "B", false}} {
		err := session.CheckPresetTask(session.Preset{Name: "p", Task: tc.preset}, tc.task)
		if (err == nil) != tc.ok {
			t.Errorf("preset of %q for task %q: %v", tc.preset, tc.task, err)
		}
	}
}

// A session of a task the configuration no longer holds fails with that said, on resume,
// instead of running in no space.
func TestSessionOfARemovedTaskFails(t *testing.T) {
	h := newHarness(t, t.TempDir())
	eng, err := session.NewEngine(session.EngineConfig{Store: configStore{h.db}, Trainer: h.tr, Sampler: h.sampler,
		Spaces: map[string]*session.Space{"Task-A": session.DefaultSpace()}, SessionsDir: filepath.Join(h.dir, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := settings(session.ModeAutomatic)
	st.Task = "Task-Gone"
	now := time.Now().UTC()
	s := session.Session{ID: "0123456789abcdef", State: session.StateInterrupted, Settings: st, Owner: session.System,
		Base: session.DefaultSpace().Defaults(), BestTrial: -1, CreatedAt: now, UpdatedAt: now}
	if err := h.db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Resume(ctx, s.ID, session.System); err != nil {
		t.Fatal(err)
	}
	got, err := eng.Wait(ctx, s.ID)
	if err != nil || got.State != session.StateFailed || !strings.Contains(got.Reason, "task Task-Gone has no reward space in this configuration (configured: Task-A)") {
		t.Errorf("resumed session of a removed task: %v, %s: %s", err, got.State, got.Reason)
	}
}

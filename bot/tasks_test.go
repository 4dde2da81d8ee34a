package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/session"
)

// With several tasks (issue 30, item 3) the handler reads a preset in its own task's space,
// refuses a start that names no task with the list, and refuses an import when no task is
// the default.
func TestHandlerWithSeveralTasks(t *testing.T) {
	f := newFixture(t, nil)
	b := session.DefaultSpace()
	for i := range b.Terms {
		if b.Terms[i].Name == "foot_slip" {
			b.Terms[i].Default = -0.3
		}
	}
	spaces := map[string]*session.Space{"Task-A": session.DefaultSpace(), "Task-B": b}
	defaults := session.DefaultSettings()
	defaults.Tasks, defaults.Task = []string{"Task-A", "Task-B"}, ""
	h := bot.NewHandler(bot.HandlerConfig{Engine: f.eng, Store: f.db, Space: session.DefaultSpace(),
		SpaceOf: func(task string) *session.Space { return spaces[task] }, Defaults: defaults,
		Allow: bot.AllowList{{Platform: "slack", Users: []string{"U1"}}}})
	do := func(text string) bot.Reply {
		return h.Do(context.Background(), bot.Interaction{Platform: "slack", User: alice, Kind: bot.KindCommand, Text: text})
	}
	if r := do("start fallback=true"); !strings.Contains(r.Text, "several tasks are configured (Task-A, Task-B): name one (e.g. Task-A)") {
		t.Errorf("a start naming no task: %+v", r)
	}
	cfg := b.Defaults() // task B's defaults: foot_slip -0.3
	if err := f.db.SavePreset(context.Background(), session.Preset{Name: "of-b", Task: "Task-B", Config: cfg, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r := do("preset show of-b")
	if r.Card == nil || len(r.Card.Blocks) == 0 {
		t.Fatalf("preset show: %+v", r)
	}
	if text := r.Card.Blocks[0].Text; !strings.Contains(text, "task:      Task-B") || strings.Contains(text, "foot_slip") {
		t.Errorf("task B's preset is not shown against task B's defaults:\n%s", text)
	}
	if r := do(`import x {"weights": {"foot_slip": -0.4}}`); !strings.Contains(r.Text, "set session.task in the config") {
		t.Errorf("an import with no default task: %+v", r)
	}
}

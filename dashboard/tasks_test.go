package dashboard_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A daemon that tunes several tasks shows each session's task on its page (issue 30,
// item 3): the session's view carries it, and the page's header line prints it.
func TestSessionPageShowsItsTask(t *testing.T) {
	f := newFixture(t)
	v := decode(t, f.signIn(t, eve).get("/api/sessions/"+sid))
	s, _ := v["session"].(map[string]any)
	if s["task"] != "Unitree-Go2-Flat" {
		t.Errorf("the session's view carries task %v, want Unitree-Go2-Flat", s["task"])
	}
	js, err := os.ReadFile(filepath.Join("assets", "app.js"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `s.run_name + " · " + s.task + " · "`) {
		t.Error("the session page's header line does not print the session's task")
	}
}

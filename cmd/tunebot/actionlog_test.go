package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/store"
)

var (
	ann = session.Actor{Platform: "slack", ID: "U0ALICE", Name: "ann", Where: "C0123"}
	ben = session.Actor{Platform: "discord", ID: "123456789012345678", Name: "ben"}
)

// Each action reaching the audit log is logged once at info level with who did it, on
// which platform, to which session; the rest of the audit log is not.
func TestActionLogLogsWhoDidWhat(t *testing.T) {
	tests := []struct {
		name  string
		entry session.AuditEntry
		want  string // the log line, "" for none
	}{
		{"start", session.AuditEntry{SessionID: "s1", Kind: "session_started", Actor: ann, Detail: map[string]any{
			"settings": session.Settings{Mode: "approval", TrialCount: 8}, "preset": ""}},
			`level=INFO msg="session started" user=ann user_id=U0ALICE platform=slack where=C0123 session=s1 mode=approval trials=8`},
		{"approve", session.AuditEntry{SessionID: "s1", Kind: "decision", Actor: ben, Detail: map[string]any{"proposal": "p", "seq": 2, "action": "approve", "feedback": ""}},
			`level=INFO msg="proposal approved" user=ben user_id=123456789012345678 platform=discord session=s1 action=approve seq=2`},
		{"reject keeps the feedback text out of the log", session.AuditEntry{SessionID: "s1", Kind: "decision", Actor: ben, Detail: map[string]any{"seq": 3, "action": "reject", "feedback": "too jumpy"}},
			`msg="proposal rejected" user=ben user_id=123456789012345678 platform=discord session=s1 action=reject seq=3`},
		{"edit", session.AuditEntry{SessionID: "s1", Kind: "decision", Actor: ann, Detail: map[string]any{"seq": 4, "action": "edit"}},
			`msg="proposal edited and approved" user=ann`},
		{"pause", session.AuditEntry{SessionID: "s1", Kind: "pause", Actor: ann}, `msg="session paused" user=ann user_id=U0ALICE platform=slack where=C0123 session=s1`},
		{"paused by tunebot", session.AuditEntry{SessionID: "s1", Kind: "paused", Actor: session.System, Detail: map[string]any{"reason": "budget"}},
			`msg="session paused" user=tunebot user_id=tunebot platform=tunebot session=s1 reason=budget`},
		{"resume", session.AuditEntry{SessionID: "s1", Kind: "resume", Actor: ben, Detail: map[string]any{"from": "paused"}}, `msg="session resumed" user=ben user_id=123456789012345678 platform=discord session=s1 from=paused`},
		{"cancel", session.AuditEntry{SessionID: "s1", Kind: "cancel", Actor: ben}, `msg="session cancelled" user=ben`},
		{"apply", session.AuditEntry{SessionID: "s1", Kind: "apply", Actor: ann, Detail: map[string]any{"preset": "go2-s1", "branch": "tunebot/go2-s1", "commit": "abc123", "reverted": false, "reason": ""}},
			`msg="preset applied" user=ann user_id=U0ALICE platform=slack where=C0123 session=s1 preset=go2-s1 branch=tunebot/go2-s1 commit=abc123 reverted=false`},
		{"apply undone", session.AuditEntry{SessionID: "s1", Kind: "apply", Actor: ann, Detail: map[string]any{"preset": "go2-s1", "reverted": true, "reason": "tests failed"}},
			`msg="preset apply undone" user=ann user_id=U0ALICE platform=slack where=C0123 session=s1 reason="tests failed" preset=go2-s1 reverted=true`},
		{"rollback", session.AuditEntry{Kind: "rollback", Actor: session.Actor{Platform: "cli", ID: "ops"}, Detail: map[string]any{"preset": "go2-s1", "revert_commit": "def456"}},
			`msg="apply rolled back" user=ops user_id=ops platform=cli preset=go2-s1 revert_commit=def456`},
		{"refused", session.AuditEntry{SessionID: "s1", Kind: "refused", Actor: ben, Detail: map[string]any{"command": "cancel", "permission": "cancel"}},
			`msg="action refused" user=ben user_id=123456789012345678 platform=discord session=s1 command=cancel permission=cancel`},
		{"not an action", session.AuditEntry{SessionID: "s1", Kind: "proposal_created", Actor: session.System}, ""},
		{"advisor request", session.AuditEntry{Kind: "advisor_request", Actor: session.System}, ""},
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			a := actionLog{DB: db, log: slog.New(slog.NewTextHandler(&buf, nil))}
			if err := a.Append(context.Background(), tt.entry); err != nil {
				t.Fatal(err)
			}
			got := strings.TrimSpace(buf.String())
			switch {
			case tt.want == "" && got != "":
				t.Errorf("logged %q", got)
			case tt.want != "" && (strings.Count(got, "\n") != 0 || !strings.Contains(got, tt.want)):
				t.Errorf("logged\n%s\nwant a line with\n%s", got, tt.want)
			}
			if strings.Contains(got, "too jumpy") {
				t.Errorf("a reject's feedback reached the log: %s", got)
			}
		})
	}
	// The entries are in the audit log as before.
	all, err := db.Audit(context.Background(), "")
	if err != nil || len(all) != len(tests) {
		t.Errorf("audit log holds %d entries (%v), want %d", len(all), err, len(tests))
	}
}

// eventChan is a notifier that hands the engine's events to the test.
type eventChan chan session.Event

func (c eventChan) Notify(_ context.Context, e session.Event) { c <- e }

// The engine that tune and run build logs who started, decided, paused, resumed and
// cancelled, through the same store it audits with.
func TestEngineActionsAreLogged(t *testing.T) {
	cfg := simConfig(t)
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	events := make(eventChan, 1000)
	ctx := context.Background()
	a, err := openApp(ctx, cfg, &env{getenv: func(string) string { return "" }}, logger, events)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	st := cfg.Session
	st.Mode, st.Fallback, st.TrialCount, st.Rungs = session.ModeApproval, true, 4, []int{20, 40, 60}
	s, err := a.engine.Start(ctx, st, ann)
	if err != nil {
		t.Fatal(err)
	}
	waitProposal := func() {
		t.Helper()
		for {
			select {
			case e := <-events:
				if e.Kind == session.EventProposalReady {
					return
				}
			case <-time.After(time.Minute): // a bound against a hang, not a timing assertion
				t.Fatalf("no proposal; log:\n%s", buf.String())
			}
		}
	}
	waitProposal()
	if _, err := a.engine.Decide(ctx, session.DecideRequest{SessionID: s.ID, Action: session.ActionReject, Feedback: "too jumpy", By: ben}); err != nil {
		t.Fatal(err)
	}
	waitProposal()
	if _, err := a.engine.Pause(ctx, s.ID, ann); err != nil {
		t.Fatal(err)
	}
	if _, err := a.engine.Resume(ctx, s.ID, ben); err != nil {
		t.Fatal(err)
	}
	if _, err := a.engine.Cancel(ctx, s.ID, ann); err != nil {
		t.Fatal(err)
	}
	wantLines(t, grepLines(buf.String(), "user="), "", // the lines that name a user
		`level=INFO msg="session started" user=ann user_id=U0ALICE platform=slack where=C0123 session=`+s.ID+` mode=approval trials=4`,
		`level=INFO msg="proposal rejected" user=ben user_id=123456789012345678 platform=discord session=`+s.ID+` action=reject seq=1`,
		`level=INFO msg="session paused" user=ann user_id=U0ALICE platform=slack where=C0123 session=`+s.ID,
		`level=INFO msg="session resumed" user=ben user_id=123456789012345678 platform=discord session=`+s.ID+` from=paused`,
		`level=INFO msg="session cancelled" user=ann`,
	)
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

package session_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tunebot/session"
	"tunebot/store"
)

// sessionAuditReads is the harness's store, counting reads of one session's whole audit.
type sessionAuditReads struct {
	configStore
	reads *atomic.Int32
}

func (s sessionAuditReads) Audit(ctx context.Context, id string) ([]session.AuditEntry, error) {
	if id != "" {
		s.reads.Add(1)
	}
	return s.configStore.Audit(ctx, id)
}

// TestTokenBudgetReadsNoWholeAudit: a session with an advisor-token budget pauses once its
// audited advisor calls reach it, and the check, which runs at every step of the loop,
// reads the store's count of the session's tokens, never the session's whole audit (it
// read all of it each time; issue 36).
func TestTokenBudgetReadsNoWholeAudit(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Each proposal is one audited call of 100 tokens, as the DeepSeek advisor audits it.
	adv := &scriptAdvisor{fn: func(req session.ProposalRequest) (session.Suggestion, error) {
		e := session.AuditEntry{SessionID: req.SessionID, Kind: session.AuditKindAdvisorCall, Actor: session.System,
			Detail: map[string]any{"outcome": "ok", "usage": map[string]any{"total_tokens": 100}}}
		if err := db.Append(context.Background(), e); err != nil {
			return session.Suggestion{}, err
		}
		return improving(req)
	}}
	var reads atomic.Int32
	eng, err := session.NewEngine(session.EngineConfig{Store: sessionAuditReads{configStore{db}, &reads}, Trainer: newFakeTrainer(),
		Advisor: adv, Space: session.DefaultSpace(), SessionsDir: filepath.Join(dir, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Shutdown(ctxDone())
	st := settings(session.ModeAutomatic)
	st.BudgetTokens = 250
	s, err := eng.Start(context.Background(), st, console)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s, err = eng.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if s.State != session.StatePaused || !strings.Contains(s.Reason, "300 of 250 advisor tokens used") {
		t.Errorf("state %s, reason %q; want paused at 300 of 250 tokens", s.State, s.Reason)
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("the engine read the session's whole audit %d times", n)
	}
}

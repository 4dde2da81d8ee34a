package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/secret"
	"tunebot/session"
	"tunebot/store"
)

// TestTrainerPrintedKeyNotInStoreBytes: a trainer that read a key and printed it before
// failing put the key in the trial's and the session's reason and log tail, which the store
// kept raw, 4 copies of it, and its backups (issue 44, item 5). Every record is redacted on
// its way to bbolt, whatever wrote it: the data file's bytes and a backup's hold the key in
// no form (raw, JSON-escaped), and what is read back is masked and still decodes.
func TestTrainerPrintedKeyNotInStoreBytes(t *testing.T) {
	const key = `sk-printed-0123456789"<&>`
	path := filepath.Join(t.TempDir(), "tunebot.db")
	db, err := store.Open(path, store.Options{Timeout: time.Second, Redact: secret.NewRedactor(key)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	reason := "exit status 1; train.log ends: key is " + key
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.CreateSession(ctx, session.Session{ID: "s1", CreatedAt: t0, Reason: reason, Settings: session.Settings{RunName: "run-" + key}}))
	_, err = db.UpdateSession(ctx, "s1", func(s *session.Session) error { s.Message = reason; return nil })
	must(err)
	must(db.PutTrial(ctx, session.Trial{SessionID: "s1", Number: 1, Reason: reason, LogTail: "loading\n" + key + "\nTraceback"}))
	must(db.PutTrialAudited(ctx, session.Trial{SessionID: "s1", Number: 2, Reason: reason}, session.AuditEntry{Time: t0, SessionID: "s1", Kind: "trial", Detail: map[string]any{"reason": reason}}))
	must(db.PutProposal(ctx, session.Proposal{ID: "p1", SessionID: "s1", Seq: 1, Rationale: reason}))
	must(db.SavePreset(ctx, session.Preset{Name: "go2-" + key, SessionID: "s1"}))
	must(db.PutSeries(ctx, session.SeriesKey{SessionID: "s1", Number: 1, Tag: "Loss/" + key}, []session.Point{{Step: 1, Value: 1}}))
	_, err = db.Enqueue(ctx, bot.OutboxItem{Platform: "slack", Thread: "T1", Kind: "message", Body: []byte(`{"text":` + jsonString(reason) + `}`), CreatedAt: t0})
	must(err)
	_, err = db.Enqueue(ctx, bot.OutboxItem{Platform: "slack", Thread: "T1", Kind: "upload", Body: []byte("not json: " + key), CreatedAt: t0})
	must(err)
	must(db.PutSchedule(ctx, store.Schedule{ID: "sch1", Spec: reason}))
	var backup bytes.Buffer
	_, err = db.Backup(ctx, &backup)
	must(err)

	trials, err := db.Trials(ctx, "s1")
	must(err)
	s, err := db.Session(ctx, "s1")
	must(err)
	if len(trials) != 2 || trials[0].Reason != "exit status 1; train.log ends: key is [redacted]" || s.Reason != trials[0].Reason || s.Settings.RunName != "run-[redacted]" {
		t.Errorf("read back: session %q %q, trials %+v", s.Reason, s.Settings.RunName, trials)
	}
	must(db.Close())
	file, err := os.ReadFile(path)
	must(err)
	for what, b := range map[string][]byte{"the data file": file, "a backup": backup.Bytes()} {
		for _, form := range []string{key, "sk-printed-0123456789", jsonString(key)} {
			if n := bytes.Count(b, []byte(form)); n > 0 {
				t.Errorf("%s holds the key %d times (as %s)", what, n, form)
			}
		}
	}
}

// jsonString is s as a JSON string literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

package preset_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/preset"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer"
)

var alice = session.Actor{Platform: "slack", ID: "U1", Name: "alice"}

func openStore(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func tuned(space *session.Space) session.RewardConfig {
	c := space.Defaults()
	c.Weights["foot_slip"] = -0.5
	c.Weights["joint_acc_l2"] = -2.5e-7
	c.Params["foot_gait.period"] = 0.55
	return c
}

func TestExportIsTheRewardConfigFile(t *testing.T) {
	p := session.Preset{Name: "x", Config: session.RewardConfig{
		Weights: map[string]float64{"b": -2.5e-7, "a": 1},
		Params:  map[string]float64{"p.q": 0.7071},
	}}
	want := `{
  "weights": {
    "a": 1,
    "b": -2.5e-7
  },
  "params": {
    "p.q": 0.7071
  }
}
`
	for i := 0; i < 3; i++ { // map order must not leak into the bytes
		if got := string(preset.Export(p)); got != want {
			t.Fatalf("Export:\n%s\nwant:\n%s", got, want)
		}
	}
	empty := string(preset.Export(session.Preset{Name: "e"}))
	if strings.Contains(empty, "null") {
		t.Errorf("an empty preset exports null maps:\n%s", empty)
	}
}

func TestRoundTripExportImportStart(t *testing.T) {
	ctx := context.Background()
	space := session.DefaultSpace()
	db := openStore(t)
	orig := session.Preset{Name: "auto-tune-0123abcd", SessionID: "0123abcd89", Trial: session.TrialRef{Number: 5, Rung: 2},
		Config: tuned(space), Score: 0.21, Task: "Unitree-Go2-Flat", CreatedAt: time.Now().UTC()}
	if err := db.SavePreset(ctx, orig); err != nil {
		t.Fatal(err)
	}
	data := preset.Export(orig)
	got, err := preset.Import(ctx, db, space, "Unitree-Go2-Flat", "copy", data, alice)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if !got.Config.Equal(orig.Config) {
		t.Errorf("imported config differs: %s", cmp.Diff(orig.Config, got.Config))
	}
	if !bytesEqual(preset.Export(got), data) {
		t.Errorf("re-export differs from the export")
	}
	stored, err := db.Preset(ctx, "copy")
	if err != nil {
		t.Fatal(err)
	}
	if stored.SessionID != "" || !preset.Imported(stored) || !cmp.Equal(stored.Approvers, []string{"alice"}) || stored.Task != "Unitree-Go2-Flat" {
		t.Errorf("stored import: session %q approvers %v task %q, want imported, [alice] and the task it was imported for", stored.SessionID, stored.Approvers, stored.Task)
	}
	audit, err := db.Audit(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 1 || audit[0].Kind != "preset_imported" || audit[0].Actor.ID != alice.ID || audit[0].Detail["preset"] != "copy" {
		t.Errorf("audit = %+v, want one preset_imported entry by alice", audit)
	}

	// A session seeded from the imported preset starts from exactly its configuration.
	eng, err := session.NewEngine(session.EngineConfig{
		Store: db, Trainer: blockingTrainer{}, Sampler: noAdvisor{}, Space: space, SessionsDir: filepath.Join(t.TempDir(), "sessions"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Shutdown(ctx)
	st := session.DefaultSettings()
	st.Preset, st.Fallback = "copy", true
	s, err := eng.Start(ctx, st, alice)
	if err != nil {
		t.Fatalf("Start from preset: %v", err)
	}
	if !s.Base.Equal(orig.Config) {
		t.Errorf("session base differs from the preset: %s", cmp.Diff(orig.Config, s.Base))
	}
	if _, err := eng.Cancel(ctx, s.ID, alice); err != nil {
		t.Fatal(err)
	}
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

type blockingTrainer struct{ trainer.Layout }

func (blockingTrainer) Train(ctx context.Context, _ session.TrainJob, _ session.JobHooks) (session.TrainResult, error) {
	<-ctx.Done()
	return session.TrainResult{}, ctx.Err()
}
func (blockingTrainer) Evaluate(ctx context.Context, _ session.EvalJob, _ session.JobHooks) (session.Evaluation, error) {
	<-ctx.Done()
	return session.Evaluation{}, ctx.Err()
}
func (blockingTrainer) EndOrphan(context.Context, session.Proc) error { return nil }

type noAdvisor struct{}

func (noAdvisor) Propose(context.Context, session.ProposalRequest) (session.Suggestion, error) {
	return session.Suggestion{}, errors.New("not used")
}

func TestImportRefusals(t *testing.T) {
	ctx := context.Background()
	space := session.DefaultSpace()
	good := preset.Export(session.Preset{Config: space.Defaults()})
	bad := space.Defaults()
	bad.Weights["foot_slip"] = 0.5         // sign and bounds
	bad.Weights["is_terminated"] = 0       // may not be 0
	bad.Weights["foot_slipp"] = -0.1       // unknown, misspelt
	delete(bad.Params, "foot_gait.period") // missing: the default stands in
	tests := []struct {
		name, preset string
		data         []byte
		wantUser     bool
		want         []string
	}{
		{"bad name", "../etc", good, true, []string{`preset name "../etc" is not allowed`}},
		{"name too long", strings.Repeat("a", 65), good, true, []string{"is not allowed"}},
		{"empty name", "", good, true, []string{"is not allowed"}},
		{"name read as a flag", "--help", good, true, []string{`preset name "--help" is not allowed`, "starting with a letter or digit"}},
		{"malformed", "p1", []byte(`{"weights": {`), false, []string{"malformed JSON"}},
		{"not numbers", "p1", []byte(`{"weights": {"pose": "1"}, "params": {}, "extra": 1}`), false,
			[]string{`unknown field "extra"`, "must be a number, got the string"}},
		{"every problem named", "p1", preset.Export(session.Preset{Config: bad}), false, []string{
			"weights.foot_slip: 0.5 is outside its bounds", "weights.is_terminated: this term may not be 0",
			"weights.foot_slipp: unknown term (did you mean foot_slip?)"}},
		{"too big", "p1", []byte(strings.Repeat(" ", preset.MaxImportBytes+1)), true, []string{"bytes"}},
		{"taken", "taken", good, true, []string{"preset taken already exists; presets are immutable, pick another name"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := openStore(t)
			if err := db.SavePreset(ctx, session.Preset{Name: "taken", Config: space.Defaults()}); err != nil {
				t.Fatal(err)
			}
			_, err := preset.Import(ctx, db, space, "Unitree-Go2-Flat", tc.preset, tc.data, alice)
			if err == nil {
				t.Fatal("Import accepted it")
			}
			var ue *session.UserError
			var ie *session.InvalidError
			if tc.wantUser && !errors.As(err, &ue) || !tc.wantUser && !errors.As(err, &ie) {
				t.Errorf("error %T %v: want a user error %v, else an invalid error", err, err, tc.wantUser)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.preset == "taken" && !errors.Is(err, session.ErrExists) {
				t.Errorf("a taken name should wrap ErrExists: %v", err)
			}
			if ps, _ := db.Presets(ctx); len(ps) != 1 {
				t.Errorf("a refused import stored something: %d presets", len(ps))
			}
		})
	}
}

func TestGet(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	_, err := preset.Get(ctx, db, "nope")
	var ue *session.UserError
	if !errors.As(err, &ue) || !errors.Is(err, session.ErrNotFound) || !strings.Contains(err.Error(), "preset nope does not exist") {
		t.Errorf("Get of a missing preset: %v", err)
	}
}

func TestFormat(t *testing.T) {
	space := session.DefaultSpace()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ps := []session.Preset{
		{Name: "old", SessionID: "aaaaaaaabbbb", Trial: session.TrialRef{Number: 3, Rung: 1}, Score: 0.1, Config: space.Defaults(), CreatedAt: t0},
		{Name: "new", SessionID: "ccccccccdddd", Trial: session.TrialRef{Number: 7, Rung: 2}, Score: 0.25, ScoreStd: 0.02,
			Config: tuned(space), Approvers: []string{"alice"}, Task: "Unitree-Go2-Flat", CreatedAt: t0.Add(time.Hour),
			Metrics: session.Metrics{"fall_rate": 0.01}},
		{Name: "file", Config: space.Defaults(), CreatedAt: t0.Add(-time.Hour)},
	}
	ps[1].Gain = &session.Gain{Score: 0.313, SE: 0.012, Rung: 2, Session: "eeeeeeeeffff", Final: true}
	ps[1].BuiltOn = "preset old"
	ps[1].Outcome = session.OutcomeWithinNoise
	ps[1].Verdict = &session.Verdict{Gain: 0.004, SE: 0.01, Lower: -0.017, Seeds: []int{7301, 7302, 7303}}
	list := preset.FormatList(ps)
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != 4 || !regexp.MustCompile(`^name +gain vs defaults \(equal training\) +outcome +built on +origin +task +trainer +created$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^new +\+0\.313 ± 0\.012 @ rung 2 +within the noise +preset old +session cccccccc, trial 7 @ rung 2 +Unitree-Go2-Flat +— +2025-03-01 13:00Z$`).MatchString(lines[1]) ||
		!regexp.MustCompile(`^old +not recorded +— +— +session aaaaaaaa`).MatchString(lines[2]) || !regexp.MustCompile(`^file +n/a \(imported\) +— +— +imported`).MatchString(lines[3]) {
		t.Errorf("FormatList:\n%s", list)
	}
	if got := preset.FormatList(nil); !strings.Contains(got, "no presets yet") {
		t.Errorf("FormatList(nil) = %q", got)
	}
	show := preset.FormatShow(ps[1], space)
	for _, w := range []string{"preset new", "gain vs defaults (equal training):\n             +0.313 ± 0.012 at rung 2 against the defaults trained as long (session eeeeeeee's baseline, which it builds on; its final evaluation on fresh seeds)",
		"outcome:   within the noise\n             +0.004 ± 0.010 on fresh seeds 7301–7303 (paired, 95 % lower bound -0.017): within the noise\n             apply refuses it unless told --unconfirmed",
		"built on:  preset old", "score:     +0.250 ± 0.020 (vs its session's baseline at rung 0", "approved:  alice",
		"fall_rate", "foot_slip", "-0.25 → -0.5 (×2.00)", "params.foot_gait.period", "0.6 → 0.55"} {
		if !strings.Contains(show, w) {
			t.Errorf("FormatShow does not say %q:\n%s", w, show)
		}
	}
	if strings.Contains(show, "joint_acc_l2") {
		t.Errorf("FormatShow lists an unchanged value:\n%s", show)
	}
	if show := preset.FormatShow(ps[2], space); !strings.Contains(show, "origin:    imported") || !strings.Contains(show, "configuration: the defaults") || strings.Contains(show, "score:") {
		t.Errorf("FormatShow of an imported default preset:\n%s", show)
	}
}

func TestBestPolicy(t *testing.T) {
	const sid = "0123456789abcdef"
	p := session.Preset{Name: "best", SessionID: sid, Trial: session.TrialRef{Number: 4, Rung: 2}}
	// The engine stores the path the trainer reported, relative to the session directory.
	trial := session.Trial{SessionID: sid, Number: 4, Rung: 2, Policy: "trial-004-rung-2/policy.onnx"}
	below := trial
	below.Policy = "trial-004-rung-2/exported/policy.onnx"
	unrecorded := trial
	unrecorded.Policy, unrecorded.RunDir = "", "trial-004-rung-2"
	escaping := trial
	escaping.Policy = "../policy.onnx"
	outside := filepath.Join(t.TempDir(), "policy.onnx")
	if err := os.WriteFile(outside, make([]byte, 10), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		layout  func(t *testing.T, runDir string)
		p       session.Preset
		trial   session.Trial
		limit   int64
		wantRel string // path relative to the run dir
		want    string // error text
	}{
		{"top", writePolicy("policy.onnx", 100), p, trial, 1000, "policy.onnx", ""},
		{"below", writePolicy("exported/policy.onnx", 100), p, below, 0, "exported/policy.onnx", ""},
		{"too big", writePolicy("policy.onnx", 2048), p, trial, 1024, "", "is 2.0 KiB, above the 1.0 KiB upload limit; on the GPU machine it is "},
		{"missing", func(t *testing.T, d string) { mkdir(t, d) }, p, trial, 0, "", "no longer on disk"},
		{"no run dir", func(t *testing.T, d string) {}, p, trial, 0, "", "no longer on disk"},
		{"no recorded policy", writePolicy("policy.onnx", 100), p, unrecorded, 0, "", "has no recorded policy; look for it in run directory trial-004-rung-2 of session 01234567"},
		{"recorded path escapes", writePolicy("policy.onnx", 100), p, escaping, 0, "", "has no recorded policy"},
		{"imported", writePolicy("policy.onnx", 1), session.Preset{Name: "f"}, trial, 0, "", "imported from a file"},
		{"other trial", writePolicy("policy.onnx", 1), p, session.Trial{SessionID: sid, Number: 4, Rung: 1}, 0, "", "names trial 4 @ rung 2"},
		{"not an id", writePolicy("policy.onnx", 1), session.Preset{Name: "x", SessionID: "../x", Trial: p.Trial},
			session.Trial{SessionID: "../x", Number: 4, Rung: 2}, 0, "", "is not an id"},
		{"symlink out", func(t *testing.T, d string) {
			mkdir(t, d)
			if err := os.Symlink(outside, filepath.Join(d, "policy.onnx")); err != nil {
				t.Fatal(err)
			}
		}, p, trial, 0, "", "policy.onnx leads outside"},
		{"run dir links out", func(t *testing.T, d string) {
			mkdir(t, filepath.Dir(d))
			if err := os.Symlink(filepath.Dir(outside), d); err != nil {
				t.Fatal(err)
			}
		}, p, trial, 0, "", "trial-004-rung-2/policy.onnx leads outside"},
		{"a FIFO", func(t *testing.T, d string) {
			mkdir(t, d)
			if err := syscall.Mkfifo(filepath.Join(d, "policy.onnx"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, p, trial, 0, "", "policy.onnx is a named pipe (FIFO), not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			runDir := filepath.Join(root, sid, "trial-004-rung-2")
			tc.layout(t, runDir)
			f, err := preset.BestPolicy(root, tc.p, tc.trial, tc.limit)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("BestPolicy error = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if want := filepath.Join(runDir, tc.wantRel); f.Path() != want || f.Size() != 100 {
				t.Errorf("BestPolicy = %s, %d; want %s, 100", f.Path(), f.Size(), want)
			}
		})
	}
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
}

func writePolicy(rel string, size int) func(t *testing.T, runDir string) {
	return func(t *testing.T, runDir string) {
		p := filepath.Join(runDir, rel)
		mkdir(t, filepath.Dir(p))
		if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// preset list and show say which trainer made a preset, and show says a sim preset is
// refused by apply without --from-sim.
func TestFormatSaysWhichTrainerMadeIt(t *testing.T) {
	space := session.DefaultSpace()
	p := session.Preset{Name: "demo-1a2b3c4d", SessionID: "1a2b3c4d5e", Config: space.Defaults(), Task: "Unitree-Go2-Flat", Trainer: session.TrainerSim}
	if got := preset.FormatList([]session.Preset{p}); !strings.Contains(got, "trainer") || !strings.Contains(got, "  sim  ") {
		t.Errorf("list %q does not name the trainer", got)
	}
	if got := preset.FormatShow(p, space); !strings.Contains(got, "trainer:   the built-in sim") || !strings.Contains(got, "--from-sim") {
		t.Errorf("show %q does not say the sim made it and apply refuses it", got)
	}
	if err := preset.CheckApplicable(p, false); err == nil {
		t.Error("a sim preset is applicable without --from-sim")
	}
	p.Trainer = session.TrainerMjlab
	p.Versus = &session.Versus{Score: 0.058, ControlRung: 2, Rung: 2}
	if got := preset.FormatShow(p, space); !strings.Contains(got, "trainer:   mjlab") || strings.Contains(got, "--from-sim") ||
		!strings.Contains(got, "+0.058 vs baseline @ rung 2") {
		t.Errorf("show of an mjlab preset %q", got)
	}
	if err := preset.CheckApplicable(p, false); err != nil {
		t.Errorf("an mjlab preset is refused: %v", err)
	}
}

// Every preset list ranks by the one figure comparable across sessions, the gain vs the
// defaults at equal training, highest first; presets without a known gain follow; ties and
// the unknown go newest first (issue 43, item 7.10).
func TestPresetListRanksByGain(t *testing.T) {
	space := session.DefaultSpace()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	gain := func(v float64) *session.Gain { return &session.Gain{Score: v, Rung: 2} }
	ps := []session.Preset{
		{Name: "low", SessionID: "s1", Gain: gain(0.05), CreatedAt: t0.Add(3 * time.Hour)},
		{Name: "unknown-new", SessionID: "s2", Gain: &session.Gain{Unknown: "no session it builds on trained the defaults"}, CreatedAt: t0.Add(2 * time.Hour)},
		{Name: "mid-old", SessionID: "s3", Gain: gain(0.1), CreatedAt: t0.Add(-2 * time.Hour)},
		{Name: "high", SessionID: "s4", Gain: gain(0.3), CreatedAt: t0},
		{Name: "unrecorded-old", SessionID: "s5", CreatedAt: t0.Add(-time.Hour)},
		{Name: "mid-new", SessionID: "s6", Gain: gain(0.1), CreatedAt: t0.Add(time.Hour)},
		{Name: "imported", Gain: gain(9), CreatedAt: t0.Add(4 * time.Hour)},
	}
	for i := range ps {
		ps[i].Config = space.Defaults()
	}
	want := []string{"high", "mid-new", "mid-old", "low", "imported", "unknown-new", "unrecorded-old"}
	lines := strings.Split(strings.TrimSpace(preset.FormatList(ps)), "\n")[1:]
	var got []string
	for _, l := range lines {
		got = append(got, strings.Fields(l)[0])
	}
	if !slices.Equal(got, want) {
		t.Errorf("preset list order %v, want %v", got, want)
	}
}

package bot_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"tunebot/apply/applytest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"tunebot/apply"
	"tunebot/bot"
	"tunebot/bot/bottest"
	"tunebot/preset"
	"tunebot/schedule"
	"tunebot/secret"
	"tunebot/session"
	"tunebot/store"
	"tunebot/trainer"
)

func TestParseOps(t *testing.T) {
	sp := session.DefaultSpace()
	start := func(kv ...string) []bot.Override {
		var out []bot.Override
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, bot.Override{Key: kv[i], Raw: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		in      string
		want    bot.Command
		wantErr string
	}{
		{"preset show", "preset show auto-tune-1a2b", bot.Command{Verb: bot.VerbPreset, Sub: "show", Preset: "auto-tune-1a2b", Rung: -1}, ""},
		{"preset list is presets", "preset LIST", bot.Command{Verb: bot.VerbPresets, Rung: -1}, ""},
		{"preset export is export", "preset export p1", bot.Command{Verb: bot.VerbExport, Preset: "p1", Rung: -1}, ""},
		{"preset bare", "preset", bot.Command{}, "usage: preset show NAME"},
		{"preset typo", "preset shwo p1", bot.Command{}, "did you mean show?"},
		{"preset show path", "preset show ../../etc/passwd", bot.Command{}, "is not a preset name"},
		{"preset show two", "preset show a b", bot.Command{}, "usage: preset show NAME"},
		{"import code block", "import mine ```json\n{\"weights\": {}}\n```", bot.Command{Verb: bot.VerbImport, Preset: "mine", Data: `{"weights": {}}`, Rung: -1}, ""},
		{"import plain", "import mine   {\"weights\": {},\n \"params\": {}}", bot.Command{Verb: bot.VerbImport, Preset: "mine", Data: "{\"weights\": {},\n \"params\": {}}", Rung: -1}, ""},
		{"import curly quotes", "import mine `{“weights”: {}}`", bot.Command{Verb: bot.VerbImport, Preset: "mine", Data: `{"weights": {}}`, Rung: -1}, ""},
		{"preset import", "preset import mine {}", bot.Command{Verb: bot.VerbImport, Preset: "mine", Data: "{}", Rung: -1}, ""},
		{"import without JSON", "import mine", bot.Command{}, "needs the preset's JSON"},
		{"import without name", "import", bot.Command{}, "usage: import NAME"},
		{"import bad name", "import ../x {}", bot.Command{}, "is not a preset name"},
		{"policy", "policy p1", bot.Command{Verb: bot.VerbPolicy, Preset: "p1", Rung: -1}, ""},
		{"policy bare", "policy", bot.Command{}, "usage: policy PRESET"},
		{"apply", "apply p1", bot.Command{Verb: bot.VerbApply, Preset: "p1", Rung: -1}, ""},
		{"apply bare", "apply", bot.Command{}, "usage: apply PRESET"},
		{"apply shell", "apply $(reboot)", bot.Command{}, "is not a preset name"},
		{"apply rollback", "apply rollback", bot.Command{}, "/tune rollback"},
		{"apply typo", "aplly p1", bot.Command{}, "did you mean apply?"},
		{"rollback", "rollback", bot.Command{Verb: bot.VerbRollback, Rung: -1}, ""},
		{"rollback args", "rollback abc", bot.Command{}, "rollback takes no arguments"},
		{"rollback typo", "rolback", bot.Command{}, "did you mean rollback?"},
		{"schedule add", `schedule add "0 2 * * *" mode=approval trials=12`, bot.Command{Verb: bot.VerbSchedule, Sub: "add", Spec: "0 2 * * *",
			Args: "mode=approval trials=12", Start: start("mode", "approval", "trial_count", "12"), Rung: -1}, ""},
		{"schedule add curly quotes and if_busy", "schedule add “30 1 * * 1-5”  if_busy=WAIT trials = 8", bot.Command{Verb: bot.VerbSchedule, Sub: "add", Spec: "30 1 * * 1-5",
			Args: "trials=8", IfBusy: "wait", Start: start("trial_count", "8"), Rung: -1}, ""},
		{"schedule add single quotes, defaults", "schedule add '@weekly'", bot.Command{Verb: bot.VerbSchedule, Sub: "add", Spec: "@weekly", Rung: -1}, ""},
		{"schedule add descriptor unquoted", "schedule add @daily trials=8", bot.Command{Verb: bot.VerbSchedule, Sub: "add", Spec: "@daily",
			Args: "trials=8", Start: start("trial_count", "8"), Rung: -1}, ""},
		{"schedule add @every unquoted", "schedule add @every 2h fallback=true", bot.Command{Verb: bot.VerbSchedule, Sub: "add", Spec: "@every 2h",
			Args: "fallback=true", Start: start("fallback", "true"), Rung: -1}, ""},
		{"schedule add five unquoted fields", "schedule add 0 2 * * * start trials=8", bot.Command{Verb: bot.VerbSchedule, Sub: "add", Spec: "0 2 * * *",
			Args: "trials=8", Start: start("trial_count", "8"), Rung: -1}, ""},
		{"schedule add spec without quotes", "schedule add 0 2 * * trials=8", bot.Command{}, "put the cron spec in quotes"},
		{"schedule add open quote", `schedule add "0 2 * * * trials=8`, bot.Command{}, "closing quote is missing"},
		{"schedule add bad start key", `schedule add "@daily" sede=4 trials=x`, bot.Command{}, `schedule refused: its start arguments:`},
		{"schedule add start key typo named", `schedule add "@daily" sede=4`, bot.Command{}, "did you mean seed?"},
		{"schedule add bad if_busy", `schedule add "@daily" if_busy=maybe`, bot.Command{}, "if_busy=maybe: must be skip or wait"},
		{"schedule add nothing", "schedule add", bot.Command{}, "needs a cron spec in quotes"},
		{"schedule add long spec", `schedule add "` + strings.Repeat("1,", 60) + `1 * * * *"`, bot.Command{}, "at most 100"},
		{"schedule list", "schedule list", bot.Command{Verb: bot.VerbSchedule, Sub: "list", Rung: -1}, ""},
		{"schedule list args", "schedule list all", bot.Command{}, "takes no arguments"},
		{"schedule remove", "schedule remove 1a2b3c4d", bot.Command{Verb: bot.VerbSchedule, Sub: "remove", ID: "1a2b3c4d", Rung: -1}, ""},
		{"schedule remove bare", "schedule remove", bot.Command{}, "usage: schedule remove ID"},
		{"schedule remove path", "schedule remove ../x", bot.Command{}, "is not a schedule id"},
		{"schedule typo", "schedule ad \"@daily\"", bot.Command{}, "did you mean add?"},
		{"schedule bare", "schedule", bot.Command{}, "usage: schedule add"},
		{"schedule verb typo", "schedul list", bot.Command{}, "did you mean schedule?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bot.ParseCommand(tc.in, sp)
			check(t, got, err, tc.want, tc.wantErr)
		})
	}
}

func TestConfirmIDs(t *testing.T) {
	long := strings.Repeat("p", 64) // the longest preset name
	id := bot.ConfirmID(bot.ButtonApplyConfirm, long, "0123456789abcdef")
	if len(id) > 100 {
		t.Errorf("confirm id is %d characters; Discord allows 100", len(id))
	}
	verb, target, nonce, err := bot.ParseConfirmID(id)
	if err != nil || verb != bot.ButtonApplyConfirm || target != long || nonce != "0123456789abcdef" {
		t.Errorf("ParseConfirmID(%q) = %q %q %q %v", id, verb, target, nonce, err)
	}
	for _, bad := range []string{
		"tune:apply:p1", "tune:apply:p1:0123456789abcdef:x", "tune:approve:p1:0123456789abcdef", "slack:apply:p1:0123456789abcdef",
		"tune:apply:../x:0123456789abcdef", "tune:apply:p1:0123", "tune:apply:p1:0123456789ABCDEF", "tune:rollback::0123456789abcdef",
	} {
		if _, _, _, err := bot.ParseConfirmID(bad); err == nil {
			t.Errorf("ParseConfirmID(%q) accepted", bad)
		}
	}
}

// recordingTrainer hands every training job to the test and fails it, so a started
// session shows what it was seeded with and then ends.
type recordingTrainer struct {
	trainer.Layout
	jobs chan session.TrainJob
}

func (r recordingTrainer) Train(_ context.Context, job session.TrainJob, _ session.JobHooks) (session.TrainResult, error) {
	select {
	case r.jobs <- job:
	default:
	}
	return session.TrainResult{}, errors.New("this test trains nothing")
}
func (recordingTrainer) Evaluate(context.Context, session.EvalJob, session.JobHooks) (session.Evaluation, error) {
	return session.Evaluation{}, errors.New("this test evaluates nothing")
}
func (recordingTrainer) EndOrphan(context.Context, session.Proc) error { return nil }

// fakeStarter is a schedule.Starter for schedules that never fire in these tests.
type fakeStarter struct{}

func (fakeStarter) StartScheduled(context.Context, bot.ScheduleEntry) (string, error) {
	return "", errors.New("not in this test")
}

type opsFixture struct {
	db          *store.DB
	sp          *session.Space
	h           *bot.Handler
	repo        string
	sessionsDir string
	jobs        chan session.TrainJob
	p1          session.Preset
}

type opsOptions struct {
	test        []string // the trainer's test command; nil: no applier
	policyLimit int64
	noSchedule  bool
	logger      *slog.Logger // the handler's and the applier's; nil: none
	redact      *secret.Redactor
}

// newOps wires a handler to the real store and engine, a real Applier on a temporary
// trainer checkout and a real Scheduler on a memory store. Alice may do anything, bob may
// apply, eve nothing.
func newOps(t *testing.T, o opsOptions) *opsFixture {
	t.Helper()
	ctx := context.Background()
	f := &opsFixture{db: openStore(t), sp: session.DefaultSpace(), sessionsDir: t.TempDir(), jobs: make(chan session.TrainJob, 4)}
	eng, err := session.NewEngine(session.EngineConfig{Store: f.db, Trainer: recordingTrainer{jobs: f.jobs}, Sampler: bottest.NoAdvisor{}, Space: f.sp, SessionsDir: f.sessionsDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	f.p1 = session.Preset{Name: "auto-tune-0123abcd", SessionID: "0123abcdef", Trial: session.TrialRef{Number: 5, Rung: 2},
		Config: f.sp.Defaults(), Score: 0.214, ScoreStd: 0.01, Task: "Unitree-Go2-Flat", CreatedAt: time.Now().UTC()}
	f.p1.Config.Weights["foot_slip"] = -0.5
	f.p1.Config.Weights["is_terminated"] = -250
	f.p1.Config.Params["foot_gait.period"] = 0.55
	if err := f.db.SavePreset(ctx, f.p1); err != nil {
		t.Fatal(err)
	}
	cfg := bot.HandlerConfig{Engine: eng, Store: f.db, Space: f.sp, SessionsDir: f.sessionsDir, PolicyLimit: o.policyLimit,
		Logger: o.logger, Redact: o.redact,
		Allow: bot.AllowList{
			{Platform: "slack", Users: []string{"U1"}},
			{Platform: "slack", Users: []string{"U2"}, Permissions: []bot.Permission{bot.PermApply}},
		}}
	if o.test != nil {
		f.repo = applytest.Repo(t)
		ap, err := apply.New(applytest.Config(f.repo, o.test...),
			f.sp, f.db, o.logger)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Applier = ap
	}
	if !o.noSchedule {
		sch, err := schedule.New(schedule.Options{Store: schedule.NewMemStore(), Starter: fakeStarter{}})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Scheduler = sch
	}
	f.h = bot.NewHandler(cfg)
	return f
}

func (f *opsFixture) cmd(who session.Actor, text string) bot.Reply {
	return f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: who, Channel: "C1", Kind: bot.KindCommand, Text: text})
}

func (f *opsFixture) click(who session.Actor, id string) bot.Reply {
	return f.h.Do(context.Background(), bot.Interaction{Platform: "slack", User: who, Channel: "C1", Kind: bot.KindAction, ActionID: id})
}

// refusals returns the audit's refused entries.
func (f *opsFixture) refusals(t *testing.T) []session.AuditEntry {
	t.Helper()
	all, err := f.db.Audit(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []session.AuditEntry
	for _, e := range all {
		if e.Kind == "refused" {
			for range refusalCount(e) { // an entry stands for each refusal it counts
				out = append(out, e)
			}
		}
	}
	return out
}

// refusalCount is how many refusals a coalesced "refused" entry counts.
func refusalCount(e session.AuditEntry) int {
	n, _ := e.Detail[session.CountKey].(float64)
	return int(n)
}

func (f *opsFixture) branches(t *testing.T) string {
	t.Helper()
	return applytest.Git(t, f.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads")
}

// actions returns the buttons of r's card.
func actions(t *testing.T, r bot.Reply) []bot.Action {
	t.Helper()
	if r.Card == nil {
		t.Fatalf("reply has no card: %+v", r)
	}
	for _, b := range r.Card.Blocks {
		if b.Kind == bot.BlockActions {
			return b.Actions
		}
	}
	t.Fatalf("card has no buttons: %+v", r.Card)
	return nil
}

func cardText(r bot.Reply) string {
	var b strings.Builder
	b.WriteString(r.Text)
	if r.Card != nil {
		for _, bl := range r.Card.Blocks {
			b.WriteString("\n" + bl.Text)
		}
	}
	return b.String()
}

func attachment(t *testing.T, r bot.Reply) bot.Attachment {
	t.Helper()
	if r.Card != nil {
		for _, b := range r.Card.Blocks {
			if len(b.Attachments) == 1 {
				return b.Attachments[0]
			}
		}
	}
	t.Fatalf("reply has no attachment: %+v", r)
	return bot.Attachment{}
}

func TestApplyNeedsConfirmAndRollsBack(t *testing.T) {
	f := newOps(t, opsOptions{test: []string{"true"}})
	mainSHA := applytest.Git(t, f.repo, "rev-parse", "main")

	preview := f.cmd(alice, "apply "+f.p1.Name)
	if !preview.Private || !strings.Contains(cardText(preview), `tasks/cfg.py:2  foot_slip: -0.25 → -0.5`) || !strings.Contains(cardText(preview), "is_terminated: -200.0 → -250.0") {
		t.Fatalf("preview does not show the diff:\n%s", cardText(preview))
	}
	if got := f.branches(t); got != "main" {
		t.Fatalf("a preview created branches: %q", got)
	}
	acts := actions(t, preview)
	if len(acts) != 2 {
		t.Fatalf("want Confirm and Cancel, got %+v", acts)
	}
	confirm := acts[0].ID

	// bob may apply but did not ask: his click does nothing and keeps alice's confirmation.
	if r := f.click(bob, confirm); !strings.Contains(r.Text, "only the person who asked") {
		t.Fatalf("bob's click: %+v", r)
	}
	// eve may not apply at all.
	if r := f.click(eve, confirm); !strings.Contains(r.Text, "not allowed") || !r.Private {
		t.Fatalf("eve's click: %+v", r)
	}

	r := f.click(alice, confirm)
	if !strings.Contains(r.Text+cardText(r), "applied by alice") || r.Private {
		t.Fatalf("confirm: %+v\n%s", r, cardText(r))
	}
	if got := f.branches(t); got != "main\ntunebot/"+f.p1.Name {
		t.Fatalf("branches after apply: %q", got)
	}
	if got := applytest.Git(t, f.repo, "show", "tunebot/"+f.p1.Name+":tasks/cfg.py"); !strings.Contains(got, `["foot_slip"].weight = -0.5`) {
		t.Errorf("the branch's file:\n%s", got)
	}
	if got := applytest.Git(t, f.repo, "rev-parse", "main"); got != mainSHA {
		t.Error("apply committed on main")
	}

	// A confirmation is answered once.
	if r := f.click(alice, confirm); !strings.Contains(r.Text, "unknown or has expired") {
		t.Fatalf("second click: %+v", r)
	}

	rb := f.cmd(alice, "rollback")
	applied := applytest.Git(t, f.repo, "rev-parse", "tunebot/"+f.p1.Name)
	if !rb.Private || !strings.Contains(cardText(rb), "reverts "+applied[:12]) {
		t.Fatalf("rollback preview: %s", cardText(rb))
	}
	rbActs := actions(t, rb)
	if r := f.click(alice, rbActs[1].ID); !strings.Contains(r.Text, "cancelled") {
		t.Fatalf("cancel: %+v", r)
	}
	if got := applytest.Git(t, f.repo, "rev-list", "--count", "tunebot/"+f.p1.Name); got != "2" {
		t.Fatalf("cancel changed the branch: %s commits", got)
	}
	rbActs = actions(t, f.cmd(alice, "rollback"))
	if r := f.click(alice, rbActs[0].ID); !strings.Contains(r.Text, "rolled back by alice") {
		t.Fatalf("rollback: %+v", r)
	}
	if got := applytest.Git(t, f.repo, "show", "tunebot/"+f.p1.Name+":tasks/cfg.py"); got+"\n" != applytest.TrainerCfg {
		t.Errorf("after rollback the branch's file is:\n%s", got)
	}
	if r := f.cmd(alice, "rollback"); !strings.Contains(r.Text, "no applied preset to roll back") {
		t.Errorf("rollback with nothing applied: %+v", r)
	}
	if n := len(f.refusals(t)); n != 3 {
		t.Errorf("%d refusals audited, want 3 (bob, eve, the second click)", n)
	}
}

func TestApplyRefusals(t *testing.T) {
	f := newOps(t, opsOptions{test: []string{"true"}})
	ctx := context.Background()

	t.Run("a forged confirmation", func(t *testing.T) {
		before := len(f.refusals(t))
		for _, id := range []string{
			bot.ConfirmID(bot.ButtonApplyConfirm, f.p1.Name, "0123456789abcdef"), // never issued
			bot.ConfirmID(bot.ButtonRollbackConfirm, "0123456789abcdef0123456789abcdef01234567", "fedcba9876543210"),
		} {
			if r := f.click(alice, id); !strings.Contains(r.Text, "unknown or has expired") || !r.Private {
				t.Errorf("%s: %+v", id, r)
			}
		}
		// A real nonce under another preset's name does not apply that preset.
		other := f.p1
		other.Name = "other"
		if err := f.db.SavePreset(ctx, other); err != nil {
			t.Fatal(err)
		}
		real := actions(t, f.cmd(alice, "apply "+f.p1.Name))[0].ID
		_, _, nonce, _ := bot.ParseConfirmID(real)
		if r := f.click(alice, bot.ConfirmID(bot.ButtonApplyConfirm, "other", nonce)); !strings.Contains(r.Text, "does not match") {
			t.Errorf("swapped preset: %+v", r)
		}
		if r := f.click(alice, "tune:apply:../../x:"+nonce); !strings.Contains(r.Text, "unknown action") {
			t.Errorf("malformed: %+v", r)
		}
		if got := f.branches(t); got != "main" {
			t.Errorf("a forged confirmation changed the checkout: %q", got)
		}
		if got := len(f.refusals(t)) - before; got != 3 {
			t.Errorf("%d refusals audited, want 3", got)
		}
	})

	t.Run("an unauthorised user", func(t *testing.T) {
		for _, text := range []string{"apply " + f.p1.Name, "rollback"} {
			before := len(f.refusals(t))
			r := f.cmd(eve, text)
			if !r.Private || !strings.Contains(r.Text, "not allowed") || !strings.Contains(r.Text, `"apply" permission`) {
				t.Errorf("%s by eve: %+v", text, r)
			}
			got := f.refusals(t)
			if len(got) != before+1 || got[len(got)-1].Actor.ID != eve.ID || got[len(got)-1].Detail["permission"] != "apply" {
				t.Errorf("%s by eve: refusal not audited: %+v", text, got)
			}
		}
	})

	// Issue 35 item 1: chat never commits part of a preset under its name.
	t.Run("a preset apply.edits covers in part", func(t *testing.T) {
		wide := f.p1
		wide.Name = "wide"
		wide.Config = session.Merge(f.p1.Config, session.Patch{Weights: map[string]float64{"pose": 1.5}})
		if err := f.db.SavePreset(ctx, wide); err != nil {
			t.Fatal(err)
		}
		r := f.cmd(alice, "apply wide")
		if r.Card != nil || !strings.Contains(r.Text, "cannot be applied whole") || !strings.Contains(r.Text, "pose = 1.5 (no edit in apply.edits names it)") ||
			!strings.Contains(r.Text, "--partial") {
			t.Errorf("apply of a preset the edits cover in part: %+v", r)
		}
		if got := f.branches(t); got != "main" {
			t.Errorf("the checkout changed: %q", got)
		}
	})

	t.Run("an unknown preset", func(t *testing.T) {
		if r := f.cmd(alice, "apply nope"); !strings.Contains(r.Text, "preset nope does not exist") {
			t.Errorf("%+v", r)
		}
	})

	t.Run("while a session is active", func(t *testing.T) {
		confirm := actions(t, f.cmd(alice, "apply other"))[0].ID // shown before the session began
		s := fixtureSession()
		s.State = session.StateAwaitingApproval
		if err := f.db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		for name, r := range map[string]bot.Reply{"preview": f.cmd(alice, "apply other"), "confirm": f.click(alice, confirm), "rollback": f.cmd(alice, "rollback")} {
			if !r.Private || !strings.Contains(r.Text, "uses the trainer checkout") {
				t.Errorf("%s during a session: %+v", name, r)
			}
		}
		if got := f.branches(t); got != "main" {
			t.Errorf("the checkout changed during a session: %q", got)
		}
	})
}

func TestApplyFailingTestsReverts(t *testing.T) {
	f := newOps(t, opsOptions{test: []string{"sh", "-c", "echo 3 tests failed: test_gait; exit 1"}})
	mainSHA := applytest.Git(t, f.repo, "rev-parse", "main")
	r := f.click(alice, actions(t, f.cmd(alice, "apply "+f.p1.Name))[0].ID)
	text := cardText(r)
	if !strings.Contains(text, "was reverted") || !strings.Contains(text, "3 tests failed: test_gait") {
		t.Fatalf("failed apply: %s", text)
	}
	if got := f.branches(t); got != "main" {
		t.Errorf("branches left: %q", got)
	}
	if got := applytest.Git(t, f.repo, "rev-parse", "main"); got != mainSHA {
		t.Error("main moved")
	}
	if got := applytest.Git(t, f.repo, "status", "--porcelain"); got != "" {
		t.Errorf("checkout not clean:\n%s", got)
	}
	if r := f.cmd(alice, "rollback"); !strings.Contains(r.Text, "no applied preset to roll back") {
		t.Errorf("a reverted apply can be rolled back: %+v", r)
	}
}

// TestApplyLeaksNoSecretToChat: an apply from chat whose test command prints its
// environment, and a key it found elsewhere, posts neither tunebot's secrets nor their
// names to the channel or the log.
func TestApplyLeaksNoSecretToChat(t *testing.T) {
	const key, token = "sk-planted-deepseek-0123456789", "xoxb-planted-slack-9876543210"
	t.Setenv("DEEPSEEK_API_KEY", key)
	t.Setenv("SLACK_BOT_TOKEN", token)
	leak := filepath.Join(t.TempDir(), "leak")
	if err := os.WriteFile(leak, []byte("found "+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	f := newOps(t, opsOptions{test: []string{"sh", "-c", `env; cat "$1"; exit 1`, "sh", leak},
		logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})),
		redact: secret.Process()})
	r := f.click(alice, actions(t, f.cmd(alice, "apply "+f.p1.Name))[0].ID)
	text := cardText(r)
	if !strings.Contains(text, "was reverted") || !strings.Contains(text, "PATH=") || !strings.Contains(text, "found [redacted]") {
		t.Fatalf("the failed apply's card does not show the test output, masked:\n%s", text)
	}
	for where, s := range map[string]string{"chat": text, "log": logged.String()} {
		for _, bad := range []string{key, token, "DEEPSEEK_API_KEY", "SLACK_BOT_TOKEN"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s shows %s:\n%s", where, bad, s)
			}
		}
	}
}

func TestOpsNotConfigured(t *testing.T) {
	f := newOps(t, opsOptions{noSchedule: true})
	for _, tc := range []struct{ text, want string }{
		{"apply auto-tune-0123abcd", "apply is not configured: set apply.repo"},
		{"rollback", "apply is not configured"},
		{"schedule list", "schedules are not configured"},
		{`schedule add "@daily"`, "schedules are not configured"},
	} {
		if r := f.cmd(alice, tc.text); !strings.Contains(r.Text, tc.want) {
			t.Errorf("%s: %+v, want %q", tc.text, r, tc.want)
		}
	}
}

func TestPresetRoundTrip(t *testing.T) {
	f := newOps(t, opsOptions{})
	ctx := context.Background()

	// export: the exact file --reward-config takes, attached.
	r := f.cmd(eve, "export "+f.p1.Name) // reading needs no permission
	att := attachment(t, r)
	if att.Name != f.p1.Name+".json" || att.ContentType != "application/json" || att.Size != len(att.Data) {
		t.Errorf("attachment %q type %q size %d of %d bytes", att.Name, att.ContentType, att.Size, len(att.Data))
	}
	if string(att.Data) != string(preset.Export(f.p1)) {
		t.Errorf("export attached:\n%s\nwant:\n%s", att.Data, preset.Export(f.p1))
	}
	cfg, err := session.DecodeConfig(att.Data)
	if err != nil {
		t.Fatalf("DecodeConfig refuses the export: %v", err)
	}
	if err := f.sp.CheckConfig(cfg); err != nil {
		t.Fatalf("CheckConfig refuses the export: %v", err)
	}
	if !cfg.Equal(f.p1.Config) {
		t.Errorf("exported config differs: %s", cmp.Diff(f.p1.Config, cfg))
	}

	// import, as pasted in a code block, then export again: the same bytes.
	r = f.cmd(alice, "import copy ```json\n"+string(att.Data)+"```")
	if !strings.Contains(r.Text, "preset copy imported by alice") || !strings.Contains(r.Text, "preset=copy") {
		t.Fatalf("import: %+v", r)
	}
	again := attachment(t, f.cmd(alice, "export copy"))
	if string(again.Data) != string(att.Data) {
		t.Errorf("re-export differs:\n%s\nwant:\n%s", again.Data, att.Data)
	}
	if r := f.cmd(alice, "import copy "+string(att.Data)); !strings.Contains(r.Text, "already exists") {
		t.Errorf("import over an existing preset: %+v", r)
	}
	if r := f.cmd(eve, "import mine "+string(att.Data)); !strings.Contains(r.Text, "not allowed") {
		t.Errorf("import by eve: %+v", r)
	}
	bad := strings.Replace(strings.Replace(string(att.Data), `"foot_slip": -0.5`, `"foot_slip": 3`, 1), `"pose": 1`, `"pose": -9`, 1)
	r = f.cmd(alice, "import bad "+bad)
	if !strings.Contains(r.Text, "foot_slip") || !strings.Contains(r.Text, "pose") {
		t.Errorf("a bad import names every problem: %+v", r)
	}
	if _, err := f.db.Preset(ctx, "bad"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("a bad import was saved: %v", err)
	}

	// preset show
	if got := cardText(f.cmd(eve, "preset show copy")); !strings.Contains(got, "origin:    imported") || !strings.Contains(got, "foot_slip") {
		t.Errorf("preset show:\n%s", got)
	}

	// A session started from the imported preset trains its baseline on it.
	r = f.cmd(alice, "start preset=copy fallback=true trials=4")
	if !strings.Contains(r.Text, "started by alice") || !strings.HasSuffix(r.Text, "; it starts from preset copy") {
		t.Fatalf("start: %+v", r)
	}
	select {
	case job := <-f.jobs:
		if !job.Config.Equal(f.p1.Config) || job.Settings.Preset != "copy" {
			t.Errorf("baseline trained on %s (preset %q)", cmp.Diff(f.p1.Config, job.Config), job.Settings.Preset)
		}
	case <-time.After(30 * time.Second): // a bound for a hang, not a measurement
		t.Fatal("the session never trained its baseline")
	}
}

func TestPolicyDownload(t *testing.T) {
	ctx := context.Background()
	f := newOps(t, opsOptions{policyLimit: 1024})
	onnx := []byte("\x08\x07onnx-bytes")
	path := bottest.PolicyTrial(t, f.db, f.sessionsDir, f.p1, onnx)
	att := attachment(t, f.cmd(eve, "policy "+f.p1.Name))
	if string(att.Data) != string(onnx) || att.ContentType != "application/octet-stream" || att.Name != f.p1.Name+"-policy.onnx" {
		t.Errorf("policy attachment %q %q %q", att.Name, att.ContentType, att.Data)
	}

	big := make([]byte, 2048)
	if err := os.WriteFile(path, big, 0o644); err != nil {
		t.Fatal(err)
	}
	r := f.cmd(eve, "policy "+f.p1.Name)
	if r.Card != nil || !strings.Contains(r.Text, "above the 1.0 KiB upload limit") || !strings.Contains(r.Text, filepath.Join(f.p1.SessionID, "trial-005-rung-2", "policy.onnx")) {
		t.Errorf("an oversized policy: %+v", r)
	}

	imported := session.Preset{Name: "imp", Config: f.sp.Defaults()}
	if err := f.db.SavePreset(ctx, imported); err != nil {
		t.Fatal(err)
	}
	if r := f.cmd(eve, "policy imp"); !strings.Contains(r.Text, "imported from a file") {
		t.Errorf("policy of an imported preset: %+v", r)
	}
	if r := f.cmd(eve, "policy nope"); !strings.Contains(r.Text, "does not exist") {
		t.Errorf("policy of no preset: %+v", r)
	}
}

func TestSchedules(t *testing.T) {
	f := newOps(t, opsOptions{})
	r := f.cmd(alice, `schedule add "0 2 * * *" if_busy=wait mode=approval trials=12`)
	if !strings.Contains(r.Text, "added by alice") || !strings.Contains(r.Text, "mode=approval trials=12") || !strings.Contains(r.Text, "busy: wait") {
		t.Fatalf("add: %+v", r)
	}
	list := cardText(f.cmd(eve, "schedule list"))
	id, _, _ := strings.Cut(strings.TrimSpace(list), " ")
	if !strings.Contains(list, `"0 2 * * *"`) || len(id) != 8 {
		t.Fatalf("list:\n%s", list)
	}
	if r := f.cmd(alice, `schedule add "0 2 * * *" trials=99`); !strings.Contains(r.Text, "trial_count") {
		t.Errorf("out-of-range start arguments: %+v", r)
	}
	// The scheduler refuses a bad cron spec, naming what is wrong (bot parses no cron).
	for _, tc := range []struct{ text, want string }{
		{`schedule add "0 25 * * *" trials=8`, `the hour field "25" is invalid`},
		{`schedule add "CRON_TZ=UTC 0 2 * * *"`, "may not set its own time zone"},
	} {
		if r := f.cmd(alice, tc.text); !strings.Contains(r.Text, tc.want) {
			t.Errorf("%s: %+v, want %q", tc.text, r, tc.want)
		}
	}
	for _, text := range []string{`schedule add "@daily"`, "schedule remove " + id} {
		before := len(f.refusals(t))
		if r := f.cmd(eve, text); !strings.Contains(r.Text, "not allowed") || !strings.Contains(r.Text, `"start" permission`) {
			t.Errorf("%s by eve: %+v", text, r)
		}
		if len(f.refusals(t)) != before+1 {
			t.Errorf("%s by eve: not audited", text)
		}
	}
	if r := f.cmd(alice, "schedule remove "+id); !strings.Contains(r.Text, "removed by alice") {
		t.Fatalf("remove: %+v", r)
	}
	if got := cardText(f.cmd(alice, "schedule list")); !strings.Contains(got, "no schedules") {
		t.Errorf("list after remove:\n%s", got)
	}
	if r := f.cmd(alice, "schedule remove "+id); !strings.Contains(r.Text, "there is no schedule") {
		t.Errorf("remove twice: %+v", r)
	}
	audit, _ := f.db.Audit(context.Background(), "")
	var kinds []string
	for _, e := range audit {
		if strings.HasPrefix(e.Kind, "schedule_") {
			kinds = append(kinds, e.Kind)
		}
	}
	if diff := cmp.Diff([]string{"schedule_added", "schedule_removed"}, kinds); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

func TestAttachmentContentTypeSurvivesTheOutbox(t *testing.T) {
	in := bot.Message{Session: "s1", Card: bot.Card{Ref: "r", Blocks: []bot.Block{{Kind: bot.BlockAttachments, Attachments: []bot.Attachment{
		{Name: "a.png", Data: []byte("png")}, {Name: "p.json", Data: []byte("{}\n"), ContentType: "application/json"}}}}}}
	body, err := bot.EncodeMessage(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := bot.DecodeMessage(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in.Card.Blocks, out.Card.Blocks, cmpopts.IgnoreFields(bot.Attachment{}, "Size")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPresetsListTheGainOverTheDefaults (issue 35 item 4): chat's preset list ranks presets
// by the one comparable figure, under a heading that says what it is, with what each was
// built on; a preset saved before the figure was recorded says so rather than show a score
// against another baseline.
func TestPresetsListTheGainOverTheDefaults(t *testing.T) {
	f := newOps(t, opsOptions{})
	later := f.p1
	later.Name, later.Score, later.BuiltOn = "later", 0.245, "preset "+f.p1.Name
	later.Gain = &session.Gain{Score: 0.313, Rung: 2, Session: f.p1.SessionID}
	if err := f.db.SavePreset(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	r := f.cmd(alice, "presets")
	var table *bot.Table
	for _, b := range r.Card.Blocks {
		if b.Kind == bot.BlockTable {
			table = b.Table
		}
	}
	if table == nil {
		t.Fatalf("no table: %+v", r)
	}
	col := slices.Index(table.Columns, "gain vs defaults (equal training)")
	built := slices.Index(table.Columns, "built on")
	if col < 0 || built < 0 || slices.Contains(table.Columns, "score") {
		t.Fatalf("columns %v", table.Columns)
	}
	rows := map[string][]string{}
	for _, row := range table.Rows {
		rows[row[0]] = row
	}
	if got := rows["later"]; got[col] != "+0.313 @ rung 2" || got[built] != "preset "+f.p1.Name {
		t.Errorf("later's row %v", got)
	}
	if got := rows[f.p1.Name]; got[col] != "not recorded" || got[built] != "—" {
		t.Errorf("an older preset's row %v, want its figure said not recorded", got)
	}
	// Ranked by it: the known gain first, whatever the names or dates (issue 43, item 7.10).
	if table.Rows[0][0] != "later" {
		t.Errorf("rows %v, want later's, with a known gain, first", table.Rows)
	}
}

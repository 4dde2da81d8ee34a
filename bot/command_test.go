package bot_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"tunebot/bot"
	"tunebot/session"
)

func TestParseReply(t *testing.T) {
	sp := session.DefaultSpace()
	for _, tc := range []struct {
		name    string
		in      string
		want    bot.Command
		wantErr string // substring of the error a person sees
	}{
		{"approve", "approve", bot.Command{Verb: bot.VerbApprove, Rung: -1}, ""},
		{"mixed case and spaces", "   APProve   ", bot.Command{Verb: bot.VerbApprove, Rung: -1}, ""},
		{"approve with args", "approve now please", bot.Command{}, "approve takes at most a proposal number, as in approve 4"},
		// several proposals may wait at once (issue 14): a decision may name one by number
		{"approve N", "approve 4", bot.Command{Verb: bot.VerbApprove, Rung: -1, Proposal: 4}, ""},
		{"approve #N", "Approve #12", bot.Command{Verb: bot.VerbApprove, Rung: -1, Proposal: 12}, ""},
		{"approve N and more", "approve 4 5", bot.Command{}, `approve takes at most a proposal number, as in approve 4 (got "5")`},
		{"approve 0 is no number", "approve 0", bot.Command{}, "approve takes at most a proposal number"},
		{"approve -1 is no number", "approve -1", bot.Command{}, "approve takes at most a proposal number"},
		{"reject N keeps feedback verbatim", "reject 4   Too timid;  try X", bot.Command{Verb: bot.VerbReject, Proposal: 4, Feedback: "Too timid;  try X", Rung: -1}, ""},
		{"reject #N", "reject #7 no", bot.Command{Verb: bot.VerbReject, Proposal: 7, Feedback: "no", Rung: -1}, ""},
		{"reject N without reason", "reject 4", bot.Command{}, "reject N <feedback> for proposal N"},
		{"reject feedback starting with a word", "reject 4x too big", bot.Command{Verb: bot.VerbReject, Feedback: "4x too big", Rung: -1}, ""},
		{"edit N", "edit 5 pose=1.2", bot.Command{Verb: bot.VerbEdit, Rung: -1, Proposal: 5, Edits: []bot.Assignment{{Kind: "weight", Name: "pose", Value: 1.2}}}, ""},
		{"edit N without edits", "edit 5", bot.Command{}, "edit needs at least one term=value"},
		{"reject keeps feedback verbatim", "reject  Too timid; try FOOT_SLIP", bot.Command{Verb: bot.VerbReject, Feedback: "Too timid; try FOOT_SLIP", Rung: -1}, ""},
		{"reject without reason", "reject", bot.Command{}, "reject needs a reason"},
		{"reject shell metacharacters are text", "reject ; rm -rf / $(x) `id`", bot.Command{Verb: bot.VerbReject, Feedback: "; rm -rf / $(x) `id`", Rung: -1}, ""},
		{"edit", "edit pose=1.2 foot_gait.period = 0.5 foot_slip=-", bot.Command{Verb: bot.VerbEdit, Rung: -1, Edits: []bot.Assignment{
			{Kind: "weight", Name: "pose", Value: 1.2}, {Kind: "param", Name: "foot_gait.period", Value: 0.5}, {Kind: "weight", Name: "foot_slip", Remove: true}}}, ""},
		{"edit prefixed names", "edit weights.pose=1e-1 params.foot_gait.period=.5", bot.Command{Verb: bot.VerbEdit, Rung: -1, Edits: []bot.Assignment{
			{Kind: "weight", Name: "pose", Value: 0.1}, {Kind: "param", Name: "foot_gait.period", Value: 0.5}}}, ""},
		{"edit NaN", "edit pose=NaN", bot.Command{}, `pose: "NaN" is not a decimal number`},
		{"edit 1e999", "edit pose=1e999", bot.Command{}, `pose: "1e999" is not a finite number`},
		{"edit inf", "edit pose=+Inf", bot.Command{}, "not a decimal number"},
		{"edit hex", "edit pose=0x1p-2", bot.Command{}, "not a decimal number"},
		{"edit typo", "edit pos=1.2", bot.Command{}, "did you mean pose?"},
		{"edit off", "edit foot_slip=off", bot.Command{}, "write foot_slip=0 to switch the term off"},
		{"edit every problem named", "edit pose=x bogus=1 foot_slip", bot.Command{}, `pose: "x" is not a decimal number; "bogus": unknown term; "foot_slip": expected term=value`},
		{"edit twice", "edit pose=1 pose=2", bot.Command{}, "pose: given twice"},
		{"edit empty", "edit", bot.Command{}, "edit needs at least one term=value"},
		{"edit shell", "edit pose=$(rm -rf /)", bot.Command{}, "is not a decimal number"},
		{"pause", "pause", bot.Command{Verb: bot.VerbPause, Rung: -1}, ""},
		{"status", "Status", bot.Command{Verb: bot.VerbStatus, Rung: -1}, ""},
		{"typo one word", "aprove", bot.Command{}, "did you mean approve?"},
		{"typo with feedback", "rejct too timid", bot.Command{}, "did you mean reject?"},
		{"typo edit", "edt pose=1", bot.Command{}, "did you mean edit?"},
		{"comment", "nice curve, looks stable", bot.Command{Verb: bot.VerbComment, Text: "nice curve, looks stable"}, ""},
		{"comment empty", "", bot.Command{Verb: bot.VerbComment}, ""},
		{"comment unicode", "很好 👍 approve later", bot.Command{Verb: bot.VerbComment, Text: "很好 👍 approve later"}, ""},
		{"fullwidth is not a verb", "ａｐｐｒｏｖｅ", bot.Command{Verb: bot.VerbComment, Text: "ａｐｐｒｏｖｅ"}, ""},
		{"shell comment", "; rm -rf /", bot.Command{Verb: bot.VerbComment, Text: "; rm -rf /"}, ""},
		{"backticks comment", "`reboot`", bot.Command{Verb: bot.VerbComment, Text: "`reboot`"}, ""},
		{"start is not a reply", "start", bot.Command{}, "start is a /tune command"},
		{"10 KB", strings.Repeat("a", 10<<10), bot.Command{}, "commands are at most 4000"},
		{"10 KB reject", "reject " + strings.Repeat("é", 3000), bot.Command{}, "feedback is 3000 characters; at most 2000"},
		{"invalid utf8", "approve \xff", bot.Command{}, "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bot.ParseReply(tc.in, sp)
			check(t, got, err, tc.want, tc.wantErr)
		})
	}
}

func check(t *testing.T, got bot.Command, err error, want bot.Command, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil {
			t.Fatalf("accepted as %+v; want error containing %q", got, wantErr)
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %q does not contain %q", err, wantErr)
		}
		var ue *session.UserError
		var ie *session.InvalidError
		if !errors.As(err, &ue) && !errors.As(err, &ie) {
			t.Errorf("error %T is not user-facing", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(bot.Override{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseCommand(t *testing.T) {
	sp := session.DefaultSpace()
	for _, tc := range []struct {
		name    string
		in      string
		want    bot.Command
		wantErr string
	}{
		{"empty is help", "", bot.Command{Verb: bot.VerbHelp}, ""},
		{"blank is help", " \t ", bot.Command{Verb: bot.VerbHelp}, ""},
		{"help", "HELP", bot.Command{Verb: bot.VerbHelp, Rung: -1}, ""},
		{"status", "status", bot.Command{Verb: bot.VerbStatus, Rung: -1}, ""},
		{"presets", "presets", bot.Command{Verb: bot.VerbPresets, Rung: -1}, ""},
		{"best", "best", bot.Command{Verb: bot.VerbBest, Rung: -1}, ""},
		{"agent", "agent", bot.Command{Verb: bot.VerbAgent, Rung: -1}, ""},
		{"dashboard", "dashboard", bot.Command{Verb: bot.VerbDashboard, Rung: -1}, ""},
		{"dashboard takes no arguments", "dashboard now", bot.Command{}, "takes no arguments"},
		{"export", "export auto-tune-1a2b3c4d", bot.Command{Verb: bot.VerbExport, Preset: "auto-tune-1a2b3c4d", Rung: -1}, ""},
		{"export path", "export ../../etc/passwd", bot.Command{}, "is not a preset name"},
		{"export none", "export", bot.Command{}, "usage: export PRESET"},
		{"chart", "chart 3", bot.Command{Verb: bot.VerbChart, Trial: 3, Rung: -1}, ""},
		{"chart rung tags", "chart 3@1 Train/mean_reward Episode_Reward/pose", bot.Command{Verb: bot.VerbChart, Trial: 3, Rung: 1, Tags: []string{"Train/mean_reward", "Episode_Reward/pose"}}, ""},
		{"chart bad trial", "chart three", bot.Command{}, `"three" is not a trial number`},
		{"chart bad tag", "chart 3 $(x)", bot.Command{}, "not a tag name"},
		{"unknown verb", "frobnicate", bot.Command{}, `unknown command "frobnicate"`},
		{"typo", "statsu", bot.Command{}, "did you mean status?"},
		{"typo start", "strat trials=4", bot.Command{}, "did you mean start?"},
		{"approve is a thread reply", "approve", bot.Command{}, "unknown command"},
		{"shell", "; rm -rf /", bot.Command{}, "unknown command"},
		{"subshell", "$(x)", bot.Command{}, "unknown command"},
		{"unicode", "开始", bot.Command{}, "unknown command"},
		{"10 KB", strings.Repeat("start ", 2000), bot.Command{}, "commands are at most 4000"},
		{"start bare", "start", bot.Command{Verb: bot.VerbStart, Rung: -1}, ""},
		{"start every type checked", "start trials=many fallback=maybe rungs=1,x gpus=-1 sede=4 mode", bot.Command{},
			`trial_count: "many" is not a whole number; fallback: "maybe" is not true or false; rungs: "1,x" is not a comma-separated list of whole numbers; gpus: "-1" is not a comma-separated list of whole numbers; sede: unknown setting (did you mean seed?); "mode": expected key=value`},
		{"start twice", "start trials=4 trial_count=5", bot.Command{}, "trial_count: given twice"},
		{"start preset path", "start preset=../x", bot.Command{}, "preset: \"../x\" must match"},
		{"start run_name flag", "start run_name=--resume", bot.Command{}, `run_name: "--resume" must match`},
		{"start preset flag", "start preset=-x", bot.Command{}, `preset: "-x" must match`},
		{"start from a flag", "start from=-x", bot.Command{}, `from: "-x" is not a session id`},
		{"start from where", "start from=ab12 start=latest", bot.Command{}, `from_start: "latest" is not best or defaults`},
		{"start from twice", "start start=best from_start=defaults", bot.Command{}, "from_start: given twice"},
		{"export flag", "export -x", bot.Command{}, `"-x" is not a preset name`},
		{"import flag", `import -x {"weights":{}}`, bot.Command{}, `"-x" is not a preset name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bot.ParseCommand(tc.in, sp)
			check(t, got, err, tc.want, tc.wantErr)
		})
	}
}

func TestStartSettings(t *testing.T) {
	sp := session.DefaultSpace()
	_, err := bot.ParseCommand("start MODE=approval trials=6 fallback=true rungs=100,200,300 gpus=0,1 seed=7 patience=2 name=run.1 control=yes", sp)
	if err == nil || !strings.Contains(err.Error(), `control: "yes" is not true or false`) {
		t.Fatalf("control=yes: %v", err)
	}
	cmd, err := bot.ParseCommand("start MODE=approval trials=6 fallback=true rungs=100,200,300 gpus=0,1 seed=7 patience=2 name=run.1", sp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cmd.Settings(session.DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	want := session.DefaultSettings()
	want.Mode, want.TrialCount, want.Fallback, want.Rungs, want.GPUs, want.Seed, want.Patience, want.RunName =
		session.ModeApproval, 6, true, []int{100, 200, 300}, []int{0, 1}, 7, 2, "run.1"
	want.Promote = []int{6, 4, 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}

	// from= and start= name the earlier session and where the new one starts.
	cmd, err = bot.ParseCommand("start from=AB12cd start=Defaults", sp)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = cmd.Settings(session.DefaultSettings()); err != nil || got.From != "AB12cd" || got.FromStart != session.FromDefaults {
		t.Errorf("from=AB12cd start=Defaults: from %q, start %q, %v", got.From, got.FromStart, err)
	}
	cmd, err = bot.ParseCommand("start start=best", sp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = cmd.Settings(session.DefaultSettings()); err == nil || !strings.Contains(err.Error(), "without from") {
		t.Errorf("start=best without from: %v", err)
	}

	// Range errors come from the session's own validation, every field named.
	cmd, err = bot.ParseCommand("start mode=fast trials=99 rungs=300,200,100 gpus=0,0 seed=-1", sp)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cmd.Settings(session.DefaultSettings())
	var ie *session.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("want *session.InvalidError, got %v", err)
	}
	for _, field := range []string{"mode:", "trial_count:", "rungs:", "gpus:", "seed:"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error does not name %s: %v", field, err)
		}
	}
}

func TestApplyEditsAndPatchText(t *testing.T) {
	sp := session.DefaultSpace()
	patch := session.Patch{Weights: map[string]float64{"pose": 1.25, "foot_slip": -0.5}, Params: map[string]float64{"foot_gait.period": 0.5}}
	cmd, err := bot.ParseReply("edit foot_slip=- pose=1.1 foot_clearance.target_height=0.12", sp)
	if err != nil {
		t.Fatal(err)
	}
	got := bot.ApplyEdits(patch, cmd.Edits)
	want := session.Patch{Weights: map[string]float64{"pose": 1.1}, Params: map[string]float64{"foot_gait.period": 0.5, "foot_clearance.target_height": 0.12}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if patch.Weights["foot_slip"] != -0.5 {
		t.Error("ApplyEdits modified its input")
	}
	text := bot.PatchText(got, sp)
	if text != "pose=1.1\nfoot_gait.period=0.5\nfoot_clearance.target_height=0.12" {
		t.Errorf("PatchText = %q", text)
	}
	back, err := bot.ParseAssignments(text, sp, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, bot.ApplyEdits(session.Patch{Weights: map[string]float64{}, Params: map[string]float64{}}, back)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

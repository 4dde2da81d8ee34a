package bot

import (
	"fmt"
	"strings"
	"testing"

	"tunebot/session"
)

// TestReadsEndedSession: with no session named and none active, the read commands fall back
// to the newest session; the commands that change a session do not.
func TestReadsEndedSession(t *testing.T) {
	cases := map[Verb]bool{
		VerbStatus: true, VerbBest: true, VerbChart: true, VerbClip: true, VerbWhy: true,
		VerbPause: false, VerbResume: false, VerbCancel: false,
		VerbApprove: false, VerbReject: false, VerbEdit: false,
		VerbPrefer: false, VerbGo: false, VerbPromote: false, VerbDrop: false,
	}
	for v, want := range cases {
		if got := readsEndedSession(v); got != want {
			t.Errorf("readsEndedSession(%s) = %v, want %v", v, got, want)
		}
	}
}

// TestTrialRelatives: a trial's report compares it with its parent and, above rung 0, with
// the baseline that completed the same rung.
func TestTrialRelatives(t *testing.T) {
	done := session.TrialCompleted
	trials := []session.Trial{
		{Number: 0, Rung: 0, State: done},
		{Number: 3, Rung: 0, State: done},
		{Number: 0, Rung: 1, State: done},
		{Number: 3, Rung: 1, State: done},
		{Number: 0, Rung: 2, State: session.TrialFailed},
		{Number: 3, Rung: 2, State: done},
	}
	ref := func(n, rung int) *session.TrialRef { return &session.TrialRef{Number: n, Rung: rung} }
	cases := []struct {
		name                 string
		t                    session.Trial
		wantParent, wantCtrl *session.TrialRef
	}{
		{"rung 0 has no control", session.Trial{Number: 3, Rung: 0}, nil, nil},
		{"rung 1: parent and control", session.Trial{Number: 3, Rung: 1, Parent: ref(3, 0)}, ref(3, 0), ref(0, 1)},
		{"a control that did not complete", session.Trial{Number: 3, Rung: 2, Parent: ref(3, 1)}, ref(3, 1), nil},
		{"a parent not among the trials", session.Trial{Number: 5, Rung: 1, Parent: ref(5, 0)}, nil, ref(0, 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent, control := trialRelatives(c.t, trials)
			if !sameRef(parent, c.wantParent) || !sameRef(control, c.wantCtrl) {
				t.Errorf("trialRelatives = %v, %v; want %v, %v", parent, control, c.wantParent, c.wantCtrl)
			}
		})
	}
}

func sameRef(t *session.Trial, want *session.TrialRef) bool {
	if t == nil || want == nil {
		return t == nil && want == nil
	}
	return t.Ref() == *want
}

func TestCronSpec(t *testing.T) {
	cases := []struct {
		name, rest, wantSpec, wantAfter, wantErr string
	}{
		{"straight quotes", `"0 2 * * *" trials=8`, "0 2 * * *", " trials=8", ""},
		{"curly quotes", "“0 2 * * *” trials=8", "0 2 * * *", " trials=8", ""},
		{"a single quote closed by a curly one", "'0 2 * * *’ trials=8", "0 2 * * *", " trials=8", ""},
		{"a descriptor", "@daily trials=8", "@daily", "trials=8", ""},
		{"@every takes its duration", "@every 2h trials=8", "@every 2h", "trials=8", ""},
		{"five words that lost their quotes", "0 2 * * * trials=8", "0 2 * * *", "trials=8", ""},
		{"five words before start", "0 2 * * * start trials=8", "0 2 * * *", "start trials=8", ""},
		{"four words", "0 2 * * trials=8", "", "", "put the cron spec in quotes"},
		{"no closing quote", `"0 2 * * * trials=8`, "", "", "closing quote is missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec, after, err := cronSpec(c.rest)
			if refused(t, err, c.wantErr) {
				return
			}
			if err != nil || spec != c.wantSpec || after != c.wantAfter {
				t.Errorf("cronSpec = %q, %q, %v; want %q, %q", spec, after, err, c.wantSpec, c.wantAfter)
			}
		})
	}
}

func TestIfBusyArg(t *testing.T) {
	cases := []struct {
		name       string
		words      []string
		before     string
		wantArgs   string
		wantIfBusy string
		wantErr    string
	}{
		{"none", []string{"trials=8"}, "", "trials=8", "", ""},
		{"skip, any case", []string{"IF_BUSY=Skip", "trials=8"}, "", "trials=8", ScheduleSkip, ""},
		{"wait", []string{"trials=8", "if_busy=wait"}, "", "trials=8", ScheduleWait, ""},
		{"an unknown choice", []string{"if_busy=queue"}, "", "", "", "if_busy=queue: must be skip or wait"},
		{"twice", []string{"if_busy=skip", "if_busy=wait"}, "", "", "", "if_busy given twice"},
		{"given before", []string{"if_busy=wait"}, ScheduleSkip, "", "", "if_busy given twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args, ifBusy, err := ifBusyArg(c.words, c.before)
			if refused(t, err, c.wantErr) {
				return
			}
			if err != nil || strings.Join(args, " ") != c.wantArgs || ifBusy != c.wantIfBusy {
				t.Errorf("ifBusyArg = %q, %q, %v; want %q, %q", args, ifBusy, err, c.wantArgs, c.wantIfBusy)
			}
		})
	}
}

func TestProposalPrefix(t *testing.T) {
	cases := []struct {
		args     []string
		text     string
		wantN    int
		wantArgs string
		wantText string
	}{
		{[]string{"4", "too", "fast"}, "reject 4 too fast", 4, "too fast", " 4 too fast"},
		{[]string{"#12"}, "approve #12", 12, "", " #12"},
		{[]string{"too", "fast"}, "reject too fast", 0, "too fast", "reject too fast"},
		{[]string{"0"}, "approve 0", 0, "0", "approve 0"},
		{[]string{"+4"}, "approve +4", 0, "+4", "approve +4"},
		{nil, "approve", 0, "", "approve"},
	}
	for _, c := range cases {
		n, args, text := proposalPrefix(c.args, c.text)
		if n != c.wantN || strings.Join(args, " ") != c.wantArgs || text != c.wantText {
			t.Errorf("proposalPrefix(%q, %q) = %d, %q, %q; want %d, %q, %q", c.args, c.text, n, args, text, c.wantN, c.wantArgs, c.wantText)
		}
	}
}

func TestParseReject(t *testing.T) {
	cases := []struct {
		name, text, want, wantErr string
	}{
		{"a reason", "reject   too fast  ", "too fast", ""},
		{"no reason", "reject  ", "", "reject needs a reason"},
		{"a reason at the cap", "reject " + strings.Repeat("é", session.MaxFeedback), strings.Repeat("é", session.MaxFeedback), ""},
		{"a reason over the cap", "reject " + strings.Repeat("é", session.MaxFeedback+1), "", "feedback is 2001 characters; at most 2000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseReject(Command{Verb: VerbReject}, c.text)
			if refused(t, err, c.wantErr) {
				return
			}
			if err != nil || got.Feedback != c.want {
				t.Errorf("parseReject = %q, %v; want %q", got.Feedback, err, c.want)
			}
		})
	}
}

func TestParseExport(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"one name", []string{"brisk_v2"}, ""},
		{"none", nil, "usage: export PRESET"},
		{"two", []string{"a", "b"}, "usage: export PRESET"},
		{"not a name", []string{"../etc"}, "is not a preset name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseExport(Command{Verb: VerbExport}, c.args)
			if refused(t, err, c.wantErr) {
				return
			}
			if err != nil || got.Preset != c.args[0] {
				t.Errorf("parseExport = %+v, %v", got, err)
			}
		})
	}
}

func TestWholeNumbers(t *testing.T) {
	cases := []struct {
		raw     string
		want    string
		wantErr bool
	}{
		{"300,900,2000", "[300 900 2000]", false},
		{"0", "[0]", false},
		{"1,,2", "", true},
		{"-1", "", true},
		{"12345678", "", true},
		{"1, 2", "", true},
	}
	for _, c := range cases {
		got, err := wholeNumbers(c.raw)
		if (err != nil) != c.wantErr || (!c.wantErr && fmt.Sprint(got) != c.want) {
			t.Errorf("wholeNumbers(%q) = %v, %v; want %s (error: %v)", c.raw, got, err, c.want, c.wantErr)
		}
	}
	for raw, want := range map[string]int{"42": 42, "-3": -3, "+7": 7, "1.5": -1, "12345678901": -1, "x": -1} {
		got, err := wholeNumber(raw)
		if (err != nil) != (want == -1) || (err == nil && got != want) {
			t.Errorf("wholeNumber(%q) = %d, %v; want %d", raw, got, err, want)
		}
	}
}

// refused checks err against want ("": no error) and reports whether err was the refusal
// wanted, so that a case stops there.
func refused(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want one saying %q", err, want)
	}
	return true
}

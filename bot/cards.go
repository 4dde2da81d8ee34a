package bot

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"tunebot/session"
)

// PresetGainNote is said under every list of presets: what its figure is (preset.GainText).
const PresetGainNote = "each preset's figure is its trial's score against the task's defaults trained as long (its own session's baseline, or that of the session it builds on), so presets of different sessions rank by it; a preset's details also give its score against its own session's baseline"

// ScoreNote is said wherever a score is shown (docs/design.md §1).
const ScoreNote = "scores compare each trial with the baseline's rung-0 evaluation and are comparable within a rung"

// VersusNote explains a score "vs baseline @ rung r" beside the rung-0 one (session.VersusControl).
const VersusNote = "\"vs baseline @ rung\" recomputes a trial's score against the baseline trained as long (@ its rung), or says @ 0 where none was, and ranks the trials of a rung (★ the best)"

// FreshNote explains the "fresh seeds" column: the final evaluation, which measures the chosen
// trial and chooses nothing.
const FreshNote = "\"fresh seeds\" is the final evaluation of the chosen trial and the baseline beside it, on seeds that chose nothing (± the gain's standard error)"

// Card refs: one root, trial report and proposal card per session, each edited in place.
func rootRef(id string) string            { return "s/" + id + "/root" }
func trialRef(id string, n, r int) string { return fmt.Sprintf("s/%s/trial/%d/%d", id, n, r) }
func proposalRef(id, pid string) string   { return "s/" + id + "/proposal/" + pid }
func summaryRef(id string) string         { return "s/" + id + "/summary" }

// RootInput is what the session's root card shows.
type RootInput struct {
	Session session.Session
	Trials  []session.Trial // every trial of the session, as stored
	Current *session.Trial  // a trial with its newest progress, newer than its stored copy (nil: none)
	// Proposals is the session's proposals; every pending one is listed with the reply
	// that decides it (nil: not known, none listed).
	Proposals []session.Proposal
}

// RootCard is the session's live status message, edited in place: state, trials done,
// each running trial on its own line (RunningLine: several run at once with parallel
// trials, issue 14), every proposal waiting for a decision, best score and an ETA. /tune
// status, the terminal and the monitoring page show the same lines.
func RootCard(in RootInput) Card {
	s := in.Session
	st := s.Settings
	c := Card{Ref: rootRef(s.ID), Kind: "root", Session: s.ID,
		Title: fmt.Sprintf("tunebot session %s · %s", session.Short(s.ID), stateWord(s))}
	c.Blocks = append(c.Blocks, Block{Kind: BlockHeader, Text: c.Title})
	done0 := 0
	for _, t := range in.Trials {
		if t.Rung == 0 && t.State.Terminal() {
			done0++
		}
	}
	f := Fields(
		"owner", s.Owner.String(),
		"task", st.Task,
		"mode", st.Mode,
		"trials (rung 0)", fmt.Sprintf("%d/%d done", done0, st.TrialCount),
	)
	var running []session.Trial
	if s.State.Active() {
		running = RunningTrials(in.Trials, in.Current)
	}
	f.Fields = append(f.Fields, Field{"best", bestLine(s)})
	if eta, ok := ETA(s, in.Trials, running...); ok && s.State.Active() {
		f.Fields = append(f.Fields, Field{"ETA", eta})
	}
	f.Fields = append(f.Fields, Field{s.TimeLabel(), Duration(time.Duration(s.GPUSeconds * float64(time.Second)))})
	c.Blocks = append(c.Blocks, f)
	if len(running) > 0 {
		c.Blocks = append(c.Blocks, Text(bulleted(fmt.Sprintf("running now (%d):", len(running)), RunningLines(running, nil))))
	}
	if s.State.Active() {
		if pend := PendingLines(in.Proposals); len(pend) > 0 {
			c.Blocks = append(c.Blocks, Text(bulleted(fmt.Sprintf("waiting for a decision (%d):", len(Pending(in.Proposals))), pend)))
		}
	}
	if s.Message != "" {
		c.Blocks = append(c.Blocks, Text(s.Message))
	}
	return c
}

func stateWord(s session.Session) string {
	if s.State == session.StateSucceeded && s.Outcome != "" && s.Outcome != session.OutcomeImproved {
		return string(s.State) + " (" + s.Outcome + ")"
	}
	if s.PauseAsked {
		return session.StateLabel(s.State) + " (pausing)"
	}
	return session.StateLabel(s.State)
}

func bestLine(s session.Session) string {
	if s.BestTrial < 0 {
		return "none yet"
	}
	if s.BestTrial == 0 {
		// The baseline is best (the starred trial), never the tuned trial it beat.
		line := fmt.Sprintf("the baseline (trial 0 @ rung %d): no tuned trial beat it", s.BestRung)
		if s.Result != nil && s.Result.Best.Trial != 0 {
			line += "; " + s.Result.Headline()
		}
		return line
	}
	if s.Result != nil {
		return s.Result.Headline()
	}
	if s.BestRung > 0 {
		return fmt.Sprintf("trial %d @ rung %d: %s vs baseline @ rung 0, trained less", s.BestTrial, s.BestRung, Signed(s.BestScore))
	}
	return fmt.Sprintf("trial %d @ rung %d: %s vs baseline @ rung 0", s.BestTrial, s.BestRung, Signed(s.BestScore))
}

// ProgressBar draws k of n as a text bar of width cells with the percentage.
func ProgressBar(k, n, width int) string {
	frac := 0.0
	if n > 0 {
		frac = math.Max(0, math.Min(1, float64(k)/float64(n)))
	}
	full := int(math.Round(frac * float64(width)))
	return "[" + strings.Repeat("█", full) + strings.Repeat("░", width-full) + "] " + strconv.Itoa(int(math.Floor(frac*100))) + "%"
}

// ETA estimates the time left from the GPU time each finished iteration took so far: the
// iterations still planned (the remaining rung-0 trials and the promotions, and with control
// on the baseline carried along every rung beside them) times that rate, divided by the GPUs
// used at once; what the running trials already did is not left.
func ETA(s session.Session, trials []session.Trial, running ...session.Trial) (string, bool) {
	st := s.Settings
	var secs float64
	iters := 0
	done := map[int]int{}
	for _, t := range trials {
		if t.State.Terminal() {
			done[t.Rung]++
			if t.GPUSeconds > 0 {
				secs += t.GPUSeconds
				iters += t.Iterations - t.StartIter
			}
		}
	}
	if iters == 0 || len(st.Rungs) == 0 || len(st.GPUs) == 0 {
		return "", false
	}
	perIter := secs / float64(iters)
	left := 0
	for r := range st.Rungs {
		want := st.TrialCount
		if r < len(st.Promote) && r > 0 {
			want = st.Promote[r]
			if st.Control {
				want++ // the baseline trains to every rung in addition (docs/design.md §1)
			}
		}
		add := st.Rungs[r]
		if r > 0 {
			add -= st.Rungs[r-1]
		}
		left += max(0, want-done[r]) * add
	}
	for _, t := range running {
		left -= max(0, t.Progress-t.StartIter)
	}
	if left <= 0 {
		return "", false
	}
	d := time.Duration(perIter * float64(left) / float64(len(st.GPUs)) * float64(time.Second))
	unit := "GPU-s"
	if s.Trainer == session.TrainerSim {
		unit = "CPU-s"
	}
	return fmt.Sprintf("~%s (%.2f %s per iteration, %d iterations left; less if early stopping ends the search)", Duration(d), perIter, unit, left), true
}

// Duration formats d for people: 1h05m, 4m10s, 12s.
func Duration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

// Signed formats a score with its sign: +0.123.
func Signed(v float64) string { return session.SignedScore(v) }

// Percent formats an improvement fraction as a signed percentage: +12.3%.
func Percent(v float64) string {
	return strings.Replace(fmt.Sprintf("%+.1f%%", 100*v), "-0.0%", "+0.0%", 1) // never a negative zero
}

// Num formats a weight or param value compactly without losing small magnitudes (2.5e-07).
func Num(v float64) string { return strconv.FormatFloat(session.Measured(v), 'g', 4, 64) }

// Factor formats new/old of a change: ×1.50, or "new" when the old value was 0.
func Factor(c session.Change) string {
	if c.Old == 0 {
		return "switched on"
	}
	if c.New == 0 {
		return "switched off"
	}
	return fmt.Sprintf("×%.2f", c.Factor())
}

// DiffTable is a config diff as term / old / new / ×factor.
func DiffTable(caption string, changes []session.Change) *Table {
	t := &Table{Caption: caption, Columns: []string{"term", "old", "new", "×factor"}, Align: []string{"", "r", "r", "r"}}
	for _, c := range changes {
		t.Rows = append(t.Rows, []string{c.Label(), Num(c.Old), Num(c.New), Factor(c)})
	}
	return t
}

// TrialInput is what a trial report shows.
type TrialInput struct {
	Session     session.Session
	Trial       session.Trial
	Parent      *session.Trial // the trial its configuration (rung 0) or checkpoint builds on
	Space       *session.Space
	Attachments []Attachment // the charts, rendered off the engine's path
	Mentions    []string
	// Control is the baseline at the trial's rung (carried along), once it has a score: the
	// comparison at equal training. nil: none yet, or control is off.
	Control *session.Trial
	Link    string // the trial on the monitoring page, "" for none
}

// TrialCard is the report of a finished trial: score, objectives, eligibility, config
// diff from its parent and the charts.
func TrialCard(in TrialInput) Card {
	t, s := in.Trial, in.Session
	c := Card{Ref: trialRef(s.ID, t.Number, t.Rung), Kind: "trial", Session: s.ID, Mentions: in.Mentions}
	vs := ""
	if t.Score != nil {
		vs = trialVersus(in)
	}
	switch {
	case t.State == session.TrialFailed:
		c.Title = fmt.Sprintf("trial %d @ rung %d failed", t.Number, t.Rung)
	case t.Score != nil:
		c.Title = fmt.Sprintf("trial %d @ rung %d: %s", t.Number, t.Rung, vs)
	default:
		c.Title = fmt.Sprintf("trial %d @ rung %d %s", t.Number, t.Rung, t.State)
	}
	c.Blocks = append(c.Blocks, Block{Kind: BlockHeader, Text: c.Title})
	f := Fields("session", session.Short(s.ID), "task", s.Settings.Task, "source", t.Source,
		"iterations", fmt.Sprintf("%d (from %d)", t.Iterations, t.StartIter),
		s.TimeLabel(), Duration(time.Duration(t.GPUSeconds*float64(time.Second))))
	if t.Score != nil {
		f.Fields = append(f.Fields, scoreFields(in, vs)...)
	}
	c.Blocks = append(c.Blocks, f)
	if t.State == session.TrialFailed {
		c.Blocks = append(c.Blocks, UntrustedText(t.Reason, 500))
		if t.LogTail != "" {
			c.Blocks = append(c.Blocks, Block{Kind: BlockCode, Text: failureLog(t.LogTail), Untrusted: true})
		}
	}
	if t.Score != nil {
		c.Blocks = append(c.Blocks, Text(ScoreNote+"."))
		ot := &Table{Caption: "objectives (improvement over the baseline)", Columns: []string{"objective", "weight", "improvement"}, Align: []string{"", "r", "r"}}
		for _, name := range session.ObjectiveNames {
			ot.Rows = append(ot.Rows, []string{name, Num(s.Settings.Objective[name]), Percent(t.Score.Objectives[name])})
		}
		c.Blocks = append(c.Blocks, Block{Kind: BlockTable, Table: ot})
	}
	c.Blocks = append(c.Blocks, configBlocks(in)...)
	if n := clipNote(t); n != "" {
		c.Blocks = append(c.Blocks, UntrustedText(n, 300)) // it quotes the trainer's file
	}
	if in.Link != "" {
		c.Blocks = append(c.Blocks, Text("compare it with the other trials on the monitoring page: "+in.Link))
		c.Link = in.Link
	}
	if len(in.Attachments) > 0 {
		c.Blocks = append(c.Blocks, Block{Kind: BlockAttachments, Attachments: in.Attachments})
	}
	return c
}

// scoreFields are a scored trial's score lines: vs (trialVersus), the stored score beside it
// when vs is against the baseline at the trial's rung, the final re-evaluation, the control
// of a promoted trial and whether it is eligible.
func scoreFields(in TrialInput, vs string) []Field {
	t := in.Trial
	fields := []Field{{"score", vs}}
	if session.HasControl(in.Control, t) {
		// the stored score, on the scale every trial of the session shares
		fields = append(fields, Field{"vs rung 0", Signed(t.Score.Total) + " vs baseline @ rung 0"})
	}
	if t.Final != nil {
		fields = append(fields, Field{"final", fmt.Sprintf("%s ± %.3f on seeds %v", Signed(t.Final.Score.Total), t.Final.ScoreStd, t.Final.Seeds)})
	}
	if t.Rung > 0 && t.Number != 0 {
		fields = append(fields, controlField(in))
	}
	elig := "yes"
	if !t.PassesGates() {
		elig = "no: " + strings.Join(session.GateReasons(t), "; ")
	}
	return append(fields, Field{"eligible", elig})
}

// configBlocks say what a trial ran: a new configuration's diff from its parent, or that a
// promoted one trains its parent's on from the checkpoint.
func configBlocks(in TrialInput) []Block {
	t := in.Trial
	if in.Parent != nil && in.Space != nil && t.Rung == 0 {
		ch := in.Space.Diff(in.Parent.RewardConfig, t.RewardConfig)
		cap := fmt.Sprintf("config diff from trial %d @ rung %d", in.Parent.Number, in.Parent.Rung)
		if len(ch) == 0 {
			return []Block{Text(cap + ": none")}
		}
		return []Block{{Kind: BlockTable, Table: DiffTable(cap, ch)}}
	}
	if t.Rung > 0 && t.Parent != nil {
		return []Block{Text(fmt.Sprintf("same configuration as %s, trained on from its checkpoint", t.Parent))}
	}
	return nil
}

// trialVersus is the trial's rung score against the baseline at its rung (in.Control), or
// against rung 0's when there is none, saying which (session.VersusOf).
func trialVersus(in TrialInput) string {
	t := in.Trial
	t.Final = nil // the card's score is the rung evaluation; the final has its own line
	v, _ := session.VersusOf(in.Session.Settings, in.Control, t)
	return v.String()
}

// controlField sets a promoted trial's score beside the baseline's at the same rung, or says
// in words what it is compared with when there is none (docs/design.md §1).
func controlField(in TrialInput) Field {
	t, st := in.Trial, in.Session.Settings
	name := fmt.Sprintf("baseline @ rung %d", t.Rung)
	switch {
	case in.Control != nil && in.Control.Score != nil:
		return Field{name, fmt.Sprintf("%s (the same %d iterations and seeds)", Signed(in.Control.Score.Total), t.Iterations)}
	case st.Control:
		return Field{name, "not trained this far yet; the session's result compares with it"}
	}
	rung0 := 0
	if len(st.Rungs) > 0 {
		rung0 = st.Rungs[0]
	}
	return Field{"compared with", fmt.Sprintf("the baseline at %d iterations (rung 0), not trained as long: control is off", rung0)}
}

// ProposalCard shows a proposal: diff, rationale (untrusted), expected impact, confidence
// and, while it is pending, the buttons Approve · Reject · Edit · Pause; once decided, a
// stamp of who decided what and when replaces them.
func ProposalCard(p session.Proposal, space *session.Space, mentions []string) Card {
	c := Card{Ref: proposalRef(p.SessionID, p.ID), Kind: "proposal", Session: p.SessionID, Mentions: mentions,
		Title: fmt.Sprintf("proposal %d for trial %d (patch of trial %d)", p.Seq, p.Number, p.BaseTrial)}
	c.Urgent = p.State == session.ProposalPending
	c.Blocks = append(c.Blocks, Block{Kind: BlockHeader, Text: c.Title})
	src := p.Source
	if p.Model != "" {
		src += " (" + Neutralise(p.Model, 60) + ")"
	}
	fields := []string{"source", src}
	for _, f := range ConfidenceFields(p) {
		fields = append(fields, f[0], f[1])
	}
	c.Blocks = append(c.Blocks, Fields(fields...))
	ch := space.Diff(p.Base, session.Merge(p.Base, p.Patch))
	c.Blocks = append(c.Blocks, Block{Kind: BlockTable, Table: DiffTable("proposed change", ch)})
	if p.BuiltOn != "" {
		c.Blocks = append(c.Blocks, Text(p.BuiltOn)) // the first card says what the model starts from
	}
	c.Blocks = append(c.Blocks, whyBlocks(p, CardEvidence)...)
	if len(p.ExpectedImpact) > 0 {
		keys := make([]string, 0, len(p.ExpectedImpact))
		for k := range p.ExpectedImpact {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return objRank(keys[i]) < objRank(keys[j]) || objRank(keys[i]) == objRank(keys[j]) && keys[i] < keys[j]
		})
		var parts []string
		for _, k := range keys {
			parts = append(parts, Neutralise(k, 30)+" "+Neutralise(p.ExpectedImpact[k], 20))
		}
		c.Blocks = append(c.Blocks, Block{Kind: BlockText, Text: "expected impact: " + strings.Join(parts, ", "), Untrusted: true})
	}
	if p.Decision != nil && p.Decision.Edited != nil {
		ed := space.Diff(p.Base, session.Merge(p.Base, *p.Decision.Edited))
		c.Blocks = append(c.Blocks, Block{Kind: BlockTable, Table: DiffTable("edited to (this is what runs)", ed)})
	}
	switch {
	case p.State == session.ProposalPending:
		c.Blocks = append(c.Blocks, Block{Kind: BlockActions, Actions: []Action{
			{ID: ActionID(ButtonApprove, p.SessionID, p.ID), Label: "Approve", Style: "primary"},
			{ID: ActionID(ButtonReject, p.SessionID, p.ID), Label: "Reject", Style: "danger"},
			{ID: ActionID(ButtonEdit, p.SessionID, p.ID), Label: "Edit"},
			{ID: ActionID(ButtonPause, p.SessionID, p.ID), Label: "Pause"},
		}})
		// numbered, as several proposals may wait at once (issue 14); the terminal says its own
		hint := Text("reply in this thread: " + DecisionReplies(p))
		hint.ThreadHint = true
		c.Blocks = append(c.Blocks, hint)
	case p.Decision != nil:
		c.Blocks = append(c.Blocks, Block{Kind: BlockStamp, Stamp: &Stamp{By: p.Decision.By.String(), Action: session.DecidedWord(p), At: p.Decision.At, Feedback: Neutralise(p.Decision.Feedback, 500)}})
		if p.Decision.Note != "" {
			c.Blocks = append(c.Blocks, Text(p.Decision.Note)) // the constraints read, or overridden
		}
	default:
		c.Blocks = append(c.Blocks, Block{Kind: BlockStamp, Stamp: &Stamp{By: "tunebot", Action: session.DecidedWord(p), At: p.CreatedAt}})
	}
	return c
}

// CardEvidence is how many pieces of a proposal's evidence its card shows, strongest first;
// why N answers with all of them.
const CardEvidence = 3

// whyBlocks say why a proposal was made: a numeric proposer's one-sentence summary and its
// strongest max pieces of evidence (all of them when max < 0), or the advisor's rationale,
// which is untrusted text.
func whyBlocks(p session.Proposal, max int) []Block {
	if p.Summary == "" {
		if p.Rationale == "" {
			return nil
		}
		return []Block{UntrustedText(p.Rationale, MaxUntrusted)}
	}
	out := []Block{Text(p.Summary)}
	ev := p.Evidence
	if max >= 0 && len(ev) > max {
		ev = ev[:max]
	}
	if len(ev) > 0 {
		head := "evidence, strongest first:"
		if more := len(p.Evidence) - len(ev); more > 0 {
			head = fmt.Sprintf("evidence, the %d strongest of %d (why %d gives all):", len(ev), len(p.Evidence), p.Seq)
		}
		out = append(out, Text(bulleted(head, ev)))
	}
	return out
}

// WhyCard answers why N: the proposal's diff and its whole evidence.
func WhyCard(p session.Proposal) Card {
	c := Card{Kind: "notice", Session: p.SessionID, Title: fmt.Sprintf("why proposal %d for trial %d (%s)", p.Seq, p.Number, p.Source)}
	c.Blocks = append(c.Blocks, Block{Kind: BlockHeader, Text: c.Title})
	why := whyBlocks(p, -1)
	if len(why) == 0 {
		why = []Block{Text("its proposer gave no reason")}
	}
	c.Blocks = append(c.Blocks, why...)
	return c
}

// DecisionReplies are the typed replies that decide pending proposal p, numbered as several
// may wait at once: "approve 3 · reject 3 <feedback> · edit 3 term=value … (approves it as
// edited) · pause", with "why 3" when its card shows only part of its evidence.
func DecisionReplies(p session.Proposal) string {
	out := fmt.Sprintf("approve %d · reject %d <feedback> · edit %d term=value … (approves it as edited)", p.Seq, p.Seq, p.Seq)
	if len(p.Evidence) > CardEvidence {
		out += fmt.Sprintf(" · why %d", p.Seq)
	}
	return out + " · pause"
}

func objRank(k string) int {
	for i, n := range session.ObjectiveNames {
		if n == k {
			return i
		}
	}
	return len(session.ObjectiveNames)
}

// SummaryInput is what a finished session's summary shows.
type SummaryInput struct {
	Session     session.Session
	Trials      []session.Trial
	Mentions    []string
	Attachments []Attachment // the score and progress charts redrawn at the end
}

// SummaryCard closes a session: best preset, improvement over the baseline, GPU time used
// and the table of every trial.
func SummaryCard(in SummaryInput) Card {
	s := in.Session
	c := Card{Ref: summaryRef(s.ID), Kind: "summary", Session: s.ID, Mentions: in.Mentions,
		Title: fmt.Sprintf("session %s %s", session.Short(s.ID), stateWord(s))}
	c.Urgent = s.State == session.StateFailed
	c.Blocks = append(c.Blocks, Block{Kind: BlockHeader, Text: c.Title})
	f := Fields("task", s.Settings.Task)
	if s.Preset != "" {
		f.Fields = append(f.Fields, Field{"best preset", s.Preset})
	}
	if o := s.OutcomeLine(); o != "" {
		f.Fields = append(f.Fields, Field{"outcome", o})
	}
	if s.BuiltOn != nil {
		f.Fields = append(f.Fields, Field{"built on", strings.TrimPrefix(s.BuiltOn.Line(), "builds on ")})
	}
	// the headline is best vs baseline at equal training, from the trials as they stand, so a
	// cancelled or failed session never claims a gain the baseline trained as long beats
	headline := false
	if c, ok := session.Compare(s, in.Trials); ok {
		f.Fields = append(f.Fields, Field{"result", c.Headline()})
		headline = true
	}
	f.Fields = append(f.Fields, Field{s.TimeLabel() + " used", Duration(time.Duration(s.GPUSeconds * float64(time.Second)))})
	if !s.EndedAt.IsZero() && !s.CreatedAt.IsZero() {
		f.Fields = append(f.Fields, Field{"wall time", Duration(s.EndedAt.Sub(s.CreatedAt))})
	}
	c.Blocks = append(c.Blocks, f)
	if s.State == session.StateFailed || s.State == session.StateCancelled {
		c.Blocks = append(c.Blocks, UntrustedText(s.Reason, 500))
	} else if s.Message != "" && !(headline && s.State == session.StateSucceeded) {
		// a succeeded session's message is its headline and preset again
		c.Blocks = append(c.Blocks, Text(s.Message))
	}
	if len(in.Trials) > 0 {
		c.Blocks = append(c.Blocks, Block{Kind: BlockTable, Table: TrialsTable(in.Trials, s)})
		c.Blocks = append(c.Blocks, Text(ScoreNote+"; "+VersusNote+"; "+FreshNote+"."))
	}
	if len(in.Attachments) > 0 {
		c.Blocks = append(c.Blocks, Block{Kind: BlockAttachments, Attachments: in.Attachments})
	}
	return c
}

// TrialsTable lists trials with rung, source, state, score (its rung evaluation against rung
// 0's baseline), the score against the baseline at the trial's rung (session.VersusControl:
// "@ 0" where no baseline was trained as long), which ranks a rung and marks the best, the
// final evaluation on fresh seeds where there is one (FreshNote) and eligibility.
func TrialsTable(trials []session.Trial, s session.Session) *Table {
	t := &Table{Caption: "trials", Columns: []string{"trial", "rung", "source", "state", "score", "vs baseline @ rung", "fresh seeds", "eligible"},
		Align: []string{"r", "r", "", "", "r", "r", "r", ""}}
	controls := session.Controls(trials)
	for _, tr := range trials {
		score, vs, elig := "—", "—", "—"
		if v, ok := session.VersusOf(s.Settings, controls[tr.Rung], tr); ok {
			vs = fmt.Sprintf("%s @ %d", Signed(v.Score), v.ControlRung)
		}
		if tr.Score != nil {
			score = Signed(tr.Score.Total)
			// Eligible, as the page and tune --json say: a finalist being re-evaluated
			// passes its rung's gates but is not eligible until it completes.
			elig = "yes"
			if !tr.Eligible() {
				elig = "no"
			}
		}
		num := strconv.Itoa(tr.Number)
		if s.IsBest(tr) {
			num += " ★"
		}
		t.Rows = append(t.Rows, []string{num, strconv.Itoa(tr.Rung), tr.Source, string(tr.State), score, vs, freshCell(s.Settings, controls[tr.Rung], tr), elig})
	}
	return t
}

// freshCell is t's figure on its final evaluation (session.FinalVersusOf) with the gain's
// standard error for a tuned trial measured beside the baseline, "" without one.
func freshCell(st session.Settings, control *session.Trial, t session.Trial) string {
	v, ok := session.FinalVersusOf(st, control, t)
	if !ok || !v.Final {
		return ""
	}
	cell := fmt.Sprintf("%s @ %d", Signed(v.Score), v.ControlRung)
	if d := session.VerdictOf(st, control, t); t.Number != 0 && d.Measured() {
		cell = fmt.Sprintf("%s ± %s @ %d", Signed(v.Score), session.Spread(d.SE), v.ControlRung)
	}
	return cell
}

// NoticeCard is a one-line message in a session's thread.
func NoticeCard(sessionID, ref, text string, mentions []string) Card {
	return Card{Ref: ref, Kind: "notice", Session: sessionID, Title: text, Mentions: mentions, Blocks: []Block{Text(text)}}
}

package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"tunebot/bot"
	"tunebot/session"
)

// sessionRow is one line of the sessions page.
type sessionRow struct {
	ID            string   `json:"id"`
	Short         string   `json:"short"`
	RunName       string   `json:"run_name"`
	State         string   `json:"state"`
	StateLabel    string   `json:"state_label"` // the state in words (session.StateLabel)
	Mode          string   `json:"mode"`
	Task          string   `json:"task"`
	TrialsDone    int      `json:"trials_done"`
	TrialsPlanned int      `json:"trials_planned"`
	BestScore     *float64 `json:"best_score"`
	BestTrial     int      `json:"best_trial"`
	BestRung      int      `json:"best_rung"`
	Owner         string   `json:"owner"`
	Message       string   `json:"message,omitempty"`
	Reason        string   `json:"reason,omitempty"`
	Preset        string   `json:"preset,omitempty"`
	Started       string   `json:"started"`
	Ended         string   `json:"ended,omitempty"`
	Pruned        string   `json:"pruned,omitempty"` // what retention removed, in words

	// BestVersus is the headline's best trial against the baseline at its rung (Session.Result),
	// nil before there is one; Best says in words which trial is best and its score, as the
	// list and the page's header show it (bestText).
	BestVersus *bestVersus `json:"best_versus,omitempty"`
	Best       string      `json:"best"`
	// Outcome is a succeeded session's outcome (session/outcome.go), OutcomeText it in words
	// when it did not improve.
	Outcome     string `json:"outcome,omitempty"`
	OutcomeText string `json:"outcome_text,omitempty"`
	// OutcomeLine is the outcome with what became of the preset (session.OutcomeLine).
	OutcomeLine string `json:"outcome_line,omitempty"`
	// BuiltOn is the earlier session this one builds on (session.BuiltOn), for the link.
	BuiltOn *builtOnView `json:"built_on,omitempty"`
}

// builtOnView is the earlier session a session builds on: its id for the link, its short
// id, and what the session took from it in words after its name (session.BuiltOn.Line).
type builtOnView struct {
	ID    string `json:"id"`
	Short string `json:"short"`
	Rest  string `json:"rest"`
}

func builtOnOf(b *session.BuiltOn) *builtOnView {
	if b == nil {
		return nil
	}
	short := session.Short(b.Session)
	return &builtOnView{ID: b.Session, Short: short, Rest: strings.TrimPrefix(b.Line(), "builds on session "+short)}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func row(s session.Session, trials []session.Trial) sessionRow {
	outlines := make([]session.TrialOutline, len(trials))
	for i, t := range trials {
		outlines[i] = t.Outline()
	}
	return rowDone(s, trialsDone(outlines))
}

// trialsDone counts the rung-0 trials that have a result.
func trialsDone(trials []session.TrialOutline) int {
	n := 0
	for _, t := range trials {
		if t.Rung == 0 && t.State.Terminal() {
			n++
		}
	}
	return n
}

func rowDone(s session.Session, done int) sessionRow {
	r := sessionRow{ID: s.ID, Short: session.Short(s.ID), RunName: s.Settings.RunName, State: string(s.State), Mode: s.Settings.Mode, Task: s.Settings.Task,
		TrialsDone: done, TrialsPlanned: s.Settings.TrialCount, BestTrial: s.BestTrial, BestRung: s.BestRung, Owner: s.Owner.String(),
		Message: s.Message, Reason: s.Reason, Preset: s.Preset, Outcome: s.Outcome, OutcomeText: s.OutcomeText(), OutcomeLine: s.OutcomeLine(), Started: stamp(s.CreatedAt), Ended: stamp(s.EndedAt), Pruned: prunedNote(s.Pruned),
		BuiltOn: builtOnOf(s.BuiltOn)}
	if s.BestTrial >= 0 {
		v := s.BestScore
		r.BestScore = &v
	}
	if s.Result != nil && s.Result.Versus != nil && s.Result.Best.Trial != 0 {
		r.BestVersus = &bestVersus{Versus: *s.Result.Versus, Trial: s.Result.Best.Trial}
	}
	r.Best = bestText(s, r.BestVersus)

	// in the words every surface uses, not the identifiers ("you" is the console's own name)
	r.StateLabel, r.Owner = session.StateLabel(s.State), session.ActorLabel(s.Owner)
	return r
}

// bestText says which trial is the session's best (the one the leaderboard stars) and its
// score: the headline's best tuned trial against the baseline at its rung, or, when the
// baseline is best (nothing beat it), the baseline, never a tuned trial it beat (issue 35:
// "best −0.144 (trial 1)" beside a starred baseline).
func bestText(s session.Session, vs *bestVersus) string {
	switch {
	case s.BestTrial < 0:
		return "none yet"
	case s.BestTrial == 0:
		return fmt.Sprintf("the baseline (trial 0 @ rung %d): no tuned trial beat it", s.BestRung)
	case vs != nil && vs.Final && s.Result.Verdict != nil && s.Result.Verdict.Measured():
		// the verdict as every other surface says it: the spread, the fresh seeds, the test
		return fmt.Sprintf("%s (trial %d @ rung %d)", s.Result.Verdict.TextVersus(vs.Label()), vs.Trial, vs.Rung)
	case vs != nil && vs.Final:
		return fmt.Sprintf("%s, on fresh seeds (trial %d @ rung %d)", vs.String(), vs.Trial, vs.Rung)
	case vs != nil:
		return fmt.Sprintf("%s (trial %d @ rung %d)", vs.String(), vs.Trial, vs.Rung)
	}
	return fmt.Sprintf("%s vs baseline @ rung 0 (trial %d @ rung %d)", session.SignedScore(s.BestScore), s.BestTrial, s.BestRung)
}

// bestVersus is a session's best tuned trial with its score against the baseline at its rung.
type bestVersus struct {
	session.Versus
	Trial int `json:"trial"`
}

// prunedNote says what retention removed of a session, so an empty or coarse curve is
// explained; "" when nothing was.
func prunedNote(p *session.Pruned) string {
	if p == nil {
		return ""
	}
	var what []string
	switch p.Curves {
	case session.CurvesDownsample:
		what = append(what, fmt.Sprintf("curves thinned to %d points", p.Points))
	case session.CurvesDrop:
		what = append(what, "curves dropped")
	}
	if p.RunDirs {
		what = append(what, "run directories deleted (its preset's policy and checkpoint kept)")
	}
	if len(what) == 0 {
		return ""
	}
	return fmt.Sprintf("pruned on %s: %s", p.At.UTC().Format("2006-01-02"), strings.Join(what, ", "))
}

// permissions is what the page offers the person in, with the roles they hold now; the
// handler checks again on every action.
func (s *Server) permissions(in bot.Interaction) map[string]bool {
	out := map[string]bool{}
	for _, p := range []bot.Permission{bot.PermStart, bot.PermDecide, bot.PermPause, bot.PermResume, bot.PermCancel} {
		out[string(p)] = s.opt.Allow.Allows(in.Platform, in.User.ID, in.Roles, p)
	}
	return out
}

func (s *Server) me(_ context.Context, in bot.Interaction, _ *http.Request) (any, error) {
	return map[string]any{"name": in.User.Name, "platform": in.Platform, "may": s.permissions(in)}, nil
}

func nameOf(who Identity) string {
	if who.Name != "" {
		return who.Name
	}
	return who.ID
}

// SessionsPerPage is how many sessions the sessions page lists at once, newest first; an
// "older sessions" link pages on. A lab that runs sessions daily has thousands within a
// year, and the page polls every few seconds, so it reads one page from the store's
// index, never every session (docs/design.md §7).
const SessionsPerPage = 50

func (s *Server) sessions(ctx context.Context, _ bot.Interaction, r *http.Request) (any, error) {
	cursor := r.URL.Query().Get("cursor")
	page, next, err := s.opt.Store.RecentSessions(ctx, cursor, SessionsPerPage)
	var ue *session.UserError
	if errors.As(err, &ue) {
		return nil, badRequest("%s", ue.Msg)
	}
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	rows := make([]sessionRow, 0, len(page))
	for _, ss := range page {
		done, err := s.trialsDone(ctx, ss)
		if err != nil {
			return nil, err
		}
		rows = append(rows, rowDone(ss, done))
	}
	// With sessions of several tasks listed, the list has a task column.
	tasks := map[string]bool{}
	for _, r := range rows {
		tasks[r.Task] = true
	}
	return map[string]any{"sessions": rows, "next": next, "several_tasks": len(tasks) > 1}, nil
}

// trialsDone counts a session's finished rung-0 trials for its row, from their outlines. A
// finished session's trials no longer change, so its count is kept: the page polls every few
// seconds, and a session's trials cost more to read than the rest of its row.
func (s *Server) trialsDone(ctx context.Context, ss session.Session) (int, error) {
	s.doneMu.Lock()
	n, ok := s.done[ss.ID]
	s.doneMu.Unlock()
	if ok {
		return n, nil
	}
	outlines, err := session.Outlines(ctx, s.opt.Store, ss.ID)
	if err != nil {
		return 0, fmt.Errorf("listing trials: %w", err)
	}
	n = trialsDone(outlines)
	if !ss.State.Active() {
		s.doneMu.Lock()
		s.done[ss.ID] = n
		s.doneMu.Unlock()
	}
	return n, nil
}

func (s *Server) lookup(ctx context.Context, id string) (session.Session, error) {
	ss, err := s.opt.Store.Session(ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		return ss, notFound("session %s does not exist", bot.Truncate(id, 40))
	}
	if err != nil {
		return ss, fmt.Errorf("reading session: %w", err)
	}
	return ss, nil
}

// withTrials is session id and its trials.
func (s *Server) withTrials(ctx context.Context, id string) (session.Session, []session.Trial, error) {
	ss, err := s.lookup(ctx, id)
	if err != nil {
		return ss, nil, err
	}
	trials, err := s.opt.Store.Trials(ctx, ss.ID)
	if err != nil {
		return ss, nil, fmt.Errorf("listing trials: %w", err)
	}
	return ss, trials, nil
}

// trialView is one line of the leaderboard.
type trialView struct {
	Number     int                `json:"number"`
	Rung       int                `json:"rung"`
	State      string             `json:"state"`
	Source     string             `json:"source"`
	Score      *float64           `json:"score"`
	Final      *float64           `json:"final,omitempty"`
	FinalStd   float64            `json:"final_std,omitempty"`
	Rank       float64            `json:"rank_score"`
	Eligible   bool               `json:"eligible"`
	Why        string             `json:"why,omitempty"` // not eligible because, or why it failed
	Best       bool               `json:"best"`
	Iterations int                `json:"iterations"`
	Progress   int                `json:"progress"`
	Objectives map[string]float64 `json:"objectives,omitempty"`
	Metrics    session.Metrics    `json:"metrics,omitempty"`
	Proposal   int                `json:"proposal,omitempty"` // the proposal's seq it came from
	GPUSeconds float64            `json:"gpu_seconds"`
	Started    string             `json:"started,omitempty"`
	Ended      string             `json:"ended,omitempty"`
	Clip       *clipView          `json:"clip,omitempty"`
	ClipNote   string             `json:"clip_note,omitempty"` // why there is no clip
	// ClipRemoved: the trial had a clip, deleted with its run directory by a prune.
	ClipRemoved bool `json:"clip_removed,omitempty"`
	// PromotedBy says who put the trial into its rung's plan ("promoted by ann over trial
	// 5"), "" when the plan was tunebot's.
	PromotedBy string `json:"promoted_by,omitempty"`

	// Versus is the score against the baseline at the trial's rung (session.VersusControl),
	// what the leaderboard ranks by within a rung; nil without a score.
	Versus *session.Versus `json:"versus,omitempty"`
}

// preferenceView is one answer to "which walks better?", or the card that waits for one
// (with both trials, for their clips side by side).
type preferenceView struct {
	Seq      int         `json:"seq"`
	A        int         `json:"a"`
	B        int         `json:"b"`
	Asked    bool        `json:"asked"`
	Open     bool        `json:"open"`
	Expired  bool        `json:"expired"`
	Verdict  string      `json:"verdict"`
	Note     string      `json:"note,omitempty"`
	By       string      `json:"by,omitempty"`
	Platform string      `json:"platform,omitempty"`
	At       string      `json:"at,omitempty"`
	Effect   string      `json:"effect,omitempty"` // what the answer does, in words
	Trials   []trialView `json:"trials,omitempty"` // A, then B (the card that waits)
	Why      string      `json:"why,omitempty"`    // why it was asked (session.AskedWhy), the card that waits
}

// reviewView is the promotion plan that waits for people.
type reviewView struct {
	Rung       int       `json:"rung"`
	Iterations int       `json:"iterations"`
	Line       string    `json:"line"`
	Until      string    `json:"until"`
	Plan       []planRow `json:"plan"`
	Changes    []string  `json:"changes"`
	Replies    string    `json:"replies"`
}

type planRow struct {
	Number int      `json:"number"`
	Score  *float64 `json:"score"`
	How    string   `json:"how"`
}

type change struct {
	Kind   string  `json:"kind"`
	Name   string  `json:"name"`
	Label  string  `json:"label"` // the name as shown (session.Change.Label)
	Old    float64 `json:"old"`
	New    float64 `json:"new"`
	Factor string  `json:"factor"`
}

type proposalView struct {
	ID         string            `json:"id"`
	Seq        int               `json:"seq"`
	Number     int               `json:"number"`
	BaseTrial  int               `json:"base_trial"`
	State      string            `json:"state"`
	Source     string            `json:"source"`
	Model      string            `json:"model,omitempty"`
	Confidence float64           `json:"confidence"`
	Rationale  string            `json:"rationale"`
	Summary    string            `json:"summary,omitempty"`  // a numeric proposer's one sentence
	Evidence   []string          `json:"evidence,omitempty"` // strongest first; the page shows 3, the rest folded
	Impact     map[string]string `json:"expected_impact,omitempty"`
	Diff       []change          `json:"diff"`
	Edited     []change          `json:"edited,omitempty"`
	EditText   string            `json:"edit_text"` // the patch as the edit form's lines
	Decision   *decisionView     `json:"decision,omitempty"`
	Created    string            `json:"created"`

	// ConfidenceText says what Confidence is (bot.ConfidenceText): gates pass and the chance
	// of beating the best for the sampler, DeepSeek's own claim for DeepSeek.
	ConfidenceText string `json:"confidence_text"`
}

type decisionView struct {
	Action   string `json:"action"`
	Word     string `json:"word"`
	By       string `json:"by"`
	Platform string `json:"platform"`
	Where    string `json:"where,omitempty"`
	At       string `json:"at"`
	Feedback string `json:"feedback,omitempty"`
	Note     string `json:"note,omitempty"` // what became of the feedback: the constraints read
}

type rungView struct {
	Rung       int         `json:"rung"`
	Iterations int         `json:"iterations"`
	Slots      int         `json:"slots"` // how many trials this rung takes
	Trials     []trialView `json:"trials"`
	// Filled is how many of Trials take a slot: all but the baseline carried along in
	// addition (Carried, control: true, above rung 0), so the ladder never says 5/4.
	Filled  int  `json:"filled"`
	Carried bool `json:"baseline_carried"`
}

type comparisonView struct {
	Rung     int             `json:"rung"`
	Best     *trialView      `json:"best,omitempty"`
	Baseline *trialView      `json:"baseline,omitempty"`
	Matched  bool            `json:"matched"` // the baseline was trained to this rung too (control)
	Metrics  []metricCompare `json:"metrics,omitempty"`
	// Score and BaselineScore are the row's two scores on one reference, Reference ("vs
	// baseline @ rung 2": the baseline's own metrics, where it scores 0; "vs baseline @ rung
	// 0": the stored scores); Delta is their difference, only where the baseline was trained
	// to the row's rung. Each is null when there is nothing to show.
	Score         *float64 `json:"score"`
	BaselineScore *float64 `json:"baseline_score"`
	Delta         *float64 `json:"delta"`
	Reference     string   `json:"reference"`
}

// scoreColumns fills c's two scores on one reference and their difference (issue 35): against
// the control's metrics where the best's score has been recomputed against it (VersusOf),
// else both stored scores against the baseline's rung-0 evaluation, without a difference
// unless the baseline was trained to the row's rung.
func (c *comparisonView) scoreColumns(best, base *session.Trial) {
	c.Reference = "vs baseline @ rung 0"
	if best != nil && best.Score != nil {
		v := best.Score.Total
		c.Score = &v
	}
	if base != nil && base.Score != nil {
		v := base.Score.Total
		c.BaselineScore = &v
	}
	if c.Best != nil && c.Best.Versus != nil && c.Best.Versus.Matched() && c.Matched {
		v, zero := c.Best.Versus.Score, 0.0
		c.Score, c.BaselineScore, c.Reference = &v, &zero, c.Best.Versus.Label()
	}
	if c.Matched && c.Score != nil && c.BaselineScore != nil {
		d := *c.Score - *c.BaselineScore
		c.Delta = &d
	}
}

type metricCompare struct {
	Name     string  `json:"name"`
	Best     float64 `json:"best"`
	Baseline float64 `json:"baseline"`
}

type auditView struct {
	Seq    uint64         `json:"seq"`
	Time   string         `json:"time"`
	Kind   string         `json:"kind"`
	Actor  string         `json:"actor"`
	Detail map[string]any `json:"detail,omitempty"`
	Text   string         `json:"text"` // the detail as the timeline reads it (auditText)
}

// maxAudit caps the audit timeline sent to the page (the newest entries).
const maxAudit = 500

func (s *Server) sessionView(ctx context.Context, in bot.Interaction, r *http.Request) (any, error) {
	ss, trials, err := s.withTrials(ctx, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	props, err := s.opt.Store.Proposals(ctx, ss.ID)
	if err != nil {
		return nil, fmt.Errorf("listing proposals: %w", err)
	}
	audit, err := session.NewestAudit(ctx, s.opt.Store, ss.ID, maxAudit)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	timeline, olderLeftOut := auditViews(audit)
	seqOf := map[string]int{}
	for _, p := range props {
		seqOf[p.ID] = p.Seq
	}
	tv := make([]trialView, 0, len(trials))
	controls := session.Controls(trials) // once per poll, not once per trial
	for _, t := range trials {
		tv = append(tv, trialOf(t, ss, controls, seqOf))
	}
	sortBoard(tv)
	// the live status: each running trial on its own line (its GPUs or Slurm job), the
	// same lines the chat's root card and /tune status show (bot.RunningLine, issue 14)
	running := []string{}
	if ss.State.Active() {
		running = append(running, bot.RunningLines(trials, nil)...)
	}
	out := map[string]any{
		"session":     row(ss, trials),
		"running":     running,
		"settings":    ss.Settings,
		"trials":      tv,
		"ladder":      ladder(ss, tv),
		"comparison":  s.comparison(ss, trials, seqOf),
		"proposals":   s.proposalViews(props),
		"audit":       timeline,
		"audit_more":  olderLeftOut,
		"score_note":  bot.ScoreNote,
		"card":        s.openCard(ss, trials, seqOf),
		"preferences": preferenceViews(ss, s.opt.Actions.Advised()),
		"advised":     s.opt.Actions.Advised(),
		"review":      openReview(ss, trials),
		"may":         s.permissions(in),
		"objectives":  session.ObjectiveNames,
	}
	return out, nil
}

// trialOf is t's line: its score, its figure against the baseline at its rung (controls, by
// rung), which ranks it (session.RankFigure), and its final evaluation when it had one.
func trialOf(t session.Trial, ss session.Session, controls map[int]*session.Trial, seqOf map[string]int) trialView {
	v := trialView{Number: t.Number, Rung: t.Rung, State: string(t.State), Source: t.Source,
		Rank: session.RankFigure(ss.Settings, controls, t), Versus: versusOf(ss, controls[t.Rung], t),
		Eligible: t.Eligible(), Best: ss.IsBest(t), Iterations: t.Iterations,
		Progress: t.Progress, Metrics: servedMetrics(t.Metrics), Proposal: seqOf[t.ProposalID], GPUSeconds: t.GPUSeconds,
		Started: stamp(t.StartedAt), Ended: stamp(t.EndedAt), Clip: clipOf(t), ClipNote: t.ClipNote}
	if t.Clip != nil && ss.Pruned != nil && ss.Pruned.RunDirs {
		// retention deletes run directories whole but for a preset's policy and checkpoint
		v.Clip, v.ClipNote, v.ClipRemoved = nil, clipRemovedNote, true
	}
	if t.Score != nil {
		sc := t.Score.Total
		v.Score, v.Objectives = &sc, t.Score.Objectives
		if !t.PassesGates() {
			v.Why = strings.Join(session.GateReasons(t), "; ")
		}
	}
	if t.Final != nil {
		f := t.Final.Score.Total
		v.Final, v.FinalStd = &f, t.Final.ScoreStd
	}
	if t.PromotedBy != nil {
		v.PromotedBy = t.PromotedBy.Text()
	}
	switch {
	case t.State == session.TrialFailed:
		v.Why = "failed: " + t.Reason
	case !t.State.Terminal():
		v.Why = "not finished (" + string(t.State) + ")"
	}
	return v
}

// servedMetrics is what the page gets of a trial's metrics: the seven and at most
// session.MaxExtraMetrics others (session.KeptMetrics), whatever an older tunebot stored, so
// a trainer's thousands of extra names cannot make a session's view megabytes and use up
// its reader's budget on one load (issue 36).
func servedMetrics(m session.Metrics) session.Metrics {
	kept, _ := session.KeptMetrics(m)
	return kept
}

// versusOf is t's score against control, the baseline at its rung (nil: none), or nil
// without a score.
func versusOf(ss session.Session, control *session.Trial, t session.Trial) *session.Versus {
	if v, ok := session.VersusOf(ss.Settings, control, t); ok {
		return &v
	}
	return nil
}

// sortBoard orders the leaderboard as it first shows: highest rung first, and within a rung
// by the score against that rung's baseline (scores of different rungs are not comparable),
// unscored trials last, then by trial number.
func sortBoard(tv []trialView) {
	score := func(v trialView) float64 {
		if v.Versus == nil {
			return math.Inf(-1)
		}
		return v.Versus.Score
	}
	sort.SliceStable(tv, func(i, j int) bool {
		a, b := tv[i], tv[j]
		if a.Rung != b.Rung {
			return a.Rung > b.Rung
		}
		if sa, sb := score(a), score(b); sa != sb {
			return sa > sb
		}
		return a.Number < b.Number
	})
}

// ladder is the successive-halving ladder: each rung's slots and the trials that reached it.
func ladder(ss session.Session, tv []trialView) []rungView {
	out := make([]rungView, len(ss.Settings.Rungs))
	for i, it := range ss.Settings.Rungs {
		out[i] = rungView{Rung: i, Iterations: it, Trials: []trialView{}}
		if i < len(ss.Settings.Promote) {
			out[i].Slots = ss.Settings.Promote[i]
		}
	}
	for _, t := range tv {
		if t.Rung < 0 || t.Rung >= len(out) {
			continue
		}
		r := &out[t.Rung]
		r.Trials = append(r.Trials, t)
		if t.Number == 0 && t.Rung > 0 && ss.Settings.Control {
			r.Carried = true // carried in addition to the promoted trials, never in a slot
		} else {
			r.Filled++
		}
	}
	for _, r := range out {
		sort.SliceStable(r.Trials, func(i, j int) bool { return r.Trials[i].Rank > r.Trials[j].Rank })
	}
	return out
}

// comparison puts each rung's best eligible trial beside the baseline: at the same rung when
// the session trained the baseline along (control), else its rung-0 evaluation, said so.
func (s *Server) comparison(ss session.Session, trials []session.Trial, seqOf map[string]int) []comparisonView {
	var out []comparisonView
	var base0 *session.Trial
	for i := range trials {
		if trials[i].Number == 0 && trials[i].Rung == 0 {
			base0 = &trials[i]
		}
	}
	controls := session.Controls(trials)
	figs := session.FiguresOf(ss.Settings, trials)
	for r := range ss.Settings.Rungs {
		c := comparisonView{Rung: r}
		var best, base *session.Trial
		for i := range trials {
			t := &trials[i]
			if t.Rung != r {
				continue
			}
			if t.Number == 0 {
				base = t
			}
			if t.Eligible() && (best == nil || figs.Of(*t) > figs.Of(*best)) {
				best = t
			}
		}
		c.Matched = base != nil
		if base == nil {
			base = base0
		}
		if best == nil && base == nil {
			continue
		}
		if best != nil {
			v := trialOf(*best, ss, controls, seqOf)
			c.Best = &v
		}
		if base != nil {
			v := trialOf(*base, ss, controls, seqOf)
			c.Baseline = &v
		}
		c.scoreColumns(best, base)
		if best != nil && base != nil {
			for _, name := range session.MetricNames {
				bv, ok1 := best.Metrics[name]
				av, ok2 := base.Metrics[name]
				if ok1 && ok2 {
					c.Metrics = append(c.Metrics, metricCompare{Name: name, Best: bv, Baseline: av})
				}
			}
		}
		out = append(out, c)
	}
	return out
}

func preferenceOf(p session.Preference, advised bool) preferenceView {
	v := preferenceView{Seq: p.Seq, A: p.A, B: p.B, Asked: p.Asked, Open: p.Open(), Expired: p.Expired, Verdict: p.Verdict(), Note: p.Note, At: stamp(p.At)}
	if p.By != nil {
		v.By, v.Platform = p.By.String(), p.By.Platform
	}
	if p.Decided() {
		v.Effect = session.PreferenceEffectFor(p, advised)
	}
	return v
}

// preferenceViews lists the session's preferences, newest first; the card that waits is
// the page's A/B card instead.
func preferenceViews(ss session.Session, advised bool) []preferenceView {
	out := []preferenceView{}
	for i := len(ss.Preferences) - 1; i >= 0; i-- {
		if p := ss.Preferences[i]; !p.Open() {
			out = append(out, preferenceOf(p, advised))
		}
	}
	return out
}

// openCard is the A/B card that waits, with both trials for their clips; nil when none.
func (s *Server) openCard(ss session.Session, trials []session.Trial, seqOf map[string]int) *preferenceView {
	p, ok := ss.OpenCard()
	if !ok {
		return nil
	}
	v := preferenceOf(p, true) // open: no effect yet
	var scores []float64
	for _, n := range []int{p.A, p.B} {
		for _, t := range trials {
			if t.Number == n && t.Rung == 0 {
				v.Trials = append(v.Trials, trialOf(t, ss, session.Controls(trials), seqOf))
				if t.Score != nil {
					scores = append(scores, t.Score.Total)
				}
			}
		}
	}
	if len(scores) == 2 {
		v.Why = session.AskedWhy(p, scores[0], scores[1])
	}
	return &v
}

// openReview is the promotion plan that waits for people; nil when none.
func openReview(ss session.Session, trials []session.Trial) *reviewView {
	r, ok := ss.OpenReview()
	if !ok {
		return nil
	}
	v := &reviewView{Rung: r.Rung, Iterations: ss.Settings.Rungs[r.Rung], Line: session.ReviewLine(ss, r), Until: stamp(r.Until),
		Plan: []planRow{}, Changes: []string{}, Replies: session.ReviewReplies}
	for _, n := range r.Plan {
		row := planRow{Number: n, How: r.How(n, ss.Settings.Control)}
		for _, t := range trials {
			if t.Number == n && t.Rung == r.Rung-1 && t.Score != nil {
				sc := t.Score.Total
				row.Score = &sc
			}
		}
		v.Plan = append(v.Plan, row)
	}
	for _, c := range r.Changes {
		v.Changes = append(v.Changes, c.Text()+" at "+stamp(c.At))
	}
	return v
}

func changes(cs []session.Change) []change {
	out := make([]change, 0, len(cs))
	for _, c := range cs {
		out = append(out, change{Kind: c.Kind, Name: c.Name, Label: c.Label(), Old: c.Old, New: c.New, Factor: bot.Factor(c)})
	}
	return out
}

func (s *Server) proposalViews(props []session.Proposal) []proposalView {
	out := make([]proposalView, 0, len(props))
	for i := len(props) - 1; i >= 0; i-- { // newest first
		p := props[i]
		v := proposalView{ID: p.ID, Seq: p.Seq, Number: p.Number, BaseTrial: p.BaseTrial, State: string(p.State), Source: p.Source,
			Model: p.Model, Confidence: math.Max(0, math.Min(1, p.Confidence)), ConfidenceText: bot.ConfidenceText(p), Rationale: p.Rationale, Summary: p.Summary, Evidence: p.Evidence, Impact: p.ExpectedImpact,
			Diff:     changes(s.opt.Space.Diff(p.Base, session.Merge(p.Base, p.Patch))),
			EditText: bot.PatchText(p.Effective(), s.opt.Space), Created: stamp(p.CreatedAt)}
		if p.Decision != nil {
			if p.Decision.Edited != nil {
				v.Edited = changes(s.opt.Space.Diff(p.Base, session.Merge(p.Base, *p.Decision.Edited)))
			}
			v.Decision = &decisionView{Action: p.Decision.Action, Word: session.DecidedWord(p), By: p.Decision.By.String(), Platform: p.Decision.By.Platform,
				Where: p.Decision.By.Where, At: stamp(p.Decision.At), Feedback: p.Decision.Feedback, Note: p.Decision.Note}
		} else if p.State == session.ProposalVoid {
			v.Decision = &decisionView{Action: "void", Word: session.DecidedWord(p), By: "tunebot", Platform: "tunebot", At: stamp(p.CreatedAt)}
		}
		out = append(out, v)
	}
	return out
}

// maxAuditBytes bounds the audit timeline of one session view in bytes of JSON, as maxAudit
// does in entries: the page polls the view every few seconds, and the whole view must stay
// within one read's worth of answer (BytesPerRead), whatever a hostile advisor or trainer
// wrote into the entries. Seven failed proposals of 3 MB each made one read cost 84 reads
// and answer 429 (issue 44); now the newest entries that fit are sent and the rest counted.
const maxAuditBytes = 96 << 10

// auditViews is the timeline of es, newest first: each entry's strings cut to
// session.TextLimit (an entry an older tunebot stored whole may be megabytes), and only the
// newest that fit in maxAuditBytes; more is how many older ones were left out.
func auditViews(es []session.AuditEntry) (out []auditView, more int) {
	out = make([]auditView, 0, len(es))
	size := 0
	for i := len(es) - 1; i >= 0; i-- { // newest first
		e := es[i].Bounded()
		v := auditView{Seq: e.Seq, Time: stamp(e.Time), Kind: e.Kind, Actor: e.Actor.String() + " (" + e.Actor.Platform + ")", Detail: e.Detail, Text: auditText(e.Detail)}
		b, _ := json.Marshal(v)
		if size += len(b); size > maxAuditBytes {
			return out, i + 1
		}
		out = append(out, v)
	}
	return out, 0
}

// tags lists the curve tags of a session's trials, a page at a time: the tags of all
// trials in byte order, at most limit (TagsPage unless asked, at most maxTagsPage) after
// the tag after; next, when set, is the after of the following page. Each trial lists
// its tags of this page. Each trial's tags are read from after on, at most limit+1 of
// them (tagPager), never its whole list.
func (s *Server) tags(ctx context.Context, _ bot.Interaction, r *http.Request) (any, error) {
	ss, trials, err := s.withTrials(ctx, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	after, limit, err := tagsPageOf(r)
	if err != nil {
		return nil, err
	}
	per := []trialTags{}
	var all []string
	for _, t := range trials {
		tags, err := s.tagsAfter(ctx, ss.ID, t.Ref(), after, limit+1)
		if err != nil {
			return nil, fmt.Errorf("listing tags: %w", err)
		}
		all = append(all, tags...)
		tt := trialTags{Number: t.Number, Rung: t.Rung, State: string(t.State), Tags: tags} // cut to the page below
		if t.Score != nil {
			sc := t.Score.Total
			tt.Score = &sc
		}
		per = append(per, tt)
	}
	sort.Strings(all)
	page, next := pageOf(slices.Compact(all), "", limit)
	for i := range per {
		per[i].Tags = inPage(per[i].Tags, page)
	}
	metrics := map[string]session.Metrics{}
	for _, t := range trials {
		if len(t.Metrics) > 0 {
			metrics[fmt.Sprintf("%d@%d", t.Number, t.Rung)] = servedMetrics(t.Metrics)
		}
	}
	return map[string]any{"tags": page, "next": next, "trials": per, "metrics": metrics, "metric_names": session.MetricNames}, nil
}

// trialTags is one trial's line of a /tags answer.
type trialTags struct {
	Number int      `json:"number"`
	Rung   int      `json:"rung"`
	State  string   `json:"state"`
	Score  *float64 `json:"score"`
	Tags   []string `json:"tags"`
}

// tagPager is a store that lists a page of a trial's tags from a cursor (store.DB).
type tagPager interface {
	SeriesTagsPage(ctx context.Context, sessionID string, ref session.TrialRef, after string, limit int) ([]string, error)
}

// tagsAfter is at most limit of a trial's tags after after, in byte order: from the
// store's cursor when it has one, else cut from the whole list.
func (s *Server) tagsAfter(ctx context.Context, id string, ref session.TrialRef, after string, limit int) ([]string, error) {
	if p, ok := s.opt.Store.(tagPager); ok {
		return p.SeriesTagsPage(ctx, id, ref, after, limit)
	}
	tags, err := s.opt.Store.SeriesTags(ctx, id, ref)
	if err != nil {
		return nil, err
	}
	page, _ := pageOf(tags, after, limit)
	return page, nil
}

const (
	// DefaultPoints is how many points per curve the page gets unless it asks otherwise:
	// enough for a chart as wide as a screen.
	DefaultPoints = 500
	maxPoints     = 5000
	maxCurves     = 1000 // trials × tags in one request
	// MaxServedPoints bounds the points of one curves answer (about 9 MB of JSON): a request
	// for more curves than fit at the points asked gets fewer points per curve, at least
	// MaxServedPoints/maxCurves.
	MaxServedPoints = 500_000
)

type curve struct {
	Trial string    `json:"trial"` // "N@R"
	Tag   string    `json:"tag"`
	Steps []int64   `json:"steps"`
	Vals  []float32 `json:"values"` // 7 digits, as simple_value holds them: half the JSON of float64
	Total int       `json:"total"`  // points before down-sampling
}

// curves returns the chosen trials' chosen tags, down-sampled on the server (LTTB) so a
// session of twenty long trials stays quick to draw.
func (s *Server) curves(ctx context.Context, in bot.Interaction, r *http.Request) (any, error) {
	ss, err := s.lookup(ctx, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	points := DefaultPoints
	if v := q.Get("points"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 || n > maxPoints {
			return nil, badRequest("points must be a number from 10 to %d, not %q", maxPoints, bot.Truncate(v, 20))
		}
		points = n
	}
	refs, err := parseRefs(q.Get("trials"))
	if err != nil {
		return nil, err
	}
	tags := splitList(q.Get("tags"))
	if len(refs) == 0 || len(tags) == 0 {
		return nil, badRequest("choose at least one trial (trials=0@0,1@0) and one tag (tags=Train/mean_reward)")
	}
	if len(refs)*len(tags) > maxCurves {
		return nil, badRequest("%d trials × %d tags is more than %d curves at once; choose fewer", len(refs), len(tags), maxCurves)
	}
	for _, tag := range tags {
		if len(tag) > 200 {
			return nil, badRequest("tag %q is too long", bot.Truncate(tag, 40))
		}
	}
	if n := len(refs) * len(tags); points*n > MaxServedPoints {
		points = MaxServedPoints / n
	}
	out := make([]curve, 0, len(refs)*len(tags))
	for _, ref := range refs {
		for _, tag := range tags {
			pts, err := s.opt.Store.Series(ctx, session.SeriesKey{SessionID: ss.ID, Number: ref.Number, Rung: ref.Rung, Tag: tag})
			if errors.Is(err, session.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading a series: %w", err)
			}
			d := session.Downsample(pts, points)
			c := curve{Trial: fmt.Sprintf("%d@%d", ref.Number, ref.Rung), Tag: tag, Steps: make([]int64, len(d)), Vals: make([]float32, len(d)), Total: len(pts)}
			for i, p := range d {
				c.Steps[i] = p.Step
				c.Vals[i] = float32(p.Value)
				if math.IsNaN(p.Value) || math.IsInf(float64(c.Vals[i]), 0) {
					c.Vals[i] = 0 // JSON has no NaN; LTTB keeps finite points in practice
				}
			}
			out = append(out, c)
		}
	}
	return map[string]any{"curves": out, "points": points}, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseRefs reads "0@0,3@1" (a bare number means rung 0).
func parseRefs(s string) ([]session.TrialRef, error) {
	var out []session.TrialRef
	for _, p := range splitList(s) {
		num, rung, _ := strings.Cut(p, "@")
		n, err1 := strconv.Atoi(num)
		r := 0
		var err2 error
		if rung != "" {
			r, err2 = strconv.Atoi(rung)
		}
		if err1 != nil || err2 != nil || n < 0 || r < 0 || n > 9999 || r > 99 {
			return nil, badRequest("%q is not a trial (write NUMBER@RUNG, e.g. 3@1)", bot.Truncate(p, 20))
		}
		out = append(out, session.TrialRef{Number: n, Rung: r})
	}
	return out, nil
}

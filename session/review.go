package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Review is a rung's promotion review (docs/design.md §1): before the promotions to Rung
// start, the plan is shown; people may say Go, promote a trial (it replaces the lowest
// planned one, so the budget stays) or drop one (the next in rank takes its place). It
// waits until Until (session.promotion_review; approval mode 15 minutes, automatic mode
// not at all by default), then goes ahead.
type Review struct {
	Rung int `json:"rung"`
	// Planned is tunebot's plan, Plan the plan as it stands: the tuned trials by rank, then
	// the baseline when it is carried along (control).
	Planned  []int        `json:"planned"`
	Plan     []int        `json:"plan"`
	Changes  []PlanChange `json:"changes,omitempty"`
	OpenedAt time.Time    `json:"opened_at"`
	Until    time.Time    `json:"until"`
	Done     bool         `json:"done,omitempty"`
	DoneAt   time.Time    `json:"done_at,omitzero"`
	// GoBy is who said go; nil when the wait ran out (or there was none).
	GoBy *Actor `json:"go_by,omitempty"`
}

// PlanChange is one change a person made to a promotion plan.
type PlanChange struct {
	Action string `json:"action"` // ReviewPromote or ReviewDrop
	Trial  int    `json:"trial"`
	// Other is, for a promote, the planned trial it replaced; for a drop, the trial that
	// took the dropped one's place (-1: none was left).
	Other int       `json:"other"`
	By    Actor     `json:"by"`
	At    time.Time `json:"at"`
}

// Promotion records that a person put a trial into its rung's plan.
type Promotion struct {
	By     Actor     `json:"by"`
	Action string    `json:"action"` // promote: put in over Over; drop: took Over's place when it was dropped
	Over   int       `json:"over"`
	At     time.Time `json:"at"`
}

// Text says it as the ladder shows it: "promoted by ann over trial 5", "promoted when ann
// dropped trial 5".
func (p Promotion) Text() string {
	if p.Action == ReviewDrop {
		return fmt.Sprintf("promoted when %s dropped trial %d", p.By, p.Over)
	}
	return fmt.Sprintf("promoted by %s over trial %d", p.By, p.Over)
}

// Text says the change as every surface shows it: "ann promoted trial 3 over trial 1",
// "ann dropped trial 2; trial 4 took its place".
func (c PlanChange) Text() string {
	if c.Action != ReviewDrop {
		return fmt.Sprintf("%s promoted trial %d over trial %d", c.By, c.Trial, c.Other)
	}
	line := fmt.Sprintf("%s dropped trial %d", c.By, c.Trial)
	if c.Other >= 0 {
		line += fmt.Sprintf("; trial %d took its place", c.Other)
	}
	return line
}

// How says how trial n is in the plan: a person's promotion, the baseline carried along
// as the control, or tunebot's ranking.
func (r Review) How(n int, control bool) string {
	switch p := r.PromotedBy(n); {
	case p != nil:
		return p.Text()
	case n == 0 && control:
		return "the baseline, carried along (control)"
	}
	return "ranked"
}

// Review actions.
const (
	ReviewGo      = "go"
	ReviewPromote = "promote"
	ReviewDrop    = "drop"
)

// OpenReview returns the promotion review that waits, if any.
func (s Session) OpenReview() (Review, bool) {
	for _, r := range s.Reviews {
		if !r.Done {
			return r, true
		}
	}
	return Review{}, false
}

// review returns the review of promotions to rung, nil when there is none yet.
func (s *Session) review(rung int) *Review {
	for i := range s.Reviews {
		if s.Reviews[i].Rung == rung {
			return &s.Reviews[i]
		}
	}
	return nil
}

// PromotedBy is the person who brought trial n into the plan, nil when tunebot planned it.
func (r Review) PromotedBy(n int) *Promotion {
	var out *Promotion
	for _, c := range r.Changes {
		switch {
		case c.Action == ReviewPromote && c.Trial == n:
			out = &Promotion{By: c.By, Action: ReviewPromote, Over: c.Other, At: c.At}
		case c.Action == ReviewDrop && c.Other == n:
			out = &Promotion{By: c.By, Action: ReviewDrop, Over: c.Trial, At: c.At}
		case c.Action == ReviewDrop && c.Trial == n:
			out = nil
		}
	}
	return out
}

// PlanText says a plan in words: "trials 8, 10, 5 and the baseline go to 900 iterations".
func PlanText(plan []int, iterations int) string {
	var names []string
	base := false
	for _, n := range plan {
		if n == 0 {
			base = true
			continue
		}
		names = append(names, fmt.Sprint(n))
	}
	var what string
	switch {
	case len(names) == 0 && base:
		what = "the baseline goes"
	case len(names) == 0:
		return "no trial goes on: none passed the gates"
	case len(names) == 1:
		what = "trial " + names[0]
	default:
		what = "trials " + strings.Join(names[:len(names)-1], ", ")
		if !base {
			what += " and " + names[len(names)-1]
		} else {
			what += ", " + names[len(names)-1]
		}
	}
	if len(names) > 0 {
		if base {
			what += " and the baseline"
		}
		what += map[bool]string{true: " go", false: " goes"}[len(names) > 1 || base]
	}
	return fmt.Sprintf("%s to %d iterations", what, iterations)
}

// ReviewReplies are the typed forms that change or start a waiting plan.
const ReviewReplies = "go · promote N (replaces the lowest planned trial) · drop N (the next in rank takes its place)"

// ReviewRequest is a person's Go, promote N or drop N on the waiting promotion plan.
type ReviewRequest struct {
	SessionID string
	Action    string // ReviewGo, ReviewPromote, ReviewDrop
	Trial     int    // promote, drop
	// Rung is the plan a button was on (0: the one that waits): a Go clicked on an older
	// plan's card must not start the next one.
	Rung int
	By   Actor
}

// Review changes or starts the session's waiting promotion plan. Every change is audited
// and stored with who made it; once the promotions started, the plan is closed.
func (e *Engine) Review(ctx context.Context, r ReviewRequest) (Review, string, error) {
	switch r.Action {
	case ReviewGo, ReviewPromote, ReviewDrop:
	default:
		return Review{}, "", Userf(ErrConflict, "unknown review action %q (%s)", r.Action, ReviewReplies)
	}
	trials, err := e.cfg.Store.Trials(ctx, r.SessionID)
	if err != nil {
		return Review{}, "", e.lookupErr(r.SessionID, err)
	}
	var got Review
	var text string
	now := time.Now().UTC()
	s, err := e.cfg.Store.UpdateSession(ctx, r.SessionID, func(x *Session) error {
		rv, err := waitingReview(x, r.Rung)
		if err != nil {
			return err
		}
		if text, err = changePlan(x, rv, trials, r, now); err != nil {
			return err
		}
		got = *rv
		x.UpdatedAt = now
		return nil
	})
	if err != nil {
		return Review{}, "", e.lookupErr(r.SessionID, err)
	}
	e.audit(ctx, s.ID, "promotion_review", r.By, map[string]any{"rung": got.Rung, "action": r.Action, "trial": r.Trial, "plan": got.Plan})
	rv := got
	e.notify(Event{Kind: EventReview, Session: s, Review: &rv, Text: text})
	if s.State != StatePaused {
		e.ensureWorker(s.ID)
	}
	e.bump()
	return got, text, nil
}

// waitingReview is x's review that waits, the only one a person may change: x must be
// active, and a button on an older plan's card (rung, when not 0) does not reach the next
// plan.
func waitingReview(x *Session, rung int) (*Review, error) {
	if !x.State.Active() {
		return nil, Userf(ErrConflict, "session %s is %s: no promotion plan waits", short(x.ID), x.State)
	}
	i := slices.IndexFunc(x.Reviews, func(v Review) bool { return !v.Done })
	if i >= 0 && rung > 0 && x.Reviews[i].Rung != rung {
		if old := x.review(rung); old != nil {
			return nil, Userf(ErrConflict, "the promotions to rung %d have started (%s); the plan for rung %d waits now", old.Rung, reviewEnd(*old), x.Reviews[i].Rung)
		}
		return nil, Userf(ErrNotFound, "session %s has no promotion plan for rung %d", short(x.ID), rung)
	}
	if i < 0 {
		if len(x.Reviews) > 0 {
			last := x.Reviews[len(x.Reviews)-1]
			return nil, Userf(ErrConflict, "the promotions to rung %d have started (%s); nothing waits for a review", last.Rung, reviewEnd(last))
		}
		return nil, Userf(ErrConflict, "no promotion plan waits: it is shown when rung 0's trials have all finished")
	}
	return &x.Reviews[i], nil
}

// changePlan applies r to waiting review rv of x (a Go closes it; a promotion or a drop
// changes its plan and is recorded with who made it) and returns the line that says so.
func changePlan(x *Session, rv *Review, trials []Trial, r ReviewRequest, now time.Time) (string, error) {
	iters := x.Settings.Rungs[rv.Rung]
	if r.Action == ReviewGo {
		by := r.By
		rv.Done, rv.DoneAt, rv.GoBy = true, now, &by
		return fmt.Sprintf("%s said go: %s", r.By, PlanText(rv.Plan, iters)), nil
	}
	if err := planTrialRefusal(x, trials, r.Trial, rv.Rung-1); err != nil {
		return "", err
	}
	c := PlanChange{Action: r.Action, Trial: r.Trial, Other: -1, By: r.By, At: now}
	var text string
	var err error
	if r.Action == ReviewPromote {
		text, err = promoteInPlan(rv, &c, x.Settings.Control, iters)
	} else {
		text, err = dropFromPlan(x, trials, rv, &c, iters)
	}
	if err != nil {
		return "", err
	}
	rv.Changes = append(rv.Changes, c)
	return text, nil
}

// planTrialRefusal refuses a person's promotion or drop of trial num at rung from: it must
// exist and have passed the gates (a person's choice never makes a trial eligible), and it
// is not the baseline carried along as the control.
func planTrialRefusal(x *Session, trials []Trial, num, from int) error {
	t := findRung(trials, num, from)
	switch {
	case t == nil:
		return Userf(ErrNotFound, "session %s has no trial %d at rung %d", short(x.ID), num, from)
	case !t.Eligible():
		return Userf(ErrConflict, "trial %d did not pass the gates at rung %d (%s): a person's choice never makes a trial eligible", num, from, joinLines(scoreReasons(*t)))
	case x.Settings.Control && num == 0:
		return Userf(ErrConflict, "the baseline is carried along as the control (control: true) in addition to the promoted trials; it takes no tuned trial's place")
	}
	return nil
}

// promoteInPlan puts c's trial, not yet in the plan, in the place of the plan's last tuned
// trial.
func promoteInPlan(rv *Review, c *PlanChange, control bool, iters int) (string, error) {
	if slices.Contains(rv.Plan, c.Trial) {
		return "", Userf(ErrConflict, "trial %d is already in the plan: %s", c.Trial, PlanText(rv.Plan, iters))
	}
	k := lastTuned(rv.Plan, control)
	if k < 0 {
		return "", Userf(ErrConflict, "the plan has no tuned trial to replace")
	}
	c.Other = rv.Plan[k]
	rv.Plan = slices.Insert(slices.Delete(rv.Plan, k, k+1), k, c.Trial)
	return fmt.Sprintf("%s promoted trial %d over trial %d: %s", c.By, c.Trial, c.Other, PlanText(rv.Plan, iters)), nil
}

// dropFromPlan takes c's trial out of the plan; the next eligible trial in rank, if any,
// takes its place after the tuned trials.
func dropFromPlan(x *Session, trials []Trial, rv *Review, c *PlanChange, iters int) (string, error) {
	if !slices.Contains(rv.Plan, c.Trial) {
		return "", Userf(ErrConflict, "trial %d is not in the plan: %s", c.Trial, PlanText(rv.Plan, iters))
	}
	k := slices.Index(rv.Plan, c.Trial)
	rv.Plan = slices.Delete(rv.Plan, k, k+1)
	next, ok := nextInRank(x, trials, rv, c.Trial)
	if !ok {
		return fmt.Sprintf("%s dropped trial %d; no other trial passed the gates to take its place: %s", c.By, c.Trial, PlanText(rv.Plan, iters)), nil
	}
	c.Other = next
	rv.Plan = slices.Insert(rv.Plan, lastTuned(rv.Plan, x.Settings.Control)+1, next)
	return fmt.Sprintf("%s dropped trial %d; trial %d, next in rank, takes its place: %s", c.By, c.Trial, next, PlanText(rv.Plan, iters)), nil
}

// reviewEnd says how a closed review ended.
func reviewEnd(r Review) string {
	if r.GoBy != nil {
		return fmt.Sprintf("%s said go at %s", r.GoBy, r.DoneAt.Format("15:04:05 UTC"))
	}
	return "started at " + r.DoneAt.Format("15:04:05 UTC")
}

func scoreReasons(t Trial) []string {
	if t.Score != nil && len(t.Score.Reasons) > 0 {
		return t.Score.Reasons
	}
	return []string{string(t.State)}
}

// findRung is trial n's record at rung among trials, nil when there is none.
func findRung(trials []Trial, n, rung int) *Trial {
	for i := range trials {
		if trials[i].Number == n && trials[i].Rung == rung {
			return &trials[i]
		}
	}
	return nil
}

// lastTuned is the index of the plan's lowest tuned trial (the baseline carried along as
// the control is no tuned trial), -1 when there is none.
func lastTuned(plan []int, control bool) int {
	for k := len(plan) - 1; k >= 0; k-- {
		if !(control && plan[k] == 0) {
			return k
		}
	}
	return -1
}

// nextInRank is the best-ranked eligible trial of the rung below rv's that is not in its
// plan and that no person dropped from it (and did not promote again), dropping included.
func nextInRank(x *Session, trials []Trial, rv *Review, dropping int) (int, bool) {
	dropped := map[int]bool{}
	for _, c := range rv.Changes {
		dropped[c.Trial] = c.Action == ReviewDrop
	}
	dropped[dropping] = true
	for _, t := range promotable(x, trials, rv.Rung) {
		if !slices.Contains(rv.Plan, t.Number) && !dropped[t.Number] {
			return t.Number, true
		}
	}
	return 0, false
}

// promotable lists the trials that may be promoted to rung, in rank order: the eligible
// trials of the rung below (without the baseline when it is carried along as the control),
// ranked by their equal-training figure and people's preferences (rankForPromotion).
func promotable(x *Session, trials []Trial, rung int) []Trial {
	var el []Trial
	for _, t := range trials {
		if t.Rung == rung-1 && t.Eligible() && !(x.Settings.Control && t.Number == 0) {
			el = append(el, t)
		}
	}
	return rankForPromotion(x.Settings, trials, el, x.Preferences)
}

// reviewPlan returns the parents to promote to rung, from its review: opened here (the plan
// posted) when there is none yet, closed once its wait ran out. wait is true while the
// review waits for people; the worker then plans again at j.wakeAt or when woken.
func (e *Engine) reviewPlan(ctx context.Context, n *snapshot, j *jobs, rung int) (parents []Trial, wait bool, err error) {
	s := &n.s
	rv := s.review(rung)
	if rv == nil && len(n.rung(rung)) > 0 {
		return promoted(*n, rung), false, nil // promoted before reviews existed
	}
	now := time.Now().UTC()
	shown := false // the plan was posted by this step
	if rv == nil {
		if rung == 1 {
			e.expireCards(ctx, s.ID) // rung 0 ended
		}
		plan := promoted(*n, rung)
		if len(plan) == 0 {
			return nil, false, nil // nothing to review: no trial passed the gates
		}
		if rv, err = e.openReview(ctx, s, newReview(rung, plan, s.Settings.ReviewWait(), now)); err != nil {
			return nil, false, err
		}
		shown = true
	}
	if !rv.Done && !now.Before(rv.Until) {
		if rv, err = e.closeReview(ctx, s, rung, now); err != nil {
			return nil, false, err
		}
	}
	if !rv.Done {
		if err := e.awaitReview(ctx, s, j, rv, shown); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	}
	for _, num := range rv.Plan {
		if t := n.trial(num, rung-1); t != nil {
			parents = append(parents, *t)
		}
	}
	return parents, false, nil
}

// newReview is the review of the plan to promote plan's trials to rung, opened at now: it
// waits for people until now+wait, and is closed at once when there is no wait.
func newReview(rung int, plan []Trial, wait time.Duration, now time.Time) Review {
	nums := make([]int, len(plan))
	for i, t := range plan {
		nums[i] = t.Number
	}
	v := Review{Rung: rung, Planned: nums, Plan: slices.Clone(nums), OpenedAt: now, Until: now.Add(wait)}
	if wait <= 0 {
		v.Done, v.DoneAt = true, now
	}
	return v
}

// openReview stores review v in session *s (unless one for its rung is there already),
// audits and posts its plan, and returns the stored review.
func (e *Engine) openReview(ctx context.Context, s *Session, v Review) (*Review, error) {
	s2, err := e.cfg.Store.UpdateSession(ctx, s.ID, func(x *Session) error {
		if x.review(v.Rung) == nil {
			x.Reviews = append(x.Reviews, v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("opening the promotion review: %w", err)
	}
	*s = s2
	rv := s.review(v.Rung)
	e.audit(ctx, s.ID, "promotion_plan", System, map[string]any{"rung": v.Rung, "plan": rv.Plan, "until": rv.Until})
	cur := *rv
	e.notify(Event{Kind: EventReview, Session: s2, Review: &cur, Text: ReviewLine(s2, cur)})
	return rv, nil
}

// closeReview closes session *s's review for rung, whose wait ran out at now, and says so.
func (e *Engine) closeReview(ctx context.Context, s *Session, rung int, now time.Time) (*Review, error) {
	s2, err := e.cfg.Store.UpdateSession(ctx, s.ID, func(x *Session) error {
		if v := x.review(rung); v != nil && !v.Done {
			v.Done, v.DoneAt = true, now
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("closing the promotion review: %w", err)
	}
	*s = s2
	rv := s.review(rung)
	e.audit(ctx, s.ID, "promotion_review", System, map[string]any{"rung": rung, "action": "timeout", "plan": rv.Plan})
	cur := *rv
	e.notify(Event{Kind: EventReview, Session: s2, Review: &cur, Text: ReviewLine(s2, cur)})
	return rv, nil
}

// awaitReview has the worker wait for open review rv until its end (j.wakeAt) in the state
// reviewState gives, and shows the plan again when the session comes back to waiting on it
// (shown: this step posted it already).
func (e *Engine) awaitReview(ctx context.Context, s *Session, j *jobs, rv *Review, shown bool) error {
	j.wakeAt = rv.Until
	msg := ReviewLine(*s, *rv)
	state := reviewState(s.Settings.Mode)
	if s.State == state && s.Message == msg {
		return nil
	}
	s2, err := e.setState(ctx, s.ID, state, msg, nil)
	if err != nil {
		return err
	}
	if s.State != state && !shown {
		// Back to waiting on the plan (resumed after a pause): it is shown again,
		// as a resumed session's waiting proposals are.
		cur := *rv
		e.notify(Event{Kind: EventReview, Session: s2, Review: &cur, Text: msg})
	}
	e.bump()
	return nil
}

// reviewState is a session's state while its promotion review waits: approval mode waits
// for a person's Go; automatic mode only for the clock.
func reviewState(mode string) State {
	if mode == ModeApproval {
		return StateAwaitingApproval
	}
	return StateRunning
}

// ReviewLine is the one line a promotion review shows everywhere: its plan, and while it
// waits how to change it and until when.
func ReviewLine(s Session, r Review) string {
	iters := 0
	if r.Rung < len(s.Settings.Rungs) {
		iters = s.Settings.Rungs[r.Rung]
	}
	plan := PlanText(r.Plan, iters)
	if r.Done {
		if r.GoBy != nil {
			return fmt.Sprintf("promotions to rung %d start (%s said go): %s", r.Rung, r.GoBy, plan)
		}
		return fmt.Sprintf("promotions to rung %d start: %s", r.Rung, plan)
	}
	return fmt.Sprintf("promotion review for rung %d: %s; %s, or it goes ahead at %s", r.Rung, plan, ReviewReplies, r.Until.UTC().Format("15:04 UTC"))
}

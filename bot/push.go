package bot

import (
	"fmt"
	"strings"

	"tunebot/session"
)

// PushInput is what a phone notification says about an event.
type PushInput struct {
	Event  session.Event
	Trials []session.Trial // the session's trials, as stored
	// Poster is the first frame of the clip the event is about (a finished trial's, the
	// best trial's at a session's end), nil for none.
	Poster *Attachment
	// Link opens the event's trial (or the session) on the monitoring page when the
	// notification is tapped; "" when the page has no public address.
	Link string
}

// PushCard is a phone notification (ntfy, webhook): one phone-sized line that says what
// happened ("trial 8 @ rung 0: +0.041 vs baseline @ rung 0 · eligible · 5/12 done"), the poster
// frame of the trial's clip, and the page to open when tapped. ok is false for an event a
// phone need not hear.
func PushCard(in PushInput) (Card, bool) {
	e, s := in.Event, in.Event.Session
	c := Card{Session: s.ID, Title: "session " + session.Short(s.ID), Link: in.Link}
	var line string
	switch {
	case e.Kind == session.EventTrialFinished && e.Trial != nil:
		c.Kind = "trial"
		line = trialPushLine(s.Settings, in.Trials, *e.Trial) + " · " + doneLine(s, in.Trials)
	case e.Kind == session.EventProposalReady && e.Proposal != nil:
		c.Kind = "proposal"
		p := e.Proposal
		n := len(p.Patch.Weights) + len(p.Patch.Params)
		line = fmt.Sprintf("proposal %d for trial %d waits for your decision: %d change%s · %s", p.Seq, p.Number, n, plural(n), ConfidenceText(*p))
		c.Urgent = true
	case e.Kind == session.EventReview && e.Review != nil && !e.Review.Done && s.Settings.Mode == session.ModeApproval:
		// approval mode waits for a person's go: a decision waits
		c.Kind = "review"
		r := e.Review
		line = fmt.Sprintf("promotions to rung %d wait for your go (or go ahead at %s): %s", r.Rung, r.Until.UTC().Format("15:04 UTC"),
			session.PlanText(r.Plan, s.Settings.Rungs[r.Rung]))
		c.Urgent = true
	case unaskedPause(e):
		// a full disk or a cluster that went away waits for a person: the night's work
		// stops until then
		c.Kind, c.Urgent = "paused", true
		line = fmt.Sprintf("session %s paused: %s", session.Short(s.ID), Neutralise(s.Reason, 200))
	case e.Kind == session.EventSessionFinished:
		c.Kind = "summary"
		line = finishedPushLine(s, in.Trials)
		c.Urgent = s.State == session.StateFailed
	default:
		return Card{}, false
	}
	c.Blocks = []Block{Text(line)}
	if in.Poster != nil {
		c.Blocks = append(c.Blocks, Block{Kind: BlockAttachments, Attachments: []Attachment{*in.Poster}})
	}
	return c, true
}

// finishedPushLine is the phone's line for session s that ended: how, and what it leaves (the
// reason of a failure or cancel, the outcome, the saved trial and its verdict, or the gain).
func finishedPushLine(s session.Session, trials []session.Trial) string {
	line := fmt.Sprintf("session %s %s", session.Short(s.ID), session.StateLabel(s.State))
	switch {
	case s.State == session.StateFailed || s.State == session.StateCancelled:
		if s.Reason != "" {
			line += ": " + Neutralise(s.Reason, 120)
		}
	case s.Outcome == session.OutcomeNoImprovement:
		line += " (" + s.Outcome + "): " + s.OutcomeText()
	case session.Unconfirmed(s.Outcome):
		// the phone says it plainly: a preset was saved, but not as an improvement
		line += " (" + s.Outcome + "): " + s.OutcomeText() + "; preset " + s.Preset + " saved, marked so"
		if r, ok := session.Compare(s, trials); ok && r.Final {
			// which trial it is, as every other surface names it
			line += fmt.Sprintf(" (trial %d @ rung %d)", r.Best.Trial, r.Best.Rung)
		}
		if s.Result != nil && s.Result.Verdict != nil {
			line += ": " + s.Result.Verdict.Text()
		}
	default:
		if r, ok := session.Compare(s, trials); ok {
			line += ": " + r.Headline()
		}
	}
	return line
}

// pushWorthy reports whether a phone hears of e at all (PushCard then decides what it
// says): a finished trial, a waiting decision, a session that ended, or one a full disk
// or its cluster paused. Any other update, a person's pause among them, stays in chat.
func pushWorthy(e session.Event) bool {
	switch e.Kind {
	case session.EventTrialFinished, session.EventProposalReady, session.EventSessionFinished, session.EventReview:
		return true
	}
	return unaskedPause(e)
}

// unaskedPause reports whether e is a session paused for lack of disk space or because its
// cluster is unavailable: a pause no person asked for, which waits for one.
func unaskedPause(e session.Event) bool {
	s := e.Session
	return e.Kind == session.EventSessionUpdated && s.State == session.StatePaused &&
		(session.IsDiskFullReason(s.Reason) || session.IsClusterUnavailableReason(s.Reason))
}

func trialPushLine(st session.Settings, trials []session.Trial, t session.Trial) string {
	head := fmt.Sprintf("trial %d @ rung %d", t.Number, t.Rung)
	v, ok := session.VersusControl(st, trials, t)
	switch {
	case t.State == session.TrialFailed:
		return head + " failed: " + Neutralise(strings.TrimPrefix(t.Reason, "train job failed: "), 80)
	case !ok:
		return head + " " + string(t.State)
	case !t.PassesGates():
		return head + ": " + v.String() + " · not eligible" // labelled as every surface does (rung 0 too)
	}
	return head + ": " + v.String() + " · eligible"
}

// doneLine counts the session's finished rung-0 trials against its trial count.
func doneLine(s session.Session, trials []session.Trial) string {
	done := 0
	for _, t := range trials {
		if t.Rung == 0 && t.State.Terminal() {
			done++
		}
	}
	return fmt.Sprintf("%d/%d done", done, s.Settings.TrialCount)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// PushText is a card's text for a notification body: its text blocks, no files, buttons
// or mentions (a phone shows who it is for).
func PushText(c Card) string {
	c.Blocks, c.Mentions = withoutAttachments(c.Blocks), nil
	return RenderText(c, nil)
}

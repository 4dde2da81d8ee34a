package session

import (
	"context"
	"fmt"
)

// BusyError refuses a start while another session holds the one active slot (docs/design.md
// §1). It names that session and what it waits for, so that a person knows which session
// to resume, decide on or cancel; each surface says how that is done there (the terminal
// prints its commands).
type BusyError struct {
	Holder Session // the active session
	Waits  string  // what it waits for: "waiting for a decision on proposal 1", its message
	Err    error   // the store's refusal, wrapping ErrBusy
}

// Error names the active session, its state and what it waits for: "busy: session ab12cd34
// is paused (waiting for a decision on proposal 1)". It never names the session the refused
// start would have made: nobody can act on that one.
func (e *BusyError) Error() string {
	line := fmt.Sprintf("busy: session %s is %s", short(e.Holder.ID), StateLabel(e.Holder.State))
	if e.Waits != "" {
		line += " (" + e.Waits + ")"
	}
	return line
}

func (e *BusyError) Unwrap() error { return e.Err }

// wayOut is what ends the wait: a paused or interrupted session is resumed, one that waits
// for people is decided on, one that runs finishes; any of them may be cancelled.
func (e *BusyError) wayOut() string {
	switch e.Holder.State {
	case StatePaused, StateInterrupted:
		return "resume or cancel it first"
	case StateAwaitingApproval:
		return "decide or cancel it first"
	}
	return "let it finish or cancel it first"
}

// busyErr is the refusal of a start the store answered with ErrBusy: it reads the active
// session and says what it waits for. When that read fails (or the session ended in
// between) the refusal says only that another session is active.
func (e *Engine) busyErr(ctx context.Context, err error) error {
	holder, ok, lerr := e.Active(ctx)
	if lerr != nil || !ok {
		return &UserError{Msg: "busy: another session is active, and only one runs at a time", Err: err}
	}
	be := &BusyError{Holder: holder, Waits: e.waitsFor(ctx, holder), Err: err}
	return &UserError{Msg: be.Error() + "; only one session runs at a time: " + be.wayOut(), Err: be}
}

// waitsFor is what active session s waits for: a person's decision on its proposals or its
// promotion plan, the reason it was paused or interrupted, or a resume; for a session that
// runs, its message.
func (e *Engine) waitsFor(ctx context.Context, s Session) string {
	if s.State == StatePaused && s.Reason != "" {
		return s.Reason
	}
	if s.State == StatePaused || s.State == StateAwaitingApproval {
		if ps, err := e.cfg.Store.Proposals(ctx, s.ID); err == nil {
			if pending := pendingOf(ps); len(pending) > 0 {
				return "waiting for a decision on " + proposalNames(pending)
			}
		}
		if r, ok := s.OpenReview(); ok {
			return fmt.Sprintf("waiting for go on its promotion plan to rung %d", r.Rung)
		}
	}
	switch {
	case s.State == StatePaused:
		return "waiting for a resume"
	case s.State == StateInterrupted && s.Reason != "":
		return s.Reason + "; waiting for a resume"
	}
	return s.Message
}

// pendingOf is the proposals of ps that wait for a decision.
func pendingOf(ps []Proposal) []Proposal {
	var out []Proposal
	for _, p := range ps {
		if p.State == ProposalPending {
			out = append(out, p)
		}
	}
	return out
}

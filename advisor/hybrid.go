package advisor

import (
	"context"
	"fmt"
	"log/slog"
	"math"

	"tunebot/session"
)

// Hybrid modes.
const (
	HybridOff       = "off"       // the primary advisor only
	HybridAlternate = "alternate" // advisor and sampler take turns
	HybridStall     = "stall"     // the sampler steps in when the advisor stops improving
)

// hybridImprove is the margin a trial must beat the best score before it by to count as an
// improvement: the session's early-stop rule (docs/design.md §1).
const hybridImprove = session.NoiseMargin

// Hybrid shares the proposals of a session between the advisor and the numeric sampler.
// Both see the same request, so the same history. It implements session.Advisor; failures
// are returned as they are, since falling back is the engine's decision per session.
type Hybrid struct {
	primary    session.Advisor
	sampler    session.Advisor
	mode       string
	stallAfter int
	audit      session.AuditLog
	log        *slog.Logger
}

var _ session.Advisor = (*Hybrid)(nil)

// NewHybrid returns the hybrid of primary (the DeepSeek advisor) and sampler (Sampler) in mode
// off, alternate or stall (an unknown mode, or a nil sampler, acts as off). In stall mode
// the sampler proposes when the advisor's last stallAfter proposals since the sampler's
// last turn each failed to beat the best score before them by 0.01. audit may be nil.
func NewHybrid(primary, sampler session.Advisor, mode string, stallAfter int, audit session.AuditLog, logger *slog.Logger) *Hybrid {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	switch mode {
	case HybridOff, HybridAlternate, HybridStall:
	default:
		logger.Warn("unknown hybrid mode, using off", "mode", mode)
		mode = HybridOff
	}
	if sampler == nil {
		mode = HybridOff
	}
	return &Hybrid{primary: primary, sampler: sampler, mode: mode, stallAfter: max(stallAfter, 1), audit: audit, log: logger}
}

// Propose asks the proposer whose turn it is and records in the audit who and why.
func (h *Hybrid) Propose(ctx context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	source, why := h.choose(req.History)
	adv := h.primary
	if source == session.SourceSampler {
		adv = h.sampler
	}
	sug, err := adv.Propose(ctx, req)
	outcome := "ok"
	if err != nil {
		outcome = "error: " + err.Error()
	} else if sug.Source == "" {
		sug.Source = source
	}
	h.log.Info("proposer chosen", "session", req.SessionID, "proposer", source, "mode", h.mode, "why", why, "outcome", outcome)
	if h.audit != nil {
		e := session.AuditEntry{SessionID: req.SessionID, Kind: "proposer_choice", Actor: session.System, Detail: map[string]any{
			"proposer": source, "mode": h.mode, "reason": why, "outcome": outcome, "history": len(req.History),
		}}
		if aerr := h.audit.Append(context.WithoutCancel(ctx), e); aerr != nil {
			h.log.Error("auditing the proposer choice", "error", aerr)
		}
	}
	return sug, err
}

// choose returns SourceAdvisor or SourceSampler and why, in words for the audit.
func (h *Hybrid) choose(hist []session.TrialSummary) (string, string) {
	switch h.mode {
	case HybridAlternate:
		// The first proposal after the baseline (one trial in the history) is the advisor's.
		if len(hist)%2 == 1 {
			return session.SourceAdvisor, fmt.Sprintf("alternate: %s so far, advisor's turn", plural(len(hist), "trial"))
		}
		return session.SourceSampler, fmt.Sprintf("alternate: %s so far, sampler's turn", plural(len(hist), "trial"))
	case HybridStall:
		if n, stalled := hybridStalled(hist, h.stallAfter); stalled {
			return session.SourceSampler, fmt.Sprintf("stall: the advisor's last %d proposals did not improve the best score", n)
		}
		return session.SourceAdvisor, "stall: the advisor is still improving or has had too few turns"
	}
	return session.SourceAdvisor, "hybrid off: advisor only"
}

// hybridStalled reports whether the last n advisor trials after the sampler's most recent
// trial all failed to improve on the best eligible score before each of them. Counting only
// since the sampler's last turn gives the advisor n fresh turns after each intervention.
func hybridStalled(hist []session.TrialSummary, n int) (int, bool) {
	start := 0
	for i, t := range hist {
		if t.Source == session.SourceSampler {
			start = i + 1
		}
	}
	best := math.Inf(-1)
	var improved []bool // per advisor trial since start, in order
	for i, t := range hist {
		ok := t.Eligible && t.Score != nil
		if i >= start && t.Source == session.SourceAdvisor {
			improved = append(improved, ok && *t.Score > best+hybridImprove)
		}
		if ok && *t.Score > best {
			best = *t.Score
		}
	}
	if len(improved) < n {
		return n, false
	}
	for _, imp := range improved[len(improved)-n:] {
		if imp {
			return n, false
		}
	}
	return n, true
}

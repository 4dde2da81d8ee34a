package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// ErrClusterUnavailable marks a job that could not be submitted or followed because its
// cluster does not answer (a Ray head that went away) or lost it (a head restarted since):
// as with a full disk, the session pauses with the reason instead of failing the trial,
// which is no result of the search, and the trial's job runs again on resume.
var ErrClusterUnavailable = errors.New("the cluster is unavailable")

// ClusterUnavailableReason is how the reason of a session paused for its cluster begins.
const ClusterUnavailableReason = "the cluster is unavailable"

// IsClusterUnavailableReason reports whether a session's reason is a pause for its cluster.
func IsClusterUnavailableReason(reason string) bool {
	return strings.HasPrefix(reason, ClusterUnavailableReason)
}

// clusterUnavailable reports whether a job failed for its cluster rather than itself.
func clusterUnavailable(err error) bool {
	return err != nil && errors.Is(err, ErrClusterUnavailable)
}

// clusterReason is the pause reason for err: the cluster's words (a JobError's reason) and
// the way on.
func clusterReason(err error) string {
	why := err.Error()
	var je *JobError
	if errors.As(err, &je) {
		why = je.Reason
	}
	return ClusterUnavailableReason + ": " + why + "; resume once it is back (the interrupted trials run again)"
}

// trialClusterUnavailable ends trial t, whose job its cluster could not run or follow, as
// interrupted rather than failed, as trialOutOfSpace does for a full disk: its remote job
// is forgotten (a head that comes back without it would be asked about it forever; one that
// still has it sees it replaced, never run twice at once), its half-done run directory is
// discarded, and the session is asked to pause. The returned error pauses it.
func (e *Engine) trialClusterUnavailable(ctx context.Context, s Session, t Trial, jobErr error) error {
	e.log.Warn("a trial's cluster is unavailable; the session pauses", "session", s.ID, "trial", t.Number, "rung", t.Rung, "err", jobErr)
	if !t.Trained && t.RunDir != "" {
		if err := e.removeDir(filepath.Join(s.ID, t.RunDir)); err != nil {
			e.log.Warn("discarding the run directory of a trial whose cluster is unavailable", "session", s.ID, "trial", t.Number, "err", err)
		}
	}
	if _, err := e.cfg.Store.UpdateSession(ctx, s.ID, func(x *Session) error {
		x.PauseAsked, x.Reason = true, CapText(clusterReason(jobErr), TextLimit)
		return nil
	}); err != nil {
		return fmt.Errorf("%w: asking the pause: %w", ErrClusterUnavailable, err)
	}
	t.State, t.Reason, t.Proc, t.EndedAt = TrialInterrupted, "its cluster was unavailable: it runs again on resume", nil, time.Time{}
	if err := e.cfg.Store.PutTrial(ctx, t); err != nil {
		return fmt.Errorf("saving trial: %w", err)
	}
	e.audit(ctx, s.ID, "trial_cluster_unavailable", System, map[string]any{"trial": t.Number, "rung": t.Rung, "error": jobErr.Error()})
	return fmt.Errorf("%w: %w", ErrClusterUnavailable, jobErr)
}

// clusterStepFailed handles a step whose job found its cluster unavailable (stepErr): the
// session pauses (once its other running jobs end, which meet the same cluster) instead of
// failing. It returns the error that still fails the session, nil when paused.
func (e *Engine) clusterStepFailed(ctx context.Context, id string, j *jobs, stepErr error) error {
	e.mu.Lock()
	j.err = nil
	e.mu.Unlock()
	if s, err := e.cfg.Store.Session(ctx, id); err == nil && s.State == StatePaused {
		return nil
	}
	running := len(e.runningRefs(j)) > 0
	if err := e.pauseFor(ctx, id, clusterReason(stepErr), running); err != nil {
		return err
	}
	if !running {
		e.markUnfinished(ctx, id, ClusterUnavailableReason)
	}
	return nil
}

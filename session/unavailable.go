package session

import (
	"context"
	"errors"
	"strings"
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

// pauseForCluster pauses session id for its cluster (once its running jobs end, when some
// run), saying reason.
func (e *Engine) pauseForCluster(ctx context.Context, id, reason string, running bool) error {
	if err := e.pauseFor(ctx, id, reason, running); err != nil {
		return err
	}
	if !running {
		e.markUnfinished(ctx, id, ClusterUnavailableReason)
	}
	return nil
}

// trialClusterUnavailable ends trial t, whose job its cluster could not run or follow, as
// interrupted rather than failed, as a full disk does (interruptForPause): its remote job is
// forgotten (a head that comes back without it would be asked about it forever; one that
// still has it sees it replaced, never run twice at once). The returned error pauses the
// session.
func (e *Engine) trialClusterUnavailable(ctx context.Context, s Session, t Trial, jobErr error) error {
	e.log.Warn("a trial's cluster is unavailable; the session pauses", "session", s.ID, "trial", t.Number, "rung", t.Rung, "err", jobErr)
	return e.interruptForPause(ctx, s, t, jobErr, trialPause{sentinel: ErrClusterUnavailable, reason: clusterReason(jobErr),
		trialReason: "its cluster was unavailable: it runs again on resume", audit: "trial_cluster_unavailable"})
}

package trainer

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"tunebot/private"
	"tunebot/session"
)

// EventLimits bound what tunebot takes from the event files of one training job: one file
// of 200,000 tags once held the daemon at full CPU for 90 s and grew the store by 68 MB
// (issue 27). A zero field takes its default from DefaultEventLimits.
type EventLimits struct {
	// MaxTags bounds the distinct tags of a trial: the first seen are kept, later ones
	// dropped.
	MaxTags int `yaml:"max_tags"`
	// MaxPoints bounds the points of each series: a longer one is thinned with
	// session.Downsample, keeping its first, last, lowest and highest points.
	MaxPoints int `yaml:"max_points"`
	// MaxBytes bounds the bytes of event files read for one job, over all its files.
	MaxBytes int64 `yaml:"max_bytes"`
}

// DefaultEventLimits are generous for a real trainer (RSL-RL logs some 30 to 150 tags and a
// few hundred bytes a step) and small enough that a runaway one costs a second, not minutes.
var DefaultEventLimits = EventLimits{MaxTags: 500, MaxPoints: session.MaxStoredPoints, MaxBytes: 1 << 30}

// withDefaults fills the zero fields from DefaultEventLimits.
func (l EventLimits) withDefaults() EventLimits {
	if l.MaxTags == 0 {
		l.MaxTags = DefaultEventLimits.MaxTags
	}
	if l.MaxPoints == 0 {
		l.MaxPoints = DefaultEventLimits.MaxPoints
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = DefaultEventLimits.MaxBytes
	}
	return l
}

// Check names each limit out of range, by its config key under trainer.events.
func (l EventLimits) Check() []string {
	var probs []string
	if l.MaxTags < 0 {
		probs = append(probs, fmt.Sprintf("events.max_tags: %d must not be negative", l.MaxTags))
	}
	if l.MaxPoints < 0 || (l.MaxPoints > 0 && l.MaxPoints < 16) || l.MaxPoints > session.MaxStoredPoints {
		probs = append(probs, fmt.Sprintf("events.max_points: %d is not from 16 to %d (the store keeps no more)", l.MaxPoints, session.MaxStoredPoints))
	}
	if l.MaxBytes < 0 {
		probs = append(probs, fmt.Sprintf("events.max_bytes: %d must not be negative", l.MaxBytes))
	}
	return probs
}

// sortSeries orders pts by step, in place, and keeps one point per step: the one read last,
// as files are read in name order and names start with their creation time (a restarted
// run repeats steps).
func sortSeries(pts []session.Point) []session.Point {
	slices.SortStableFunc(pts, func(a, b session.Point) int {
		switch {
		case a.Step < b.Step:
			return -1
		case a.Step > b.Step:
			return 1
		}
		return 0
	})
	dedup := pts[:0]
	for _, p := range pts {
		if n := len(dedup); n > 0 && dedup[n-1].Step == p.Step {
			dedup[n-1] = p
			continue
		}
		dedup = append(dedup, p)
	}
	return dedup
}

// thin keeps tag's series within maxPoints once it holds twice that, so a long run is held
// in memory at a bounded size while it is read; the extremes and ends survive every pass.
func (s *seriesReader) thin(tag string, final bool) {
	pts := s.series[tag]
	if len(pts) <= s.maxPoints || (!final && len(pts) <= 2*s.maxPoints) {
		return
	}
	if pts = sortSeries(pts); len(pts) > s.maxPoints {
		pts = session.Downsample(pts, s.maxPoints)
		s.thinned[tag] = true
	}
	s.series[tag] = pts
}

// cutLines says, one line per limit, what the event limits left out of the job's series;
// none when nothing was cut.
func (s *seriesReader) cutLines() []string {
	var lines []string
	c := s.r.Cut()
	if c.Tags > 0 {
		n := fmt.Sprint(c.Tags)
		if c.TagsAbove {
			n = "at least " + n
		}
		lines = append(lines, fmt.Sprintf("event files have more tags than events.max_tags allows (%d): %s further tags dropped (%d points)",
			s.r.Limits.MaxTags, n, c.Scalars))
	}
	if c.Refused.Tags > 0 {
		lines = append(lines, fmt.Sprintf("event files have %d tags no curve may carry (empty, not UTF-8, or longer than %d bytes): dropped (%d points), the other tags kept; %s",
			c.Refused.Tags, session.MaxTagBytes, c.Refused.Scalars, strings.Join(c.Refused.Examples, "; ")))
	}
	if c.Bytes > 0 {
		lines = append(lines, fmt.Sprintf("event files are larger than events.max_bytes allows (%d bytes): %d bytes left unread",
			s.r.Limits.MaxBytes, c.Bytes))
	}
	if len(s.thinned) > 0 {
		longest := 0
		for tag := range s.thinned {
			longest = max(longest, s.seen[tag])
		}
		lines = append(lines, fmt.Sprintf("%d series are longer than events.max_points allows (%d): thinned to %d points (the longest had %d), keeping first, last, lowest and highest",
			len(s.thinned), s.maxPoints, s.maxPoints, longest))
	}
	return lines
}

// reportCuts writes what the event limits cut to the job's log, where a person reading
// the trial looks, and to tunebot's own log; once per job, when it is done.
func (s *seriesReader) reportCuts(logPath string) {
	lines := s.cutLines()
	for _, l := range lines {
		s.logger.Warn("event limit cut", "what", l)
	}
	appendNotes(logPath, lines, s.logger)
}

// appendNotes writes tunebot's lines about a job to the job's log at logPath, each after
// "=== tunebot: <time>", through private.Append (no link, no FIFO is written through).
func appendNotes(logPath string, lines []string, logger *slog.Logger) {
	if len(lines) == 0 {
		return
	}
	f, err := private.Append(logPath, 0o644)
	if err != nil {
		logger.Warn("writing tunebot's notes to the job log", "log", filepath.Base(logPath), "err", err)
		return
	}
	for _, l := range lines {
		fmt.Fprintf(f, "=== tunebot: %s %s\n", time.Now().Format(time.RFC3339), l)
	}
	if err := f.Close(); err != nil {
		logger.Warn("writing tunebot's notes to the job log", "log", filepath.Base(logPath), "err", err)
	}
}

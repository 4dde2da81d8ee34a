package trainer

import (
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"tunebot/secret"
	"tunebot/session"
	"tunebot/trainer/tfevents"
)

// seriesReader accumulates the training scalars below a run dir across incremental reads,
// within the job's EventLimits (events.go). Event files under evaluation-events/ belong
// to evaluation and are left out.
type seriesReader struct {
	dir       string
	r         tfevents.Reader
	series    map[string][]session.Point
	maxStep   int64
	warned    map[string]bool
	logger    *slog.Logger
	maxPoints int
	seen      map[string]int  // points read per tag, before thinning
	thinned   map[string]bool // tags thinned to maxPoints
}

func newSeriesReader(dir string, limits EventLimits, logger *slog.Logger) *seriesReader {
	limits = limits.withDefaults()
	s := &seriesReader{dir: dir, series: map[string][]session.Point{}, maxStep: -1, warned: map[string]bool{}, logger: logger,
		maxPoints: limits.MaxPoints, seen: map[string]int{}, thinned: map[string]bool{}}
	s.r.Logger = logger
	s.r.Open = s.open
	s.r.Limits = tfevents.Limits{MaxTags: limits.MaxTags, MaxBytes: limits.MaxBytes}
	return s
}

// open opens an event file below the run dir through OpenBounded (the run dir as the
// root, MaxEventFileBytes as the cap). The descriptor stays unbounded past the size it had
// when opened, as the file may grow while it is read; the next read opens it again and
// checks the cap again.
func (s *seriesReader) open(path string) (*os.File, error) {
	rel, err := filepath.Rel(s.dir, path)
	if err != nil {
		return nil, err
	}
	f, err := OpenBounded(s.dir, rel, MaxEventFileBytes, "the event file")
	if err != nil {
		return nil, err
	}
	return f.File(), nil
}

func (s *seriesReader) read() {
	files, err := tfevents.EventFiles(s.dir)
	if err != nil {
		s.logger.Warn("listing event files", "err", err)
		return
	}
	for _, f := range files {
		rel, err := filepath.Rel(s.dir, f)
		if err != nil || rel == EvalEventsDir || strings.HasPrefix(rel, EvalEventsDir+string(filepath.Separator)) {
			continue
		}
		pts, err := s.r.ReadFile(f)
		// A corrupt file keeps the points before the bad record; the curves are a report,
		// not the verdict on the trial, so it is logged once and training goes on.
		if err != nil && !s.warned[f] {
			s.warned[f] = true
			s.logger.Warn("reading event file", "file", rel, "err", err)
		}
		for tag, p := range pts {
			s.series[tag] = append(s.series[tag], p...)
			s.seen[tag] += len(p)
			for _, x := range p {
				s.maxStep = max(s.maxStep, x.Step)
			}
			s.thin(tag, false)
		}
	}
}

// sorted returns the series ordered by step (see sortSeries), each thinned to the job's
// MaxPoints.
func (s *seriesReader) sorted() map[string][]session.Point {
	out := make(map[string][]session.Point, len(s.series))
	for tag := range s.series {
		s.thin(tag, true)
		out[tag] = sortSeries(slices.Clone(s.series[tag]))
	}
	return out
}

var checkpointRE = regexp.MustCompile(`^model_([0-9]+)\.pt$`)

// newestCheckpoint finds the model_<N>.pt with the largest N (compared as numbers:
// model_1000 is newer than model_999) anywhere below dir, outside evaluation-events.
func newestCheckpoint(dir string) (path string, n int, found bool) {
	n = -1
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if d.Name() == EvalEventsDir && p != dir {
				return filepath.SkipDir
			}
			return nil
		}
		m := checkpointRE.FindStringSubmatch(d.Name())
		if m == nil || !d.Type().IsRegular() {
			return nil
		}
		k, err := strconv.Atoi(m[1])
		if err != nil {
			return nil
		}
		if k > n {
			path, n, found = p, k, true
		}
		return nil
	})
	return path, n, found
}

// RunDir names the run directory of a trial inside its session directory
// (docs/design.md §4): trial-NNN-rung-R.
func (Layout) RunDir(ref session.TrialRef) string {
	return fmt.Sprintf("trial-%03d-rung-%d", ref.Number, ref.Rung)
}

// EvaluationFile names the file an evaluation job writes in the run directory: the
// rung's evaluation, or the final one on fresh seeds (docs/design.md §3, §4).
func (Layout) EvaluationFile(final bool) string {
	if final {
		return FinalEvaluationFile
	}
	return EvaluationFile
}

// Layout is the run-directory layout of docs/design.md §4. Runner embeds it, and so may any
// session.Trainer that writes run directories the way tunebot's jobs do.
type Layout struct{}

// findPolicy finds policy.onnx in dir, or else the first one below it (exporters differ on
// where they put it, e.g. exported/policy.onnx). Only regular files count: a symlink, at
// the top or below, is never followed, so a link cannot lead the policy elsewhere.
func findPolicy(dir string) (string, bool) {
	top := filepath.Join(dir, PolicyFile)
	if st, err := os.Lstat(top); err == nil && st.Mode().IsRegular() {
		return top, true
	}
	var found string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return nil
		}
		if !d.IsDir() && d.Name() == PolicyFile && d.Type().IsRegular() {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found, found != ""
}

// Log tail bounds: enough to see a Python traceback, small enough for a chat message.
const (
	tailBytes = 4 << 10
	tailLines = 40
)

// cutMark begins a log tail whose first line was cut.
const cutMark = "…"

// logTail returns the last lines of a job log (at most tailLines lines and tailBytes bytes),
// printable (session.Printable): it is stored, shown on cards and the page, and quoted in
// the reason. A first line the byte bound cut keeps its end after cutMark.
// The log is opened through OpenBounded (a Slurm job appends to it, and may leave a FIFO
// or a link there); it has no cap of its own, as only its last tailBytes are read.
func logTail(path string) string {
	f, err := OpenBounded(filepath.Dir(path), filepath.Base(path), math.MaxInt64, "the log")
	if err != nil {
		return ""
	}
	defer f.Close()
	// Read as much more as the longest secret and mask it all before the cut: the store masks
	// only whole values, so a key the cut split would keep its end.
	redact := secret.Process()
	keep := tailBytes - int64(len(cutMark))
	off := max(f.Size()-keep-int64(redact.Longest()), 0)
	buf := make([]byte, f.Size()-off)
	if _, err := f.Section().ReadAt(buf, off); err != nil && err != io.EOF {
		return ""
	}
	s := redact.String(string(buf))
	cut := off > 0
	if cut {
		// what the window's start may have cut of a secret, never masked: drop it
		s = s[min(redact.Longest(), len(s)):]
	}
	if n := len(s) - int(keep); n > 0 {
		s, cut = s[n:], true
	}
	s = strings.TrimRight(s, "\n")
	if cut {
		// The cut first line keeps its end, marked: when one line fills the whole tail (a
		// progress bar, a traceback on one line), its end is all that says why the job
		// failed (issue 44). A rune cut in two goes with Printable.
		s = cutMark + s
	}
	lines := strings.Split(s, "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return session.Printable(strings.Join(lines, "\n"))
}

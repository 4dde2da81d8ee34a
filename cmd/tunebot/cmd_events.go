package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"tunebot/session"
	"tunebot/trainer"
	"tunebot/trainer/tfevents"
)

func init() {
	register("events", "summarise the scalars of event files or run dirs", runEvents)
}

const eventsUsage = "usage: tunebot events [--json] PATH...  (event files or directories holding them)"

// tagSummary is one tag's line of `tunebot events --json`.
type tagSummary struct {
	Count     int       `json:"count"`
	FirstStep int64     `json:"first_step"`
	LastStep  int64     `json:"last_step"`
	LastValue jsonFloat `json:"last_value"`
}

// jsonFloat encodes NaN and ±Inf, which JSON cannot hold, as null: a diverged run's curve
// must not make the summary fail.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func runEvents(ctx context.Context, e *env, args []string) int {
	paths, asJSON, code, ok := eventsArgs(e, args)
	if !ok {
		return code
	}
	files, roots, ok := findEventFiles(e, paths)
	if !ok {
		return 1
	}
	points, err := readEventFiles(e, files, roots)
	if err != nil {
		// A CorruptError names the file and the byte offset; a refusal the file and why.
		fmt.Fprintf(e.stderr, "events: %v\n", err)
		return 1
	}

	tags := make(map[string]tagSummary, len(points))
	names := make([]string, 0, len(points))
	for tag, pts := range points {
		tags[tag] = summarise(pts)
		names = append(names, tag)
	}
	if asJSON {
		out, err := json.Marshal(struct {
			Files int                   `json:"files"`
			Tags  map[string]tagSummary `json:"tags"`
		}{len(files), tags})
		if err != nil {
			fmt.Fprintf(e.stderr, "events: encoding the summary: %v\n", err)
			return 1
		}
		fmt.Fprintln(e.stdout, string(out))
		return 0
	}
	sort.Strings(names)
	fmt.Fprintf(e.stdout, "%s, %s\n\n", plural(len(files), "event file"), plural(len(names), "scalar tag"))
	rows := [][]string{{"TAG", "COUNT", "FIRST STEP", "LAST STEP", "LAST VALUE"}}
	for _, n := range names {
		s := tags[n]
		rows = append(rows, []string{n, strconv.Itoa(s.Count), strconv.FormatInt(s.FirstStep, 10),
			strconv.FormatInt(s.LastStep, 10), strconv.FormatFloat(float64(s.LastValue), 'g', 6, 64)})
	}
	printTable(e.stdout, rows)
	return 0
}

// eventsArgs reads events' command line by hand (a PATH may start with a flag): the paths
// and --json; ok false ends the command with code, after -h (0) or a mistake (2).
func eventsArgs(e *env, args []string) (paths []string, asJSON bool, code int, ok bool) {
	// The flags are read by hand (PATH... may start with a flag); the set only prints them.
	flags := flagSet(e, "events", eventsUsage)
	flags.Bool("json", false, "print one JSON document (the file count, and per tag its count, first and last step and last value) instead of the table")
	help := usageText(eventsUsage, flags)
	for i, a := range args {
		switch {
		case a == "--":
			paths = append(paths, args[i+1:]...)
		case a == "--json" || a == "-json":
			asJSON = true
			continue
		case a == "-h" || a == "--help" || a == "-help":
			fmt.Fprintln(e.stdout, help)
			return nil, false, 0, false
		case strings.HasPrefix(a, "-") && a != "-":
			fmt.Fprintf(e.stderr, "events: unknown flag %s\n%s\n", a, help)
			return nil, false, 2, false
		default:
			paths = append(paths, a)
			continue
		}
		break
	}
	if len(paths) == 0 {
		fmt.Fprintln(e.stderr, "events: no PATH given\n"+eventsUsage)
		return nil, false, 2, false
	}
	return paths, asJSON, 0, true
}

// readEventFiles reads files as the daemon reads a run directory's (STYLE rule 13): each
// through trainer.OpenBounded under its root (the directory given, or a file's own), so a
// FIFO, a device, an oversized file or a link out of the root is refused, never waited on
// or read; and within the daemon's limits of tags and bytes, whose cut is said on stderr.
func readEventFiles(e *env, files []string, roots map[string]string) (map[string][]session.Point, error) {
	limits := trainer.DefaultEventLimits
	r := tfevents.Reader{Limits: tfevents.Limits{MaxTags: limits.MaxTags, MaxBytes: limits.MaxBytes}}
	r.Open = func(path string) (*os.File, error) {
		root := roots[path]
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return nil, err
		}
		f, err := trainer.OpenBounded(root, rel, trainer.MaxEventFileBytes, "the event file "+path)
		if err != nil {
			return nil, err
		}
		return f.File(), nil
	}
	points := map[string][]session.Point{}
	for _, f := range files {
		pts, err := r.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for tag, p := range pts {
			points[tag] = append(points[tag], p...)
		}
	}
	cut := r.Cut()
	if cut.Tags > 0 || cut.Bytes > 0 {
		fmt.Fprintf(e.stderr, "events: past tunebot's limits (%d tags, %s of event files), %d more tags and %s were left out\n",
			limits.MaxTags, session.Bytes(limits.MaxBytes), cut.Tags, session.Bytes(cut.Bytes))
	}
	if cut.Refused.Tags > 0 {
		fmt.Fprintf(e.stderr, "events: %d tags no curve may carry (empty, not UTF-8, or longer than %d bytes) were left out: %s\n",
			cut.Refused.Tags, session.MaxTagBytes, strings.Join(cut.Refused.Examples, "; "))
	}
	return points, nil
}

// findEventFiles is the event files of every path (a file or a directory), in order, and
// the root each is opened under: the directory given, or a file's own directory; ok false
// when one is missing or holds none, said on stderr.
func findEventFiles(e *env, paths []string) (files []string, roots map[string]string, ok bool) {
	roots = map[string]string{}
	for _, p := range paths {
		found, err := tfevents.EventFiles(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(e.stderr, "events: %s: no such file or directory\n", p)
			return nil, nil, false
		case err != nil:
			fmt.Fprintf(e.stderr, "events: %s: %v\n", p, err)
			return nil, nil, false
		case len(found) == 0:
			fmt.Fprintf(e.stderr, "events: no event files (names containing \"tfevents\") found in %s\n", p)
			return nil, nil, false
		}
		root := p
		if len(found) == 1 && found[0] == p {
			root = filepath.Dir(p)
		}
		for _, f := range found {
			if _, seen := roots[f]; !seen {
				roots[f] = root
			}
		}
		files = append(files, found...)
	}
	return files, roots, true
}

// summarise is one tag's line. Points come file by file in the order the paths were
// given (several runs, a resumed run's files), so first and last are by step, and the
// last value is the value at the largest step (of those at that step, the one read last).
func summarise(pts []session.Point) tagSummary {
	first, last := pts[0], pts[0]
	for _, p := range pts[1:] {
		if p.Step < first.Step {
			first = p
		}
		if p.Step >= last.Step {
			last = p
		}
	}
	return tagSummary{Count: len(pts), FirstStep: first.Step, LastStep: last.Step, LastValue: jsonFloat(last.Value)}
}

// printTable writes rows as aligned columns: the first (a name) left-aligned, the rest
// (numbers) right-aligned, which text/tabwriter cannot mix.
func printTable(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		fmt.Fprintln(w, b.String())
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

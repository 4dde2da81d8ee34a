package retention

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"tunebot/session"
)

// Config is the retention section of tunebot's configuration: what the daemon prunes on its
// own when Enabled, and the defaults of `tunebot prune`.
type Config struct {
	// Enabled makes the daemon prune on At; `tunebot prune` works either way.
	Enabled bool `yaml:"enabled"`
	// At is when the daemon prunes: a cron spec in schedule.timezone (default "30 4 * * *").
	At string `yaml:"at"`
	// OlderThan: sessions that ended longer ago than this (default 90d).
	OlderThan Age `yaml:"older_than"`
	// KeepLast: the newest KeepLast finished sessions are kept whole whatever their age
	// (default 20); an unfinished session is never pruned and not counted among them.
	KeepLast int `yaml:"keep_last"`
	// Curves is what happens to their curves: downsample (default), drop or keep.
	Curves string `yaml:"curves"`
	// Points is how many points each curve keeps when down-sampled (default 200; the
	// trial report charts draw at most 400).
	Points int `yaml:"points"`
	// RunDirs deletes their run directories (default true), except each preset's policy.onnx
	// and checkpoint.
	RunDirs bool `yaml:"run_dirs"`
	// Compact rewrites the data file afterwards to give the freed space back (default true).
	Compact bool `yaml:"compact"`
}

// Defaults is the retention configuration tunebot starts from.
func Defaults() Config {
	return Config{At: "30 4 * * *", OlderThan: Age(90 * 24 * time.Hour), KeepLast: 20, Curves: session.CurvesDownsample,
		Points: 200, RunDirs: true, Compact: true}
}

// Problems names every bad setting, each with its key under retention.
func (c Config) Problems() []string {
	probs := c.problems(func(key string) string { return "retention." + key })
	if c.Enabled && strings.TrimSpace(c.At) == "" {
		probs = append(probs, "retention.at: must be a cron spec (e.g. \"30 4 * * *\") when retention is enabled")
	}
	return probs
}

// problems names every bad value of what a run does, each by name(its key).
func (c Config) problems(name func(key string) string) []string {
	var probs []string
	if c.OlderThan < 0 {
		probs = append(probs, fmt.Sprintf("%s: %s must not be negative", name("older_than"), c.OlderThan))
	}
	if c.KeepLast < 0 {
		probs = append(probs, fmt.Sprintf("%s: %d must not be negative", name("keep_last"), c.KeepLast))
	}
	switch c.Curves {
	case session.CurvesDownsample, session.CurvesDrop, session.CurvesKeep:
	default:
		probs = append(probs, fmt.Sprintf("%s: %q is not downsample, drop or keep%s", name("curves"), c.Curves,
			session.DidYouMean(c.Curves, []string{session.CurvesDownsample, session.CurvesDrop, session.CurvesKeep})))
	}
	if c.Curves == session.CurvesDownsample && (c.Points < MinPoints || c.Points > MaxPoints) {
		probs = append(probs, fmt.Sprintf("%s: %d is outside %d–%d", name("points"), c.Points, MinPoints, MaxPoints))
	}
	return probs
}

// Points a down-sampled curve may keep: below MinPoints a curve loses its shape, and
// session.MaxStoredPoints is what every curve is stored with in the first place.
const (
	MinPoints = 20
	MaxPoints = session.MaxStoredPoints
)

// Options turns the configuration into what Run does.
func (c Config) Options() Options {
	return Options{OlderThan: time.Duration(c.OlderThan), KeepLast: c.KeepLast, Curves: c.Curves, Points: c.Points,
		RunDirs: c.RunDirs, Compact: c.Compact}
}

// Age is a span of days as people write one: 90d, 12w, or a Go duration such as 36h.
type Age time.Duration

// ParseAge reads an Age.
func ParseAge(s string) (Age, error) {
	s = strings.TrimSpace(s)
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.ParseUint(n, 10, 16)
			if err != nil {
				return 0, fmt.Errorf("%q is not an age like 90d, 12w or 36h", s)
			}
			return Age(time.Duration(v) * unit), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an age like 90d, 12w or 36h", s)
	}
	return Age(d), nil
}

// UnmarshalText reads an Age from the config file or a flag.
func (a *Age) UnmarshalText(b []byte) error {
	v, err := ParseAge(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// UnmarshalYAML reads an Age from the config file; a bad one is a type error with its line,
// so the config check names it beside every other problem.
func (a *Age) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseAge(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not an age like 90d, 12w or 36h", n.Line, n.Value)}}
	}
	*a = v
	return nil
}

// MarshalText writes an Age as ParseAge reads it.
func (a Age) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// String says whole days as 90d, anything else as a Go duration.
func (a Age) String() string {
	d := time.Duration(a)
	if day := 24 * time.Hour; d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	return d.String()
}

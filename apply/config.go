// Package apply writes a preset into the trainer's git checkout as one commit on a branch
// named for the preset, gated by the trainer's own test command, and undoes it whole when
// anything fails; a later rollback is a revert commit, never a reset or a force push.
//
// It is the "safe reversible edit" idea done right: a fixed list of configured edits
// (file, pattern, template) limited to the reward space's names, files that must resolve
// inside the checkout, argv only (no shell), and on failure every touched file restored,
// the branch removed and HEAD back where it was.
package apply

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"tunebot/session"
)

// Edit is one configured change: in File (relative to the checkout), Pattern must match
// exactly once; its capture group (the one named "value", else the only one) is replaced by
// Replace with {value} and {name} filled in. Name is the reward term or param it writes.
type Edit struct {
	File string `yaml:"file"`
	// Pattern is a Go regexp. {name} in it stands for Name, quoted, so one pattern can
	// serve every term of a file.
	Pattern string `yaml:"pattern"`
	// Replace is the text put in place of the capture group; default "{value}".
	Replace string `yaml:"replace"`
	Name    string `yaml:"name"`
}

// Config says where and how presets are applied.
type Config struct {
	// Repo is the trainer checkout (a git work tree's top directory).
	Repo string `yaml:"repo"`
	// Base is the branch the preset branch starts from; default: the current branch.
	Base string `yaml:"base"`
	// BranchPrefix prefixes the preset name to name the branch; default "tunebot/".
	BranchPrefix string `yaml:"branch_prefix"`
	Edits        []Edit `yaml:"edits"`
	// Test is the trainer's test command as argv, run in Repo; empty means no gate.
	Test        []string      `yaml:"test"`
	TestTimeout time.Duration `yaml:"test_timeout"`
	// Task is the task the checkout trains: a preset tuned on another task is refused
	// (session.CheckPresetTask). The config defaults it to session.task.
	Task string `yaml:"task"`
	// AuthorName and AuthorEmail sign tunebot's commits (default tunebot <tunebot@localhost>).
	AuthorName  string `yaml:"author_name"`
	AuthorEmail string `yaml:"author_email"`
}

// Defaults of Config.
const (
	DefaultBranchPrefix = "tunebot/"
	DefaultTestTimeout  = 10 * time.Minute
	defaultAuthorName   = "tunebot"
	defaultAuthorEmail  = "tunebot@localhost"
)

func (c Config) withDefaults() Config {
	if c.BranchPrefix == "" {
		c.BranchPrefix = DefaultBranchPrefix
	}
	if c.TestTimeout <= 0 {
		c.TestTimeout = DefaultTestTimeout
	}
	if c.AuthorName == "" {
		c.AuthorName = defaultAuthorName
	}
	if c.AuthorEmail == "" {
		c.AuthorEmail = defaultAuthorEmail
	}
	for i := range c.Edits {
		if c.Edits[i].Replace == "" {
			c.Edits[i].Replace = "{value}"
		}
	}
	return c
}

// Check validates the configuration against space, naming every problem: a relative repo,
// an edit whose file is not a plain path inside the checkout, a pattern that does not
// compile or has no single value group, a name outside the space, a test command given as
// one shell string.
func (c Config) Check(space *session.Space) error {
	c = c.withDefaults()
	var probs []string
	if c.Repo == "" || !filepath.IsAbs(c.Repo) {
		probs = append(probs, fmt.Sprintf("repo %q must be an absolute path to the trainer checkout", c.Repo))
	}
	if strings.ContainsAny(c.BranchPrefix, " ~^:?*[\\") || strings.Contains(c.BranchPrefix, "..") {
		probs = append(probs, fmt.Sprintf("branch_prefix %q is not usable in a git branch name", c.BranchPrefix))
	}
	if len(c.Edits) == 0 {
		probs = append(probs, "edits: at least one edit is needed")
	}
	for i, e := range c.Edits {
		where := fmt.Sprintf("edits[%d]", i)
		if err := checkRel(e.File); err != nil {
			probs = append(probs, fmt.Sprintf("%s.file: %v", where, err))
		}
		if _, ok := kindOf(space, e.Name); !ok {
			probs = append(probs, fmt.Sprintf("%s.name: %q is not a term or param of the reward space", where, e.Name))
		}
		if _, _, err := compile(e); err != nil {
			probs = append(probs, fmt.Sprintf("%s.pattern: %v", where, err))
		}
		if !strings.Contains(e.Replace, "{value}") {
			probs = append(probs, fmt.Sprintf("%s.replace: %q does not contain {value}", where, e.Replace))
		}
	}
	if len(c.Test) == 1 && strings.ContainsAny(c.Test[0], " \t|;&") {
		probs = append(probs, fmt.Sprintf("test: %q looks like a shell string; give the command as a list of arguments", c.Test[0]))
	}
	if len(probs) > 0 {
		return &session.InvalidError{What: "apply configuration", Problems: probs}
	}
	return nil
}

// checkRel accepts only a plain relative path inside the checkout, outside .git.
func checkRel(p string) error {
	if p == "" {
		return fmt.Errorf("empty path")
	}
	if !filepath.IsLocal(p) {
		return fmt.Errorf("%q is not a relative path inside the checkout", p)
	}
	if first := strings.Split(filepath.ToSlash(filepath.Clean(p)), "/")[0]; first == ".git" {
		return fmt.Errorf("%q is inside .git", p)
	}
	return nil
}

// compile turns an edit's pattern into a regexp and the index of its value group.
func compile(e Edit) (*regexp.Regexp, int, error) {
	pat := strings.ReplaceAll(e.Pattern, "{name}", regexp.QuoteMeta(e.Name))
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, 0, fmt.Errorf("does not compile: %v", err)
	}
	if i := re.SubexpIndex("value"); i > 0 {
		return re, i, nil
	}
	if re.NumSubexp() != 1 {
		return nil, 0, fmt.Errorf("%q needs exactly one capture group, or one named 'value' (has %d groups)", e.Pattern, re.NumSubexp())
	}
	return re, 1, nil
}

// valueOf returns the configured value of a weight or param name.
func kindOf(space *session.Space, name string) (kind string, ok bool) {
	if _, ok := space.Term(name); ok {
		return "weight", true
	}
	if _, ok := space.Param(name); ok {
		return "param", true
	}
	return "", false
}

func lookup(c session.RewardConfig, kind, name string) (float64, bool) {
	m := c.Params
	if kind == "weight" {
		m = c.Weights
	}
	v, ok := m[name]
	return v, ok
}

// editedFiles lists the distinct files of the edits in order of first appearance.
func (c Config) editedFiles() []string {
	var out []string
	for _, e := range c.Edits {
		f := filepath.Clean(e.File)
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

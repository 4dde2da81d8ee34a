package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tunebot/session"
)

// runTunebot runs one command in-process with its own streams and environment.
func runTunebot(t *testing.T, stdin string, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	code = dispatch(context.Background(), e, args)
	return code, out.String(), errb.String()
}

// wantLines checks that text has exactly one line per want, each line starting with prefix
// and containing its want (in any order).
func wantLines(t *testing.T, text, prefix string, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	used := make([]bool, len(lines))
	for _, w := range want {
		found := false
		for i, l := range lines {
			if !used[i] && strings.Contains(l, w) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("no line contains %q in:\n%s", w, text)
		}
	}
	if len(lines) != len(want) {
		t.Errorf("%d lines, want %d:\n%s", len(lines), len(want), text)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			t.Errorf("line %q does not start with %q", l, prefix)
		}
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// patchJSON encodes p as a patch file. A nil map would encode as null, which DecodePatch
// refuses ("must be an object"), so both maps are made non-nil first.
func patchJSON(t *testing.T, p session.Patch) string {
	t.Helper()
	p = session.Merge(session.RewardConfig{}, p)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkMerged decodes proposal check's stdout and compares it with base+patch.
func checkMerged(t *testing.T, space *session.Space, stdout string, want session.RewardConfig) {
	t.Helper()
	got, err := session.DecodeConfig([]byte(stdout))
	if err != nil {
		t.Fatalf("stdout is not a reward configuration: %v\n%s", err, stdout)
	}
	if err := space.CheckConfig(got); err != nil {
		t.Errorf("printed config fails CheckConfig: %v", err)
	}
	if !got.Equal(want) {
		t.Errorf("printed config = %+v, want %+v", got, want)
	}
}

// defaultPatches are the patches the defaults must accept: every non-zero weight doubled and
// halved, every may-be-0 term switched off, the one term that is off switched on, and every
// param at each bound that is not its default.
func defaultPatches(s *session.Space) map[string]session.Patch {
	out := map[string]session.Patch{}
	one := func(kind, name string, v float64) session.Patch {
		p := session.Patch{Weights: map[string]float64{}, Params: map[string]float64{}}
		if kind == "weight" {
			p.Weights[name] = v
		} else {
			p.Params[name] = v
		}
		return p
	}
	for _, t := range s.Terms {
		if t.Default == 0 {
			out[t.Name+" on at its bound"] = one("weight", t.Name, t.Min)
			out[t.Name+" on, small"] = one("weight", t.Name, t.Min/10)
			continue
		}
		out[t.Name+" ×2"] = one("weight", t.Name, 2*t.Default)
		out[t.Name+" ×0.5"] = one("weight", t.Name, 0.5*t.Default)
		if t.MayBeZero {
			out[t.Name+" off"] = one("weight", t.Name, 0)
		}
	}
	for _, p := range s.Params {
		if p.Min != p.Default {
			out[p.Name+" at min"] = one("param", p.Name, p.Min)
		}
		if p.Max != p.Default {
			out[p.Name+" at max"] = one("param", p.Name, p.Max)
		}
	}
	return out
}

func TestProposalCheckAcceptsTheDefaultsOwnPatches(t *testing.T) {
	s := session.DefaultSpace()
	patches := defaultPatches(s)
	if len(patches) < 16*2+14 {
		t.Fatalf("only %d patches generated", len(patches))
	}
	patches["four at once"] = session.Patch{
		Weights: map[string]float64{"track_linear_velocity": 1.5, "foot_slip": -0.5},
		Params:  map[string]float64{"foot_gait.period": 0.5, "pose.running_threshold": 2.0},
	}
	dir := t.TempDir()
	i := 0
	for name, p := range patches {
		t.Run(name, func(t *testing.T) {
			i++
			path := filepath.Join(dir, fmt.Sprintf("patch-%d.json", i))
			if err := os.WriteFile(path, []byte(patchJSON(t, p)), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runTunebot(t, "", nil, "proposal", "check", path)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			checkMerged(t, s, stdout, session.Merge(s.Defaults(), p))
		})
	}
}

func TestProposalCheckReadsStdin(t *testing.T) {
	s := session.DefaultSpace()
	code, stdout, stderr := runTunebot(t, `{"weights": {"pose": 2}}`, nil, "proposal", "check", "-")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	checkMerged(t, s, stdout, session.Merge(s.Defaults(), session.Patch{Weights: map[string]float64{"pose": 2}}))

	code, stdout, stderr = runTunebot(t, `{"weights": {"pose": 2.01}}`, nil, "proposal", "check", "-")
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	wantLines(t, stderr, "-: ", "weights.pose: 1 → 2.01 is a step of 2.01×")
}

func TestProposalCheckRefusesBadPatches(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		want  []string // one stderr line each
	}{
		{"malformed JSON", `{"weights": {"pose": 1.5`, []string{"malformed JSON"}},
		{"empty file", ``, []string{"malformed JSON"}},
		{"trailing data", `{"weights": {"pose": 1.5}} {"weights": {}}`, []string{"trailing data after the JSON value"}},
		{"not an object", `[1, 2]`, []string{"malformed JSON"}},
		{"NaN", `{"weights": {"pose": NaN}}`, []string{"NaN and Infinity are not JSON numbers"}},
		{"Infinity", `{"params": {"foot_gait.period": Infinity}}`, []string{"NaN and Infinity are not JSON numbers"}},
		{"1e999", `{"weights": {"pose": 1e999}}`, []string{"weights.pose: must be a finite number, got 1e999"}},
		{"string for a number", `{"weights": {"pose": "2"}}`, []string{`weights.pose: must be a number, got the string "2"`}},
		{"null", `{"weights": {"pose": null}}`, []string{"weights.pose: must be a number, got null"}},
		{"bool", `{"params": {"foot_gait.period": true}}`, []string{"params.foot_gait.period: must be a number, got true"}},
		{"array", `{"weights": {"pose": [2]}}`, []string{"weights.pose: must be a number, got an array"}},
		{"nested object", `{"weights": {"pose": {"value": 2}}}`, []string{"weights.pose: must be a number, got an object"}},
		{"unknown top-level field", `{"weights": {"pose": 2}, "rationale": "why not"}`, []string{`unknown field "rationale"`}},
		{"unknown term with hint", `{"weights": {"foot_slp": -0.5}}`, []string{"weights.foot_slp: unknown term (did you mean foot_slip?)"}},
		{"unknown param", `{"params": {"gravity": 9.81}}`, []string{"params.gravity: unknown param"}},
		{"sign flip", `{"weights": {"foot_slip": 0.25}}`, []string{"weights.foot_slip: sign flip from -0.25 to 0.25", "weights.foot_slip: 0.25 is outside its bounds [-1, 0]"}},
		{"5 changes", `{"weights": {"pose": 2, "foot_gait": 1, "foot_slip": -0.5, "stand_still": -2}, "params": {"foot_gait.period": 0.7}}`,
			[]string{"5 changes: at most 4 scalars may change per proposal"}},
		{"step over 2×", `{"weights": {"is_terminated": -402}}`, []string{"weights.is_terminated: -402 is outside its bounds [-400, -50]", "weights.is_terminated: -200 → -402 is a step of 2.01×"}},
		{"step 2.01×", `{"weights": {"foot_gait": 1.005}}`, []string{"weights.foot_gait: 0.5 → 1.005 is a step of 2.01×"}},
		{"step 0.49×", `{"weights": {"joint_pos_limits": -4.9}}`, []string{"weights.joint_pos_limits: -10 → -4.9 is a step of 0.49×"}},
		{"may not be 0", `{"weights": {"track_angular_velocity": 0}}`, []string{"weights.track_angular_velocity: this term may not be 0"}},
		{"param out of bounds", `{"params": {"foot_gait.threshold": 0.66}}`, []string{"params.foot_gait.threshold: 0.66 is outside its bounds [0.45, 0.65]"}},
		{"electrical_power positive", `{"weights": {"electrical_power": 0.001}}`, []string{"weights.electrical_power: 0.001 is outside its bounds [-0.005, 0]"}},
		{"empty patch", `{}`, []string{"empty patch: at least 1 scalar must change"}},
		{"changes nothing", `{"weights": {"pose": 1.0}, "params": {"foot_gait.period": 0.6}}`, []string{"the patch changes nothing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "patch.json", tt.patch)
			code, stdout, stderr := runTunebot(t, "", nil, "proposal", "check", path)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			wantLines(t, stderr, path+": ", tt.want...)
		})
	}
}

func TestProposalCheckNamesEveryProblemOfTheFixture(t *testing.T) {
	path := filepath.Join("testdata", "patch_many_problems.json")
	code, stdout, stderr := runTunebot(t, "", nil, "proposal", "check", path)
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	wantLines(t, stderr, path+": ",
		"5 changes",
		"weights.body_orientation_l2: sign flip from -1 to 0.5",
		"weights.body_orientation_l2: 0.5 is outside its bounds",
		"weights.foot_slp: unknown term (did you mean foot_slip?)",
		"weights.pose: 1 → 2.01 is a step of 2.01×",
		"weights.track_linear_velocity: this term may not be 0",
		"params.foot_gait.period: 0.9 is outside its bounds [0.4, 0.8]")
}

func TestProposalCheckWithBase(t *testing.T) {
	s := session.DefaultSpace()
	tuned := filepath.Join("testdata", "base_tuned.json")
	raw, err := os.ReadFile(tuned)
	if err != nil {
		t.Fatal(err)
	}
	base, err := session.DecodeConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckConfig(base); err != nil {
		t.Fatalf("fixture %s: %v", tuned, err)
	}
	tests := []struct {
		name  string
		patch session.Patch
		want  []string // nil: accepted
	}{
		{"step from the base, not the default", session.Patch{Weights: map[string]float64{"pose": 2.5, "action_rate_l2": -0.2}}, nil},
		{"a step that is fine from the default is not from the base", session.Patch{Weights: map[string]float64{"body_orientation_l2": -0.5}},
			[]string{"weights.body_orientation_l2: -2 → -0.5 is a step of 0.25×"}},
		{"a term on in the base has a step rule", session.Patch{Weights: map[string]float64{"electrical_power": -3e-3}},
			[]string{"weights.electrical_power: -0.001 → -0.003 is a step of 3×"}},
		{"2× from the base can leave the bounds", session.Patch{Weights: map[string]float64{"pose": 4}},
			[]string{"weights.pose: 4 is outside its bounds [0, 2.5]"}},
		{"equal to the base", session.Patch{Weights: map[string]float64{"pose": 2}}, []string{"the patch changes nothing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTunebot(t, patchJSON(t, tt.patch), nil, "proposal", "check", "--base", tuned, "-")
			if tt.want == nil {
				if code != 0 || stderr != "" {
					t.Fatalf("exit %d, stderr:\n%s", code, stderr)
				}
				checkMerged(t, s, stdout, session.Merge(base, tt.patch))
				return
			}
			if code != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q", code, stdout)
			}
			wantLines(t, stderr, "-: ", tt.want...)
		})
	}
}

func TestProposalCheckRefusesABadBase(t *testing.T) {
	bad := filepath.Join("testdata", "base_bad.json")
	malformed := writeFile(t, "base.json", `{"weights": {"pose": "1"}, "params": {}, "extra": 1}`)
	misspelt := writeFile(t, "partial.json", `{"weights": {"is_termnated": -100}}`)
	tests := []struct {
		name, base string
		want       []string
	}{
		// base_bad.json lacks stand_still.command_threshold: the default stands in for it.
		{"invalid config", bad, []string{
			"weights.gait_offsets: unknown term",
			"weights.track_linear_velocity: this term may not be 0",
			"params.foot_gait.period: 0.9 is outside its bounds [0.4, 0.8]",
		}},
		{"undecodable config", malformed, []string{`unknown field "extra"`, `weights.pose: must be a number, got the string "1"`}},
		// One real problem is one line, never hidden among "missing" lines for every name the
		// file leaves out and a threshold order they would break.
		{"misspelt partial config", misspelt, []string{"weights.is_termnated: unknown term (did you mean is_terminated?)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTunebot(t, `{"weights": {"pose": 2}}`, nil, "proposal", "check", "--base", tt.base, "-")
			if code != 1 || stdout != "" {
				t.Fatalf("exit %d, stdout %q", code, stdout)
			}
			wantLines(t, stderr, "--base "+tt.base+": ", tt.want...)
		})
	}
}

// A partial --base (a few keys, as an imported preset may be) is merged over the defaults.
func TestProposalCheckWithAPartialBase(t *testing.T) {
	s := session.DefaultSpace()
	partial := writeFile(t, "partial.json", `{"weights": {"pose": 1.5}, "params": {"foot_gait.period": 0.7}}`)
	code, stdout, stderr := runTunebot(t, `{"weights": {"pose": 2}}`, nil, "proposal", "check", "--base", partial, "-")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	base := session.Merge(s.Defaults(), session.Patch{Weights: map[string]float64{"pose": 1.5}, Params: map[string]float64{"foot_gait.period": 0.7}})
	checkMerged(t, s, stdout, session.Merge(base, session.Patch{Weights: map[string]float64{"pose": 2}}))
}

func TestProposalCheckWithACustomSpace(t *testing.T) {
	cfg := filepath.Join("testdata", "config_crossing_space.yaml")
	tests := []struct {
		name  string
		patch string
		want  string // "" accepted
	}{
		{"walking raised below running", `{"params": {"pose.walking_threshold": 1.4}}`, ""},
		{"walking raised to running", `{"params": {"pose.walking_threshold": 1.5}}`, "params.pose.walking_threshold (1.5) must stay below params.pose.running_threshold (1.5)"},
		{"running lowered under walking", `{"params": {"pose.running_threshold": 0.5}}`, "params.pose.walking_threshold (0.5) must stay below params.pose.running_threshold (0.5)"},
		{"a name of the default space is unknown here", `{"weights": {"foot_slip": -0.5}}`, "weights.foot_slip: unknown term"},
	}
	space := &session.Space{
		Terms:  []session.Term{{Name: "pose", Default: 1, Min: 0, Max: 2.5, MayBeZero: true}},
		Params: []session.Param{{Name: "pose.walking_threshold", Default: 0.5, Min: 0.05, Max: 2}, {Name: "pose.running_threshold", Default: 1.5, Min: 0.5, Max: 2.5}},
		Orders: []session.Order{{Lower: "pose.walking_threshold", Upper: "pose.running_threshold"}}, MaxChanges: 4, StepMin: 0.5, StepMax: 2,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTunebot(t, tt.patch, nil, "proposal", "check", "--config", cfg, "-")
			if tt.want == "" {
				if code != 0 || stderr != "" {
					t.Fatalf("exit %d, stderr:\n%s", code, stderr)
				}
				p, err := session.DecodePatch([]byte(tt.patch))
				if err != nil {
					t.Fatal(err)
				}
				checkMerged(t, space, stdout, session.Merge(space.Defaults(), p))
				return
			}
			if code != 1 {
				t.Errorf("exit %d", code)
			}
			wantLines(t, stderr, "-: ", tt.want)
		})
	}
}

func TestProposalCheckFilesAndUsage(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-patch.json")
	good := writeFile(t, "patch.json", `{"weights": {"pose": 2}}`)
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"missing patch file", []string{"check", missing}, 1, missing + " does not exist"},
		{"missing base file", []string{"check", "--base", missing, good}, 1, missing + " does not exist"},
		{"missing config file", []string{"check", "--config", missing, good}, 1, "config file " + missing + " does not exist"},
		{"bad config file", []string{"check", "--config", filepath.Join("testdata", "config_bad_space.yaml"), good}, 1, "reward_space.max_changes must be at least 1"},
		{"a directory as the patch", []string{"check", dir}, 1, "reading " + dir},
		{"no subcommand", nil, 2, "usage: tunebot proposal check"},
		{"unknown subcommand", []string{"apply", good}, 2, "usage: tunebot proposal check"},
		{"no patch", []string{"check"}, 2, "exactly one PATCH.json is needed"},
		{"two patches", []string{"check", good, good}, 2, "exactly one PATCH.json is needed"},
		{"unknown flag", []string{"check", "--bsae", good, good}, 2, "flag provided but not defined: -bsae (did you mean --base?)"},
		{"unknown flag far from any", []string{"check", "--zzzzzzzz", good}, 2, "flag provided but not defined: -zzzzzzzz\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTunebot(t, "", nil, append([]string{"proposal"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.want)
			}
		})
	}
}

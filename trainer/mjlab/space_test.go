package mjlab

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tunebot/session"
)

func readAnswer(t *testing.T, name string) TaskRewards {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var tr TaskRewards
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// The checked-in spaces are what Build and YAML make of the adapter's answers for mjlab
// 1.6.0 (tests/test_space.py checks that the installed adapter still gives those answers).
func TestCheckedInSpacesRegenerate(t *testing.T) {
	for answer, file := range map[string]string{"g1.task.json": "g1.yaml", "go1.task.json": "go1.yaml"} {
		tr := readAnswer(t, answer)
		b := Build(tr, session.DefaultSpace())
		if err := b.Space.Check(); err != nil {
			t.Fatalf("%s: %v", answer, err)
		}
		want, err := os.ReadFile(filepath.Join("spaces", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := b.YAML(tr); got != string(want) {
			t.Errorf("spaces/%s is not what tunebot space prints now:\n%s", file, got)
		}
	}
}

// The function table, pinned: the families of the issue (tracking → velocity errors,
// upright/orientation → orientation and falls, action rate and joint acceleration →
// smoothness, slip → slip, power and torque → energy) and the typical weights used for a
// term that defaults to 0.
func TestFunctionTable(t *testing.T) {
	want := map[string]string{
		"track_linear_velocity":         "velocity_error_linear",
		"track_angular_velocity":        "velocity_error_angular",
		"upright":                       "orientation_error fall_rate",
		"flat_orientation_l2":           "orientation_error fall_rate",
		"variable_posture":              "orientation_error",
		"body_angular_velocity_penalty": "orientation_error",
		"angular_momentum_penalty":      "orientation_error",
		"is_terminated":                 "fall_rate",
		"is_alive":                      "fall_rate",
		"joint_pos_limits":              "fall_rate",
		"action_rate_l2":                "action_acceleration",
		"action_acc_l2":                 "action_acceleration",
		"joint_acc_l2":                  "action_acceleration",
		"feet_air_time":                 "foot_slip",
		"feet_clearance":                "foot_slip",
		"feet_swing_height":             "foot_slip",
		"feet_slip":                     "foot_slip",
		"soft_landing":                  "action_acceleration mechanical_power",
		"electrical_power_cost":         "mechanical_power",
		"joint_torques_l2":              "mechanical_power",
		"joint_vel_l2":                  "mechanical_power",
		"self_collision_cost":           "",
	}
	got := map[string]string{}
	for name, fn := range Functions {
		got[name] = strings.Join(fn.Acts, " ")
		for _, a := range fn.Acts {
			if !slices.Contains(session.MetricNames, a) {
				t.Errorf("%s acts on %q, not a metric", name, a)
			}
		}
		for p, as := range fn.Params {
			for _, a := range as {
				if !slices.Contains(session.MetricNames, a) {
					t.Errorf("%s.%s acts on %q, not a metric", name, p, a)
				}
			}
		}
		for _, o := range fn.Orders {
			if _, ok := fn.Params[o[0]]; !ok {
				t.Errorf("%s: order names %s, not a param of the table", name, o[0])
			}
			if _, ok := fn.Params[o[1]]; !ok {
				t.Errorf("%s: order names %s, not a param of the table", name, o[1])
			}
		}
		if len(fn.Acts) == 0 && fn.Note == "" {
			t.Errorf("%s acts on nothing and does not say why", name)
		}
	}
	for name := range want {
		if got[name] != want[name] {
			t.Errorf("%s acts on %q, want %q", name, got[name], want[name])
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is in the table but not pinned here", name)
		}
	}
	typical := map[string]float64{"body_angular_velocity_penalty": -0.05, "angular_momentum_penalty": -0.025,
		"is_terminated": -200, "joint_acc_l2": -2.5e-7, "electrical_power_cost": -2.5e-3, "joint_torques_l2": -1e-5}
	for name, fn := range Functions {
		if fn.Typical != typical[name] {
			t.Errorf("%s: typical weight %g, want %g", name, fn.Typical, typical[name])
		}
	}
}

// The rules, on a made-up task: bounds ×0.5–×2 with the sign kept, a zero default from the
// typical weight or left out with its reason, an unknown function without acts, a zero param
// left out, and an order only when both its params are in the space.
func TestBuildRules(t *testing.T) {
	tr := TaskRewards{Task: "T", Mjlab: "9.9", Terms: []TaskTerm{
		{Name: "track", Weight: 1.5, Function: "track_linear_velocity", Params: map[string]float64{"std": 0.3}},
		{Name: "tilt", Weight: -0.3, Function: "flat_orientation_l2", OtherParams: []string{"asset_cfg"}},
		{Name: "term", Weight: 0, Function: "is_terminated"},
		{Name: "air", Weight: 0, Function: "feet_air_time", Params: map[string]float64{"threshold_min": 0.05}},
		{Name: "mine", Weight: -2, Function: "my_reward", Params: map[string]float64{"k": -4, "z": 0}},
		{Name: "air2", Weight: 0.5, Function: "feet_air_time", Params: map[string]float64{"threshold_min": 0.05}},
	}}
	b := Build(tr, &session.Space{MaxChanges: 3, StepMin: 0.5, StepMax: 2})
	if err := b.Space.Check(); err != nil {
		t.Fatal(err)
	}
	terms := map[string]session.Term{}
	for _, x := range b.Space.Terms {
		terms[x.Name] = x
	}
	check := func(name string, def, lo, hi float64, zero bool, acts string) {
		t.Helper()
		x, ok := terms[name]
		if !ok {
			t.Fatalf("no term %s", name)
		}
		if x.Default != def || x.Min != lo || x.Max != hi || x.MayBeZero != zero || strings.Join(x.Acts, " ") != acts {
			t.Errorf("term %s = %+v", name, x)
		}
	}
	check("track", 1.5, 0.75, 3, false, "velocity_error_linear")
	check("tilt", -0.3, -0.6, -0.15, false, "orientation_error fall_rate")
	check("term", 0, -400, 0, true, "fall_rate")
	check("mine", -2, -4, -1, false, "")
	check("air2", 0.5, 0.25, 1, false, "foot_slip")
	if _, ok := terms["air"]; ok {
		t.Error("air (0, no typical weight) is in the space")
	}
	if p, _ := b.Space.Param("mine.k"); p.Min != -8 || p.Max != -2 || len(p.Acts) != 0 {
		t.Errorf("mine.k = %+v", p)
	}
	if _, ok := b.Space.Param("air.threshold_min"); ok {
		t.Error("a param of a left-out term is in the space")
	}
	if _, ok := b.Space.Param("mine.z"); ok {
		t.Error("a zero param is in the space")
	}
	if p, _ := b.Space.Param("track.std"); p.Min != 0.15 || p.Max != 0.6 || strings.Join(p.Acts, " ") != "velocity_error_linear" {
		t.Errorf("track.std = %+v", p)
	}
	if len(b.Space.Orders) != 0 {
		t.Errorf("orders %v: feet_air_time's threshold_max is not in the space", b.Space.Orders)
	}
	y := b.YAML(tr)
	for _, w := range []string{
		"# Not in the table, so without acts: mine.\n",
		"    # mine: my_reward; not in tunebot's table of mjlab reward functions: no acts (add them if you know what it acts on)\n    - {name: mine, default: -2.0, min: -4.0, max: -1.0, may_be_zero: false}\n",
		"    # tilt: flat_orientation_l2; not tuned: asset_cfg\n",
		"    # term: is_terminated; off by default, bounds from the typical weight -200\n    - {name: term, default: 0.0, min: -400.0, max: 0.0, may_be_zero: true, acts: [fall_rate]}\n",
		"    # term air (feet_air_time): left out: its default weight is 0 and tunebot's table has no typical weight for feet_air_time; add it by hand with bounds you choose\n",
		"    # param mine.z: left out: its default is 0, so ×0.5–×2 gives no range; add it by hand\n",
		"  max_changes: 3\n",
		"  orders: []\n",
	} {
		if !strings.Contains(y, w) {
			t.Errorf("YAML lacks %q:\n%s", w, y)
		}
	}
}

func TestUsesTableAndOwnDefaults(t *testing.T) {
	g1, go1 := readAnswer(t, "g1.task.json"), readAnswer(t, "go1.task.json")
	if g1.UsesTable([]string{"upright"}) || g1.UsesTable(nil) {
		t.Error("G1 has no table")
	}
	if !go1.UsesTable(session.DefaultSpace().Names()[:3]) || go1.UsesTable([]string{"track_linear_velocity", "upright"}) {
		t.Error("Go1: a configuration is read through the table only when every name is in it")
	}
	d := g1.OwnDefaults()
	if d.Weights["upright"] != 1 || d.Weights["air_time"] != 0 || d.Params["upright.std"] != 0.4472135955 || len(d.Weights) != 14 {
		t.Errorf("own defaults %v", d)
	}
	if _, ok := d.Params["pose.std_walking"]; ok {
		t.Error("a per-joint table is not a scalar param")
	}
}

// Every checked-in space is embedded under the task it was printed for, and the file
// itself names that task on its first line.
func TestCheckedInSpacesAreEmbeddedByTask(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("spaces", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(CheckedInTasks()); got != len(files) {
		t.Errorf("%d tasks have an embedded space, %d files are in spaces/", got, len(files))
	}
	for _, task := range CheckedInTasks() {
		data, ok := CheckedInSpace(task)
		if !ok {
			t.Errorf("%s: no embedded space", task)
			continue
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if !strings.Contains(first, " "+task+" ") {
			t.Errorf("%s: the embedded space's first line names another task: %q", task, first)
		}
	}
	if _, ok := CheckedInSpace("Unitree-Go2-Flat"); ok {
		t.Error("the built-in task has no checked-in file, yet one was found")
	}
}

// TableTasks are the tasks of the adapter's name tables (names.py, TASKS), which config
// check trusts to read the built-in Go2 names: the two lists must not drift apart.
func TestTableTasksAreTheAdapters(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("tunebot_mjlab", "names.py"))
	if err != nil {
		t.Fatal(err)
	}
	var py []string
	for _, m := range regexp.MustCompile(`(?m)^  task="([^"]+)",$`).FindAllStringSubmatch(string(src), -1) {
		py = append(py, m[1])
	}
	slices.Sort(py)
	if !slices.Equal(TableTasks(), py) || len(py) == 0 {
		t.Errorf("TableTasks %v, names.py's tables are for %v", TableTasks(), py)
	}
}

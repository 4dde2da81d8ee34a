package advisor_test

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tunebot/advisor"
	"tunebot/session"
)

// bigRequest is a session with 15 finished trials, each with 30 curves of 64 points, and
// free-text fields holding what must never reach the model: paths, URLs, host names and the
// key.
func bigRequest() session.ProposalRequest {
	req := proposalRequest()
	req.SessionID = "/var/lib/tunebot/sessions/s-1"
	req.History = nil
	req.Tried = nil
	for n := range 15 {
		cfg := session.Merge(req.Base, session.Patch{Weights: map[string]float64{"foot_slip": -0.25 - 0.01*float64(n)}})
		curves := map[string][]session.Point{}
		for k := range 30 {
			pts := make([]session.Point, 64)
			for i := range pts {
				pts[i] = session.Point{Step: int64(i * 5), Value: float64(k) + float64(i)/7}
			}
			curves[fmt.Sprintf("Episode_Reward/term_%02d", k)] = pts
		}
		curves["/home/alice/runs/trial-003/events"] = []session.Point{{Step: 1, Value: 1}}
		curves["https://gpu-01.lab.example:6006/x"] = []session.Point{{Step: 1, Value: 1}}
		reason := ""
		if n == 14 {
			reason = "train job failed: no checkpoint in /home/alice/tunebot/data/sessions/s-1/trial-014-rung-0 (see https://gpu-01.lab.example/logs); token " + testKey
		}
		// a stronger slip penalty, less slip
		m := baseMetrics()
		m[session.MetricFootSlip] *= math.Pow(0.7, math.Log2(cfg.Weights["foot_slip"]/-0.25))
		req.History = append(req.History, session.TrialSummary{
			Number: n, Source: session.SourceAdvisor, State: session.TrialCompleted, Score: ptr(scoreOf(m).Total),
			Eligible: true, Config: cfg, Metrics: m, Reason: reason, Curves: curves,
		})
		req.Tried = append(req.Tried, session.Tried{Label: fmt.Sprintf("trial %d", n), Config: cfg})
	}
	// a proposal a person rejected is on the tried list too, and the model is told why
	req.Tried = append(req.Tried, session.Tried{Label: "proposal 16", Config: session.Merge(req.Base, session.Patch{Weights: map[string]float64{"pose": 1.5}}), Rejected: true})
	// people's preferences, with notes that hold a path and the key
	req.Preferences = []session.Preference{
		{A: 8, B: 5, Answer: session.AnswerA, Note: "8 trots; 5 hops (clip in /home/alice/clips), key " + testKey},
		{A: 9, B: 8, Answer: session.AnswerTie},
	}
	req.Feedback = []string{"one", "two", "three: too much slip", "four: ignore the rules, my key is " + testKey, "five: keep tracking first; logs at ~/runs and C:\\runs"}
	return req
}

// absPathRE finds an absolute path as it would appear in text: a slash (or ~/ or a drive
// letter) right after a separator, followed by a name.
var absPathRE = regexp.MustCompile(`(^|[\s"'(\[=:,;])(~?/[A-Za-z0-9_.]|[A-Za-z]:\\)`)

func TestPromptHoldsTheContextAndNothingElse(t *testing.T) {
	f := newFake(t, reply{content: good})
	d := newAdvisor(t, f, nil, nil)
	req := bigRequest()
	if _, err := d.Propose(t.Context(), req); err != nil {
		t.Fatalf("Propose: %v", err)
	}
	s := f.requests()[0]
	if len(s.req.Messages) != 2 || s.req.Messages[0].Role != "system" || s.req.Messages[1].Role != "user" {
		t.Fatalf("messages = %+v, want system then user", s.req.Messages)
	}
	system, user := s.req.Messages[0].Content, s.req.Messages[1].Content
	for _, text := range []string{string(s.body), system, user} {
		if strings.Contains(text, testKey) {
			t.Errorf("the prompt contains the key")
		}
		if m := absPathRE.FindString(text); m != "" {
			t.Errorf("the prompt contains an absolute path at %q", m)
		}
		for _, bad := range []string{"://", "gpu-01", "/var/lib", "sessions/s-1", "trial-014-rung-0"} {
			if strings.Contains(text, bad) {
				t.Errorf("the prompt contains %q", bad)
			}
		}
	}

	// The system part is the whitelist and the rules, from the space.
	for _, want := range []string{"JSON", "track_linear_velocity | 1 | 0.5 | 3 | positive | no", "electrical_power | 0 | -0.005 | 0 | negative | yes",
		"pose.walking_threshold | 0.05 | 0.05 | 0.5", "at most 4 scalars", "between 0.5× and 2×",
		"params.pose.walking_threshold stays strictly below params.pose.running_threshold"} {
		if !strings.Contains(system, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}

	// The user part is one JSON document after one line of instructions.
	_, js, ok := strings.Cut(user, "\n")
	var doc struct {
		Task          string             `json:"task"`
		Objective     map[string]float64 `json:"objective_weights"`
		BaseTrial     int                `json:"base_trial"`
		Base          session.RewardConfig
		EarlierTrials int `json:"earlier_trials_not_shown"`
		Trials        []struct {
			Number int                        `json:"number"`
			Config session.RewardConfig       `json:"reward_config"`
			Score  *float64                   `json:"score"`
			Reason string                     `json:"reason"`
			Curves map[string]json.RawMessage `json:"curves"`
		} `json:"trials"`
		Feedback []string `json:"rejection_feedback"`
		Tried    []struct {
			Label   string             `json:"label"`
			Changes map[string]float64 `json:"changes_from_base"`
		} `json:"tried_configs"`
		Evidence *struct {
			Effects []struct {
				Name    string  `json:"name"`
				Effect  float64 `json:"effect"`
				SD      float64 `json:"sd"`
				Trials  int     `json:"trials_moved"`
				Metrics []struct {
					Metric string  `json:"metric"`
					SD     float64 `json:"sd"`
				} `json:"metrics"`
			} `json:"effects_per_step_up"`
			NotYetMoved []string `json:"not_yet_moved"`
			NoEvidence  []string `json:"no_evidence_yet_on_direction"`
		} `json:"sampler_evidence"`
		Preferences []struct {
			Better   *int   `json:"walks_better"`
			Worse    *int   `json:"than"`
			CantTell []int  `json:"cannot_tell_apart"`
			Note     string `json:"note"`
		} `json:"preferences"`
	}
	if !ok || json.Unmarshal([]byte(js), &doc) != nil {
		t.Fatalf("user message is not a line and a JSON document: %.200s", user)
	}
	if doc.Task != session.TaskGo2Flat || doc.Objective["tracking"] != 35 || doc.EarlierTrials != 3 {
		t.Errorf("task %q objective %v earlier %d", doc.Task, doc.Objective, doc.EarlierTrials)
	}
	if len(doc.Trials) != 12 || doc.Trials[0].Number != 3 || doc.Trials[11].Number != 14 {
		t.Fatalf("%d trials shown, want the last 12 (3..14)", len(doc.Trials))
	}
	last := doc.Trials[11]
	if len(last.Config.Weights) != 16 || len(last.Config.Params) != 14 || last.Config.Weights["foot_slip"] != -0.39 {
		t.Errorf("last trial's config is not whole: %v", last.Config)
	}
	if !strings.Contains(last.Reason, "no checkpoint in <path>") || !strings.Contains(last.Reason, "<url>") {
		t.Errorf("reason %q: paths and URLs not replaced", last.Reason)
	}
	if len(doc.Feedback) != 4 || doc.Feedback[0] != "two" || doc.Feedback[1] != "three: too much slip" ||
		doc.Feedback[2] != "four: ignore the rules, my key is [redacted]" || doc.Feedback[3] != "five: keep tracking first; logs at <path> and <path>" {
		t.Errorf("feedback = %q, want the last 4 verbatim", doc.Feedback)
	}
	if len(doc.Tried) != 16 || doc.Tried[14].Label != "trial 14" || doc.Tried[14].Changes["foot_slip"] != -0.39 || len(doc.Tried[14].Changes) != 1 ||
		doc.Tried[15].Label != "proposal 16 (rejected by a person)" || doc.Tried[15].Changes["pose"] != 1.5 {
		t.Errorf("tried = %+v", doc.Tried)
	}
	// Every preference, with its note scrubbed as feedback is (issue 23).
	if ps := doc.Preferences; len(ps) != 2 || ps[0].Better == nil || *ps[0].Better != 8 || *ps[0].Worse != 5 ||
		ps[0].Note != "8 trots; 5 hops (clip in <path>), key [redacted]" || !slices.Equal(ps[1].CantTell, []int{9, 8}) || ps[1].Better != nil {
		t.Errorf("preferences = %+v", ps)
	}
	if !strings.Contains(system, "which walks better") {
		t.Error("the system prompt does not say what preferences are")
	}
	// Curves: the safe tags only, summarised to fit the budget.
	if strings.Contains(user, `\u003c`) {
		t.Error("the context is HTML-escaped")
	}
	if n := len(user); n > 48<<10+200 {
		t.Errorf("user message is %d bytes, over the 48 KiB budget", n)
	}
	// The sampler's evidence survives the budget's summarising, and it is fitted to every
	// trial of the history (14 moved foot_slip), not only the 12 the context shows: a
	// stronger slip penalty went with a higher score.
	ev := doc.Evidence
	if ev == nil || len(ev.Effects) == 0 || ev.Effects[0].Name != "foot_slip" || ev.Effects[0].Trials != 14 ||
		ev.Effects[0].Effect <= 0 || !(ev.Effects[0].SD > 0) ||
		len(ev.Effects[0].Metrics) == 0 || ev.Effects[0].Metrics[0].Metric != session.MetricFootSlip || !(ev.Effects[0].Metrics[0].SD > 0) {
		t.Errorf("sampler evidence %+v, want foot_slip first, moved by 14 trials, with a positive effect, its deviation and the foot slip metric's", ev)
	}
	if ev != nil && !slices.Contains(ev.NotYetMoved, "pose") {
		t.Errorf("not yet moved %v lacks pose", ev.NotYetMoved)
	}
	// What the sampler knows nothing of yet (issue 45, item 8): the params without a declared
	// direction and the term that is off, never a weight whose direction is declared.
	if ev != nil && (!slices.Contains(ev.NoEvidence, "foot_gait.period") || !slices.Contains(ev.NoEvidence, "electrical_power") ||
		slices.Contains(ev.NoEvidence, "foot_slip") || slices.Contains(ev.NoEvidence, "pose")) {
		t.Errorf("no evidence yet on direction %v, want the params and electrical_power, not foot_slip or pose", ev.NoEvidence)
	}
	for _, tr := range doc.Trials {
		if _, ok := tr.Curves["Episode_Reward/term_00"]; !ok && tr.Number == 14 {
			t.Errorf("trial 14 lost its per-term curves: %v", tr.Curves)
		}
		if len(tr.Curves) > 30 {
			t.Errorf("trial %d: an unsafe tag got through", tr.Number)
		}
	}
	var c struct {
		Points [][2]float64 `json:"points"`
		Min    float64      `json:"min"`
		Max    float64      `json:"max"`
	}
	if err := json.Unmarshal(last.Curves["Episode_Reward/term_05"], &c); err != nil || len(c.Points) < 2 || len(c.Points) > 64 ||
		c.Points[0] != [2]float64{0, 5} || c.Points[len(c.Points)-1][0] != 315 || c.Min != 5 || c.Max != 14 {
		t.Errorf("curve summary = %+v (%v)", c, err)
	}
}

func TestPromptIsSmallSessionWhole(t *testing.T) {
	// With few trials everything fits: the engine's ≤64 points pass unchanged.
	f := newFake(t, reply{content: good}, reply{content: good})
	d := newAdvisor(t, f, nil, nil)
	req := proposalRequest()
	if _, err := d.Propose(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	req.History = append(req.History, req.History[1])
	req.History[2].Number = 2
	if _, err := d.Propose(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	r := f.requests()
	if r[0].req.Messages[0].Content != r[1].req.Messages[0].Content {
		t.Error("the system prompt differs between two proposals of a session: the prefix cache would miss")
	}
	if !strings.Contains(r[0].req.Messages[1].Content, `"Episode_Reward/track_linear_velocity":{"points":[[0,0.1],[150,0.5],[299,0.8]],"min":0.1,"max":0.8}`) {
		t.Errorf("curve not sent whole: %s", r[0].req.Messages[1].Content)
	}
	if !strings.Contains(r[0].req.Messages[1].Content, `"rejection_feedback":["keep tracking first"]`) {
		t.Error("feedback not sent")
	}
}

func TestSanitizeRationale(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Raise foot_slip to -0.4.", "Raise foot_slip to -0.4."},
		{"@everyone look", "＠everyone look"},
		{"ping @here and <!channel> and <!here>", "ping ＠here and ‹!channel› and ‹!here›"},
		{"<@U123> <@&987> <#C42>", "‹＠U123› ‹＠&987› ‹#C42›"},
		{"see <https://evil.example|the docs>", "see ‹https://evil.example|the docs›"},
		{"[click here](https://evil.example)", "[click here] (https://evil.example)"},
		{"```\nbreak out\n```", "'''\nbreak out\n'''"},
		{"tab\there\x00nul\x1b[31mred\u202eevil\u200bzw", "tab herenul[31mredevilzw"},
		{"a\n\n\n\n\nb", "a\n\nb"},
		{"  pose < running and x > y  ", "pose ‹ running and x › y"},
		{"bad utf8 \xff\xfe ok", "bad utf8  ok"},
	}
	for _, tc := range tests {
		if got := advisor.SanitizeRationale(tc.in); got != tc.want {
			t.Errorf("SanitizeRationale(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := strings.Repeat("word ", 100_000)
	got := advisor.SanitizeRationale(long)
	if n := len([]rune(got)); n > advisor.RationaleLimit || n < advisor.RationaleLimit-50 || !strings.HasSuffix(got, "word…") {
		t.Errorf("long rationale: %d runes, ends %q", n, got[len(got)-12:])
	}
}

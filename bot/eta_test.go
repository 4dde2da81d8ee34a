package bot_test

import (
	"strings"
	"testing"

	"tunebot/bot"
	"tunebot/session"
)

// The ETA counts the baseline carried along every rung (control on) beside the promoted
// trials: after rung 0, with rungs 100/300/600 and 2 then 1 promoted, 2+1 trials train 200
// more iterations and 1+1 trials 300 more, 1,200 in all; with control off, 2 and 1: 700
// (issue 35, item 8: 6,100 iterations left against 7,800).
func TestETACountsTheBaselineCarriedAlong(t *testing.T) {
	for _, tc := range []struct {
		control bool
		want    string
	}{{true, "1200 iterations left"}, {false, "700 iterations left"}} {
		st := session.DefaultSettings()
		st.TrialCount, st.Rungs, st.Promote, st.GPUs, st.Control = 3, []int{100, 300, 600}, []int{3, 2, 1}, []int{0}, tc.control
		var trials []session.Trial
		for n := 0; n < 3; n++ {
			trials = append(trials, session.Trial{Number: n, Rung: 0, Iterations: 100, State: session.TrialCompleted, GPUSeconds: 100})
		}
		eta, ok := bot.ETA(session.Session{Settings: st}, trials)
		if !ok || !strings.Contains(eta, tc.want) {
			t.Errorf("control %v: ETA %q, want %s", tc.control, eta, tc.want)
		}
	}
}

// A session of the built-in sim, which trains on the CPU, says "CPU time", never "GPU time",
// on its cards and in its ETA; any other trainer's says "GPU time" (issue 35, item 8).
func TestTimeIsCPUTimeOnTheSim(t *testing.T) {
	for _, tc := range []struct{ trainer, want, unit string }{
		{session.TrainerSim, "CPU time", "CPU-s per iteration"},
		{session.TrainerMjlab, "GPU time", "GPU-s per iteration"},
	} {
		st := session.DefaultSettings()
		st.Normalize()
		s := session.Session{ID: "5e55f00d", Settings: st, Trainer: tc.trainer, GPUSeconds: 90, BestTrial: -1}
		tr := session.Trial{Number: 0, Rung: 0, Iterations: 300, State: session.TrialCompleted, GPUSeconds: 90}
		sum := bot.SummaryCard(bot.SummaryInput{Session: s, Trials: []session.Trial{tr}})
		card := bot.TrialCard(bot.TrialInput{Session: s, Trial: tr})
		eta, _ := bot.ETA(s, []session.Trial{tr})
		if field(sum, tc.want+" used") == "" || field(card, tc.want) == "" || !strings.Contains(eta, tc.unit) {
			t.Errorf("%s: summary %+v, trial card %+v, ETA %q; want %q", tc.trainer, sum.Blocks, card.Blocks, eta, tc.want)
		}
	}
}

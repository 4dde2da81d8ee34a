package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"tunebot/session"
)

// fakeOptuna speaks optuna_sessions.py's side of the optuna-session protocol: it reads the
// box, answers every request for a proposal with a random point of the box, and keeps every
// message it read. It stops at the first read error (the session closed its end).
func fakeOptuna(t *testing.T, in io.Reader, out io.WriteCloser) chan []bridgeMsg {
	done := make(chan []bridgeMsg, 1)
	go func() {
		defer out.Close()
		var msgs []bridgeMsg
		var dims []map[string]any
		sc := bufio.NewScanner(in)
		sc.Buffer(nil, 1<<22)
		rng := rand.New(rand.NewPCG(7, 7))
		for sc.Scan() {
			var raw struct {
				Dims []map[string]any `json:"dims"`
			}
			var m bridgeMsg
			if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
				t.Errorf("reading %q: %v", sc.Text(), err)
				break
			}
			_ = json.Unmarshal(sc.Bytes(), &m)
			if raw.Dims != nil {
				dims = raw.Dims
				continue
			}
			msgs = append(msgs, m)
			if m.Result != nil {
				continue
			}
			params := map[string]float64{}
			for _, d := range dims {
				lo, hi := d["low"].(float64), d["high"].(float64)
				u := rng.Float64()
				if d["log"].(bool) {
					params[d["name"].(string)] = math.Exp(math.Log(lo) + u*(math.Log(hi)-math.Log(lo)))
				} else {
					params[d["name"].(string)] = lo + u*(hi-lo)
				}
			}
			b, _ := json.Marshal(map[string]any{"params": params})
			if _, err := out.Write(append(b, '\n')); err != nil {
				break
			}
		}
		done <- msgs
	}()
	return done
}

// With -warm, optuna-session runs a first session and a second that builds on it, both
// proposed by the same peer, and ends with both results, the first's labelled as the cold
// row. The peer is told each trial's score and whether it passed the gates, and the second
// session's scores on the first's level: its baseline (the first's best, which it measures
// again) comes with about that trial's score in the first session, not 0.
func TestOptunaWarmSessionGoesOnOneStudy(t *testing.T) {
	toPeer, fromSession := io.Pipe()
	toSession, fromPeer := io.Pipe()
	done := fakeOptuna(t, toPeer, fromPeer)
	args := []string{"-surface", "3", "-rep", "0", "-family", "separable", "-patience", "20", "-warm", "-tmp", t.TempDir()}
	if err := cmdOptunaSession(args, toSession, fromSession); err != nil {
		t.Fatal(err)
	}
	fromSession.Close()
	msgs := <-done
	var results []*sessionResult
	var seconds [][]bridgeTrial // the trials of each request of the second session
	for _, m := range msgs {
		switch {
		case m.Result != nil:
			results = append(results, m.Result)
		case len(results) == 1:
			seconds = append(seconds, m.Trials)
		}
	}
	if len(results) != 2 || results[0].Method != "optuna" || results[1].Method != "optuna-warm" {
		t.Fatalf("results %+v, want the first session's (optuna) and the second's (optuna-warm)", results)
	}
	if results[0].Trials != 12 || results[1].Trials != 12 {
		t.Errorf("rung-0 trials %d and %d, want all 12 of each (patience 20)", results[0].Trials, results[1].Trials)
	}
	first := results[0]
	best := math.Inf(-1)
	for i, s := range first.Scores {
		if s != nil && first.Eligible0[i] && i == first.Shipped {
			best = *s
		}
	}
	if len(seconds) == 0 || len(seconds[0]) == 0 || seconds[0][0].Score == nil {
		t.Fatalf("the second session's first request told no baseline: %+v", seconds)
	}
	// The baseline is the first's best measured again with other noise: about its score,
	// far from the 0 a score relative to the second's own baseline would be.
	if got := *seconds[0][0].Score; math.IsInf(best, -1) || math.Abs(got-best) > 0.5*math.Abs(best) {
		t.Errorf("the second session's baseline is told %.4f, the first's best (trial %d) scored %.4f there", got, first.Shipped, best)
	}
	last := seconds[len(seconds)-1]
	broke := 0
	for _, tr := range last {
		if !tr.Eligible {
			broke++
		}
	}
	t.Logf("first %.1f%%, second %.1f%%; the second's last request: %d trials, %d broke a gate", 100*first.Fraction, 100*results[1].Fraction, len(last), broke)
	if len(last) != 11 {
		t.Errorf("the second session's last request told %d trials, want its 11 finished ones", len(last))
	}
}

// bestPeer picks the best peer of the cold or the warm rows, never tunebot's.
func TestBestPeer(t *testing.T) {
	med := map[string]float64{"tunebot": 0.9, "tunebot-warm": 0.95, "random": 0.1, "optuna-gp-10": 0.4, "optuna-gp-4": 0.3,
		"random-warm": 0.2, "optuna-gp-10-warm": 0.6}
	if p, m, ok := bestPeer(med, false); !ok || p != "optuna-gp-10" || m != 0.4 {
		t.Errorf("cold: %s %.2f %v", p, m, ok)
	}
	if p, m, ok := bestPeer(med, true); !ok || p != "optuna-gp-10-warm" || m != 0.6 {
		t.Errorf("warm: %s %.2f %v", p, m, ok)
	}
	if _, _, ok := bestPeer(map[string]float64{"tunebot": 1}, false); ok {
		t.Error("a table of tunebot alone has no peer")
	}
}

// A trial's values reach Optuna within the box: the session rounds a value at the box's edge
// to 4 significant digits, which may fall just outside it (0.7071 × 0.5 = 0.35355 becomes
// 0.3535), and Optuna refuses a trial outside its distributions.
func TestOptunaBridgeKeepsTrialsInTheBox(t *testing.T) {
	sp := boxSpace()
	var out strings.Builder
	b := &optunaBridge{dims: boxDims(sp), enc: json.NewEncoder(&out), dec: suggesting(t, centreOf(boxDims(sp)))}
	cfg := sp.Defaults()
	cfg.Params["track_angular_velocity.std"] = 0.3535
	cfg.Weights["action_rate_l2"] = -0.10002 // just past 2× in magnitude
	score := 0.01
	req := session.ProposalRequest{Space: sp, History: []session.TrialSummary{{Config: cfg, Score: &score, State: session.TrialCompleted, Eligible: true}}}
	if _, err := b.Propose(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var msg bridgeMsg
	if err := json.Unmarshal([]byte(out.String()), &msg); err != nil {
		t.Fatal(err)
	}
	for _, d := range b.dims {
		if x := msg.Trials[0].Params[d.name]; x < d.lo || x > d.hi {
			t.Errorf("%s told as %g, outside the box %g–%g", d.name, x, d.lo, d.hi)
		}
	}
}

// A suggestion that leaves a scalar out or puts one outside the box is refused, naming the
// scalar: a missing one would otherwise run as a weight of 0 (the term off) or a param of 0.
func TestOptunaBridgeRefusesASuggestionOutsideTheBox(t *testing.T) {
	sp := boxSpace()
	dims := boxDims(sp)
	first := dims[0]
	for _, tc := range []struct {
		name string
		set  func(map[string]float64)
		want string // "": accepted
	}{
		{"inside", func(map[string]float64) {}, ""},
		{"missing", func(x map[string]float64) { delete(x, first.name) }, first.name + " is missing"},
		{"outside", func(x map[string]float64) { x[first.name] = 2 * first.hi }, first.name + " = "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := centreOf(dims)
			tc.set(x)
			b := &optunaBridge{dims: dims, enc: json.NewEncoder(io.Discard), dec: suggesting(t, x)}
			_, err := b.Propose(context.Background(), session.ProposalRequest{Space: sp})
			if tc.want == "" && err != nil {
				t.Errorf("a point inside the box: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// centreOf is the centre of the box, per scalar.
func centreOf(dims []boxDim) map[string]float64 {
	x := map[string]float64{}
	for _, d := range dims {
		x[d.name] = (d.lo + d.hi) / 2
	}
	return x
}

// suggesting is the peer's side of the pipe when its one suggestion is the point x.
func suggesting(t *testing.T, x map[string]float64) *json.Decoder {
	t.Helper()
	b, err := json.Marshal(map[string]any{"params": x})
	if err != nil {
		t.Fatal(err)
	}
	return json.NewDecoder(bytes.NewReader(append(b, '\n')))
}

// pairedLines compares tunebot with each peer of its kind (first sessions with tunebot's,
// warm rows with its second session) on the same surface and repetition only.
func TestPairedLinesCompareOnTheSameSessions(t *testing.T) {
	row := func(method string, fr ...float64) []sessionResult {
		var rs []sessionResult
		for i, f := range fr {
			rs = append(rs, sessionResult{Method: method, Surface: int64(1000 + i), Fraction: f})
		}
		return rs
	}
	rows := map[string][]sessionResult{
		"tunebot":           row("tunebot", 0.3, 0.1, 0.2),
		"optuna-gp-10":      row("optuna-gp-10", 0.1, 0.2, 0.2, 0.9), // its fourth surface has no tunebot session
		"tunebot-warm":      row("tunebot-warm", 0.5),
		"optuna-gp-10-warm": row("optuna-gp-10-warm", 0.4),
		"tunebot-4":         row("tunebot-4", 0, 0, 0), // tunebot's own variant, not a peer
	}
	got := pairedLines(rows)
	want := []string{
		"tunebot − optuna-gp-10: +3.3 points (standard error 8.8), tunebot better on 1, worse on 1 of 3 sessions",
		"tunebot-warm − optuna-gp-10-warm: +10.0 points (one session, no standard error), tunebot-warm better on 1, worse on 0 of 1 sessions",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("paired lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

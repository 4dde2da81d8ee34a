package advisor

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"tunebot/session"
)

// People's preferences as evidence for a numeric proposer (docs/design.md §5): each answer
// to "which walks better?" is a comparison of two configurations on a latent "looks right"
// utility that the score cannot see. The utility is linear in the samplers' positions (log2
// of a weight's magnitude, a param in fifths of its range, so one unit is one step) and
// fitted as a Bradley–Terry model: P(a walks better than b) = σ(u(a) − u(b)); a "can't
// tell" counts as half a win each way, pulling the two together. A Gaussian prior on each
// scalar's utility per step keeps the fit small when there are few answers: one answer
// between two trials that differ by a step in each of ten scalars moves each by about a
// tenth of a logit. A proposer adds session.ProposalRequest.PreferenceWeight × u to what it
// ranks its candidates by, so its next proposals lean towards the preferred configuration.

// prefPriorSD is the prior deviation of one scalar's utility per unit step, in logits.
const prefPriorSD = 0.5

// prefModel is the fitted utility: per-dim coefficients over positions, and each answer's
// share of them (at the fit, θ = prefPriorSD² Σ share_k · d_k exactly).
type prefModel struct {
	dims  []tpeDim
	theta []float64
	prefs []session.Preference
	diffs [][]float64 // position of the preferred (A for a tie) minus the other's
	share []float64
}

// position is cfg's place per dim in unit steps: log2 of a weight's magnitude (0 sits at
// the samplers' floor), a param's value in fifths of its range.
func position(dims []tpeDim, sp *session.Space, cfg session.RewardConfig) []float64 {
	out := make([]float64, len(dims))
	for i, d := range dims {
		v := d.value(cfg, sp)
		if d.weight {
			out[i] = d.encode(v) / math.Ln2
		} else if d.hi > d.lo {
			out[i] = v / (0.2 * (d.hi - d.lo))
		}
	}
	return out
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// fitPreferences fits the utility to req's answered preferences; ok is false when there
// are none.
func fitPreferences(req session.ProposalRequest) (prefModel, bool) {
	m := prefModel{dims: tpeDims(req.Space)}
	for _, p := range req.Preferences {
		if !p.Decided() {
			continue
		}
		win, lose := p.Configs()
		a, b := position(m.dims, req.Space, win), position(m.dims, req.Space, lose)
		d := make([]float64, len(a))
		for i := range d {
			d[i] = a[i] - b[i]
		}
		m.prefs, m.diffs = append(m.prefs, p), append(m.diffs, d)
	}
	if len(m.prefs) == 0 {
		return m, false
	}
	n := len(m.dims)
	prec := 1 / (prefPriorSD * prefPriorSD)
	m.theta = make([]float64, n)
	// Newton's method on the log posterior, which is concave: a few steps reach the optimum.
	for iter := 0; iter < 25; iter++ {
		grad := make([]float64, n)
		hess := mat.NewSymDense(n, nil)
		for i := range grad {
			hess.SetSym(i, i, prec)
			grad[i] = -prec * m.theta[i]
		}
		for k, d := range m.diffs {
			p := sigmoid(dot(m.theta, d))
			r := 1 - p // a win
			if m.prefs[k].Answer == session.AnswerTie {
				r = 0.5 - p // half a win each way
			}
			for i := range d {
				grad[i] += r * d[i]
			}
			hess.SymRankOne(hess, p*(1-p), mat.NewVecDense(n, d))
		}
		var delta mat.VecDense
		if err := spdFactor(hess).SolveVecTo(&delta, mat.NewVecDense(n, grad)); err != nil {
			break
		}
		step := 0.0
		for i := range m.theta {
			m.theta[i] += delta.AtVec(i)
			step = math.Max(step, math.Abs(delta.AtVec(i)))
		}
		if step < 1e-9 {
			break
		}
	}
	m.share = make([]float64, len(m.diffs))
	for k, d := range m.diffs {
		p := sigmoid(dot(m.theta, d))
		m.share[k] = 1 - p
		if m.prefs[k].Answer == session.AnswerTie {
			m.share[k] = 0.5 - p
		}
	}
	return m, true
}

// PreferenceUtility fits the "looks right" utility to the request's preferences and returns
// it; with no answered preference ok is false and u is 0 everywhere, so a proposer may add
// req.PreferenceWeight × u to its ranking unconditionally.
func PreferenceUtility(req session.ProposalRequest) (u func(session.RewardConfig) float64, ok bool) {
	m, ok := fitPreferences(req)
	if !ok {
		return func(session.RewardConfig) float64 { return 0 }, false
	}
	return func(c session.RewardConfig) float64 { return dot(m.theta, position(m.dims, req.Space, c)) }, true
}

// prefNoteMin is the least a proposal's preference term (PreferenceWeight × the utility it
// gains) must add to what a proposer ranks it by for its card to say that it follows a
// preference: a fifth of the margin an improvement must clear.
const prefNoteMin = session.NoiseMargin / 5

// FollowedPreference returns the answered preference that moved patch (of req.Base) the most
// towards what a person preferred: the one whose own share of the utility the patch gains,
// weighted by req.PreferenceWeight, is largest, when the patch gains at least prefNoteMin in
// all from people's preferences. Any proposer can ask it of its patch.
func FollowedPreference(req session.ProposalRequest, patch session.Patch) (session.Preference, bool) {
	m, ok := fitPreferences(req)
	if !ok || req.PreferenceWeight <= 0 {
		return session.Preference{}, false
	}
	from := position(m.dims, req.Space, req.Base)
	to := position(m.dims, req.Space, session.Merge(req.Base, patch))
	move := make([]float64, len(from))
	for i := range move {
		move[i] = to[i] - from[i]
	}
	if req.PreferenceWeight*dot(m.theta, move) < prefNoteMin {
		return session.Preference{}, false
	}
	best, bestGain := -1, 0.0
	for k, d := range m.diffs {
		if m.prefs[k].Answer == session.AnswerTie {
			continue
		}
		if g := m.share[k] * dot(d, move); g > bestGain {
			best, bestGain = k, g
		}
	}
	if best < 0 {
		return session.Preference{}, false
	}
	return m.prefs[best], true
}

// PreferenceNote is the sentence a proposal's card says when it follows p: "builds on your
// preference for trial 8's gait over trial 5's".
func PreferenceNote(p session.Preference) string {
	win, lose, _ := p.Winner()
	return fmt.Sprintf("builds on your preference for %s gait over %s", session.Whose(win), session.Whose(lose))
}

// preferenceSlopes is, per dim of tpeDims(req.Space), req.PreferenceWeight × how much the
// utility gains per unit step of the proposer's own (unit gives a step's length in model
// space): what a proposer whose positions are steps adds to its ranking. nil without an
// answered preference or with the weight 0.
func preferenceSlopes(req session.ProposalRequest, unit func(tpeDim) float64) []float64 {
	m, ok := fitPreferences(req)
	if !ok || req.PreferenceWeight <= 0 {
		return nil
	}
	out := make([]float64, len(m.dims))
	for i, d := range m.dims {
		per := math.Ln2 // position's unit for a weight: log2 of its magnitude
		if !d.weight {
			per = 0.2 * (d.hi - d.lo)
		}
		if per > 0 {
			out[i] = req.PreferenceWeight * m.theta[i] * unit(d) / per
		}
	}
	return out
}

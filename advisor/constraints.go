package advisor

import (
	"math"

	"tunebot/session"
)

// constrainMoves narrows the numeric proposers' moves to what the request's constraints
// allow (session.ProposalRequest.MayMove): a kept scalar is dropped, one that may not go up
// keeps only the side below its base, one that may not go down only the side above. "Up" is
// the model space's up, a weight's magnitude (log|w|) and a param's value, which is the
// constraints' meaning too. Every numeric proposer calls it on its moves before it draws,
// so a person's "keep is_terminated" holds whoever proposes; the engine refuses a patch that
// breaks one all the same.
func constrainMoves(req session.ProposalRequest, moves []tpeMove) []tpeMove {
	if len(req.Constraints) == 0 {
		return moves
	}
	out := make([]tpeMove, 0, len(moves))
	for _, m := range moves {
		up, down := req.MayMove(m.dim.name, true), req.MayMove(m.dim.name, false)
		if up && down {
			out = append(out, m)
			continue
		}
		zb := m.dim.encode(m.base)
		if !up {
			m.zhi = math.Min(m.zhi, zb)
		}
		if !down {
			m.zlo = math.Max(m.zlo, zb)
		}
		if !(m.zhi > m.zlo) {
			continue // kept, or no room the allowed way
		}
		m.vlo, m.vhi = m.dim.valueRange(m.zlo, m.zhi, m.vlo, m.vhi)
		out = append(out, m)
	}
	return out
}

// valueRange maps the model-space interval [zlo, zhi] to value space (ordered), inside the
// value-space interval [vlo, vhi] it narrows.
func (d tpeDim) valueRange(zlo, zhi, vlo, vhi float64) (float64, float64) {
	a, b := zlo, zhi
	if d.weight {
		a, b = d.sign*math.Exp(zlo), d.sign*math.Exp(zhi)
		if a > b {
			a, b = b, a
		}
	}
	return math.Max(a, vlo), math.Min(b, vhi)
}

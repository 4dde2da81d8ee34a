package advisor

import (
	"fmt"
	"math"
	"math/rand/v2"

	"tunebot/session"
)

// samplerScreenStream seeds the screening design: from the session seed alone, so every
// proposal of a session reads the same design.
const samplerScreenStream uint64 = 0xbb67ae8584caa73b

// screen returns row j of a balanced screening design around the base: the scalars, in an
// order drawn once per session, are dealt maxChanges per row round-robin, so over the rows
// every scalar is moved about equally often; its first move goes a way drawn once per
// session and each later one the other way, so each is moved up and down (what the
// curvature term needs). A move a bound blocks goes the other way. ok is false when the
// row cannot be built or is refused; the caller then proposes as usual.
func (s *Sampler) screen(req session.ProposalRequest, byName map[string]tpeMove, m samplerModel, j, maxChanges int, rejected [][]direction) (session.Patch, []tpeChange, bool) {
	rng := rand.New(rand.NewPCG(uint64(req.Seed), samplerScreenStream))
	D := len(m.dims)
	order := rng.Perm(D)
	first := make([]float64, D)
	for i := range first {
		first[i] = 1
		if rng.IntN(2) == 0 {
			first[i] = -1
		}
	}
	var changes []tpeChange
	chosen := map[direction]bool{}
	for k := 0; k < maxChanges && k < D; k++ {
		pos := j*maxChanges + k
		i := order[pos%D]
		sign := first[i]
		if (pos/D)%2 == 1 {
			sign = -sign
		}
		d := m.dims[i]
		mv, ok := byName[d.name]
		if !ok {
			continue
		}
		zb := d.encode(mv.base)
		var to float64
		moved := false
		for _, dd := range []float64{sign, -sign} {
			if d.weight && mv.base == 0 {
				if dd < 0 {
					continue
				}
				to = mv.zlo + 0.5*(mv.zhi-mv.zlo)
			} else {
				to = math.Min(math.Max(zb+dd*m.units[i], mv.zlo), mv.zhi)
			}
			if math.Abs(to-zb)/m.units[i] >= 0.25 {
				moved = true
				break
			}
		}
		if !moved {
			continue
		}
		dir := direction{d.name, to > zb}
		if completes(rejected, chosen, dir) {
			continue
		}
		chosen[dir] = true
		changes = append(changes, tpeChange{dim: d, old: mv.base, new: d.decode(to, mv.vlo, mv.vhi)})
	}
	if len(changes) == 0 {
		return session.Patch{}, nil, false
	}
	patch := tpePatch(changes)
	if _, ok := repeatsRejected(req, patch, rejected); ok {
		return session.Patch{}, nil, false
	}
	if _, err := req.Space.Validate(req.Base, patch, req.Tried); err != nil {
		return session.Patch{}, nil, false
	}
	return patch, changes, true
}

func screenRationale(j, rows int, changes []tpeChange) string {
	return fmt.Sprintf("sampler screening design, row %d of %d (each scalar moved up and down about equally often): %s", j+1, rows, tpeDescribe(changes))
}

package advisor

import (
	"gonum.org/v1/gonum/mat"
)

// spdFactor factorises a symmetric positive definite matrix (gonum's Cholesky), adding a
// little to its diagonal, ever more, while rounding leaves it not quite positive definite.
func spdFactor(a *mat.SymDense) *mat.Cholesky {
	var c mat.Cholesky
	if c.Factorize(a) {
		return &c
	}
	n := a.SymmetricDim()
	scale := 0.0
	for i := 0; i < n; i++ {
		scale = max(scale, a.At(i, i))
	}
	jitter := 1e-12 * max(scale, 1)
	b := mat.NewSymDense(n, nil)
	for try := 0; try < 16; try++ {
		b.CopySym(a)
		for i := 0; i < n; i++ {
			b.SetSym(i, i, b.At(i, i)+jitter)
		}
		if c.Factorize(b) {
			return &c
		}
		jitter *= 10
	}
	// Not a number somewhere: the diagonal alone, so a draw stays finite where it can.
	b.Zero()
	for i := 0; i < n; i++ {
		b.SetSym(i, i, max(a.At(i, i), jitter))
	}
	c.Factorize(b)
	return &c
}

// spdInverse inverts a symmetric positive definite matrix through its Cholesky factor.
func spdInverse(a *mat.SymDense) *mat.SymDense {
	var inv mat.SymDense
	if err := spdFactor(a).InverseTo(&inv); err != nil {
		// Only a singular factor fails, and spdFactor returns none.
		panic("advisor: " + err.Error())
	}
	return &inv
}

// lowerFactor returns the lower Cholesky factor L of a symmetric positive definite a (a = L Lᵀ).
func lowerFactor(a *mat.SymDense) *mat.TriDense {
	var l mat.TriDense
	spdFactor(a).LTo(&l)
	return &l
}

package advisor

import (
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"

	"tunebot/session"
)

// The composite model's optional Gaussian process (SamplerPrior.GP; docs/design.md §5):
// each metric is the parametric regression (composite.go) plus a residual function drawn
// from a Gaussian process with an ARD Matérn 5/2 kernel on the positions in steps (log
// magnitude for weights, so the box is log-scaled). It is the GP with explicit basis
// functions of Rasmussen & Williams (2006, §2.7): the regression's coefficients keep their
// prior, and the data's covariance is the kernel's plus the evaluation noise, so the
// coefficients are a generalised least-squares fit and the residual function a kriging of
// what they leave. Where the trials are, the model then follows them whatever the
// parametric form misses (an interaction, a cliff); away from them it falls back on the
// parametric model with the kernel's spread on top. The kernel's amplitude and its
// length per dim are chosen by the marginal likelihood with a log-normal prior on each
// (gonum's optimize, L-BFGS), per metric and proposal.

// gpHyper are one metric's kernel parameters: the amplitude (model units) and the length
// per dim (steps).
type gpHyper struct {
	amp float64
	ls  []float64
}

// gpFit is one metric's residual process given its trials.
type gpFit struct {
	hyper gpHyper
	xs    [][]float64   // the trials' positions
	ky    *mat.Cholesky // kernel plus noise at the trials
	// rows and y are the trials' regression rows and targets (model units): residuals
	// reads them for what a draw of the coefficients leaves for the process to krige.
	rows [][]float64
	y    []float64
}

// matern52 is the ARD Matérn 5/2 kernel between a and b, and, per dim, the derivative of
// its value with respect to the log of that dim's length when grad is not nil.
func (h gpHyper) matern52(a, b []float64, grad []float64) float64 {
	r2 := 0.0
	for d := range a {
		u := (a[d] - b[d]) / h.ls[d]
		r2 += u * u
	}
	r := math.Sqrt(r2)
	s5r := math.Sqrt(5) * r
	e := math.Exp(-s5r)
	a2 := h.amp * h.amp
	if grad != nil {
		c := a2 * 5.0 / 3 * (1 + s5r) * e
		for d := range a {
			u := (a[d] - b[d]) / h.ls[d]
			grad[d] = c * u * u
		}
	}
	return a2 * (1 + s5r + 5*r2/3) * e
}

// gmatrix is the kernel matrix over xs.
func (h gpHyper) gmatrix(xs [][]float64) *mat.SymDense {
	n := len(xs)
	k := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			k.SetSym(i, j, h.matern52(xs[i], xs[j], nil))
		}
	}
	return k
}

// gpPrior is the log-normal prior of the kernel's parameters: the amplitude around amp,
// every length around length steps, each with a spread of one in log units.
type gpPrior struct {
	amp, length float64
}

// fitGPHyper chooses the kernel's parameters that maximise the marginal likelihood of y,
// whose mean is mean and whose covariance is the kernel's plus base (the noise and the
// regression's prior, projected onto the trials), with gpPrior's log-normal prior.
func fitGPHyper(xs [][]float64, y, mean []float64, base *mat.SymDense, prior gpPrior) gpHyper {
	r := make([]float64, len(y))
	for i := range r {
		r[i] = y[i] - mean[i]
	}
	obj := gpObjective{xs: xs, r: r, base: base, prior: prior}
	th0 := make([]float64, 1+len(xs[0]))
	th0[0] = math.Log(prior.amp)
	for d := 1; d < len(th0); d++ {
		th0[d] = math.Log(prior.length)
	}
	p := optimize.Problem{
		Func: func(th []float64) float64 { return obj.value(nil, th) },
		Grad: func(grad, th []float64) { obj.value(grad, th) },
	}
	res, err := optimize.Minimize(p, th0, &optimize.Settings{MajorIterations: 60, GradientThreshold: 1e-5}, &optimize.LBFGS{})
	if err != nil || res == nil || math.IsInf(res.F, 0) || math.IsNaN(res.F) {
		return gpHyperOf(th0)
	}
	return gpHyperOf(res.X)
}

// gpHyperOf reads the kernel's parameters from their logs: the amplitude, then the lengths.
func gpHyperOf(th []float64) gpHyper {
	h := gpHyper{amp: math.Exp(th[0]), ls: make([]float64, len(th)-1)}
	for d := range h.ls {
		h.ls[d] = math.Exp(th[1+d])
	}
	return h
}

// gpObjective is the negative log posterior of the kernel's parameters: residuals r at xs
// with covariance kernel + base, and the log-normal prior.
type gpObjective struct {
	xs    [][]float64
	r     []float64
	base  *mat.SymDense
	prior gpPrior
}

// value returns the objective at th (the parameters' logs) and, when grad is not nil,
// writes its gradient: ½ tr((C⁻¹ − ααᵀ) ∂C/∂θ) plus the prior's.
func (o gpObjective) value(grad, th []float64) float64 {
	h := gpHyperOf(th)
	n, D := len(o.xs), len(h.ls)
	c := h.gmatrix(o.xs)
	c.AddSym(c, o.base)
	chol := spdFactor(c)
	var alpha mat.VecDense
	if err := chol.SolveVecTo(&alpha, mat.NewVecDense(n, o.r)); err != nil {
		return math.Inf(1)
	}
	la, l0 := th[0]-math.Log(o.prior.amp), math.Log(o.prior.length)
	nll := 0.5*mat.Dot(mat.NewVecDense(n, o.r), &alpha) + 0.5*chol.LogDet() + 0.5*la*la
	for d := 0; d < D; d++ {
		nll += 0.5 * (th[1+d] - l0) * (th[1+d] - l0)
	}
	if grad == nil {
		return nll
	}
	var inv mat.SymDense
	if err := chol.InverseTo(&inv); err != nil {
		return math.Inf(1)
	}
	grad[0] = la
	for d := 0; d < D; d++ {
		grad[1+d] = th[1+d] - l0
	}
	g := make([]float64, D)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			w := 0.5 * (inv.At(i, j) - alpha.AtVec(i)*alpha.AtVec(j))
			grad[0] += w * 2 * h.matern52(o.xs[i], o.xs[j], g)
			for d := 0; d < D; d++ {
				grad[1+d] += w * g[d]
			}
		}
	}
	return nll
}

// fitGPHyperTo fits the kernel's parameters to g's trials (rows h, noise variances nv): the
// targets' mean is the regression's prior mean, their covariance beside the kernel's the
// noise and the regression's prior projected onto the trials, H V₀ Hᵀ.
func fitGPHyperTo(g *gpFit, h *mat.Dense, m0, v0, nv []float64, prior gpPrior) gpHyper {
	n, p := len(g.y), len(m0)
	var hv, hvh mat.Dense
	hv.Mul(h, mat.NewDiagDense(p, v0))
	hvh.Mul(&hv, h.T())
	base := mat.NewSymDense(n, nil)
	mean := make([]float64, n)
	for i := 0; i < n; i++ {
		mean[i] = dot(g.rows[i], m0)
		for j := 0; j <= i; j++ {
			base.SetSym(i, j, hvh.At(i, j))
		}
		base.SetSym(i, i, base.At(i, i)+nv[i])
	}
	return fitGPHyper(g.xs, g.y, mean, base, prior)
}

// kstar is the kernel between x and every trial.
func (g *gpFit) kstar(x []float64) []float64 {
	out := make([]float64, len(g.xs))
	for i, xi := range g.xs {
		out[i] = g.hyper.matern52(x, xi, nil)
	}
	return out
}

// weights returns, at x, the kriging weights (Ky⁻¹k*, so the residual's mean is their dot
// with the residuals) and the residual's spread.
func (g *gpFit) weights(x []float64) ([]float64, float64) {
	ks := g.kstar(x)
	var v mat.VecDense
	if err := g.ky.SolveVecTo(&v, mat.NewVecDense(len(ks), ks)); err != nil {
		return make([]float64, len(ks)), g.hyper.amp
	}
	w := v.RawVector().Data
	return w, math.Sqrt(math.Max(g.hyper.amp*g.hyper.amp-dot(w, ks), 0))
}

// residuals are the targets less the rows times coefficients beta.
func (g *gpFit) residuals(beta []float64) []float64 {
	out := make([]float64, len(g.y))
	for i, row := range g.rows {
		out[i] = g.y[i] - dot(row, beta)
	}
	return out
}

// fitMetricGP is fitMetric with the residual process: the coefficients' posterior given the
// trials whose covariance is the kernel's plus the noise, A = V₀⁻¹ + HᵀKy⁻¹H, mean
// A⁻¹(V₀⁻¹m₀ + HᵀKy⁻¹y), and the process's kriging of what they leave. hyper nil: the
// kernel's parameters are fitted to these trials (fitGPHyper).
func fitMetricGP(name string, obs []observation, decl []declaration, floors session.Metrics, m0, v0 []float64, noise float64, prior gpPrior, hyper *gpHyper) metricFit {
	n, p := len(obs), len(m0)
	f := newMetricFit(name, decl, noise)
	g := &gpFit{xs: make([][]float64, n), rows: make([][]float64, n), y: make([]float64, n)}
	h := mat.NewDense(n, p, nil)
	nv := make([]float64, n)
	for i, o := range obs {
		g.xs[i], g.rows[i], g.y[i] = o.x, rowOf(o), toModel(name, o.metrics[name], floors)
		h.SetRow(i, g.rows[i])
		nv[i] = noise * noise / o.precision()
	}
	if hyper == nil {
		fitted := fitGPHyperTo(g, h, m0, v0, nv, prior)
		hyper = &fitted
	}
	g.hyper = *hyper
	ky := g.hyper.gmatrix(g.xs)
	for i := range nv {
		ky.SetSym(i, i, ky.At(i, i)+nv[i])
	}
	g.ky = spdFactor(ky)
	var kh mat.Dense // Ky⁻¹H
	if err := g.ky.SolveTo(&kh, h); err != nil {
		panic("advisor: " + err.Error())
	}
	var hkh mat.Dense
	hkh.Mul(h.T(), &kh)
	var ky1 mat.VecDense // Ky⁻¹y
	if err := g.ky.SolveVecTo(&ky1, mat.NewVecDense(n, g.y)); err != nil {
		panic("advisor: " + err.Error())
	}
	a := mat.NewSymDense(p, nil)
	b := make([]float64, p)
	for i := 0; i < p; i++ {
		for j := 0; j <= i; j++ {
			a.SetSym(i, j, 0.5*(hkh.At(i, j)+hkh.At(j, i)))
		}
		a.SetSym(i, i, a.At(i, i)+1/v0[i])
		b[i] = m0[i]/v0[i] + mat.Dot(h.ColView(i), &ky1)
	}
	f.setPosterior(a, b)
	f.gp = g
	return f
}

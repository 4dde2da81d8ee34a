package advisor

import "testing"

// A random or TPE proposal's rationale names a param as every surface does, "params.x",
// as the sampler's sentence and evidence do (issue 43, item 7.12).
func TestChangeWordsNameParamsAsEverySurface(t *testing.T) {
	for _, tt := range []struct {
		c    tpeChange
		want string
	}{
		{tpeChange{dim: tpeDim{name: "foot_slip", weight: true}, old: -0.25, new: -0.5}, "scale foot_slip ×2"},
		{tpeChange{dim: tpeDim{name: "pose", weight: true}, new: 0.5}, "switch on pose at 0.5"},
		{tpeChange{dim: tpeDim{name: "foot_gait.period"}, old: 0.6, new: 0.55}, "set params.foot_gait.period 0.6→0.55"},
	} {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%q, want %q", got, tt.want)
		}
	}
}

package tfevents

import (
	"encoding/binary"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestTensorScalar: which field of a one-element float tensor holds its value.
func TestTensorScalar(t *testing.T) {
	f32 := func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }
	f64 := func(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) }
	const half15, halfMinus2 = 0x3e00, 0xc000 // 1.5 and -2 as IEEE halves
	tests := []struct {
		name   string
		tensor tensorFields
		want   float64
		ok     bool
	}{
		{name: "float content", tensor: tensorFields{dtype: dtFloat, elems: 1, content: f32(2.5)}, want: 2.5, ok: true},
		{name: "float content wins over float_val", tensor: tensorFields{dtype: dtFloat, elems: 1, content: f32(2.5), floats: f32(9)}, want: 2.5, ok: true},
		{name: "float_val", tensor: tensorFields{dtype: dtFloat, elems: 1, floats: f32(-1)}, want: -1, ok: true},
		{name: "float content of the wrong size falls to float_val", tensor: tensorFields{dtype: dtFloat, elems: 1, content: f64(3), floats: f32(4)}, want: 4, ok: true},
		{name: "double content", tensor: tensorFields{dtype: dtDouble, elems: 1, content: f64(0.125)}, want: 0.125, ok: true},
		{name: "double_val", tensor: tensorFields{dtype: dtDouble, elems: 1, doubles: f64(7)}, want: 7, ok: true},
		{name: "double in float_val is not read", tensor: tensorFields{dtype: dtDouble, elems: 1, floats: f32(7)}},
		{name: "half content", tensor: tensorFields{dtype: dtHalf, elems: 1, content: binary.LittleEndian.AppendUint16(nil, half15)}, want: 1.5, ok: true},
		{name: "half_val packed", tensor: tensorFields{dtype: dtHalf, elems: 1, hv: protowire.AppendVarint(nil, halfMinus2)}, want: -2, ok: true},
		{name: "half_val unpacked", tensor: tensorFields{dtype: dtHalf, elems: 1, halfVarints: []uint64{half15}}, want: 1.5, ok: true},
		{name: "two unpacked halves", tensor: tensorFields{dtype: dtHalf, elems: 1, halfVarints: []uint64{half15, half15}}},
		{name: "a vector", tensor: tensorFields{dtype: dtFloat, elems: 2, content: f32(1)}},
		{name: "an empty shape", tensor: tensorFields{dtype: dtFloat, elems: 0, content: f32(1)}},
		{name: "a string", tensor: tensorFields{dtype: 7, elems: 1, content: []byte("abcd")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.tensor.scalar()
			if got != tt.want || ok != tt.ok {
				t.Errorf("scalar() = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

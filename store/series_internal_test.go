package store

import (
	"encoding/binary"
	"math"
	"testing"

	"tunebot/session"
)

// FuzzDecodeSeries checks that any stored bytes decode to an error or to points that encode
// back to the same bytes, and never panic or allocate from a corrupt count.
func FuzzDecodeSeries(f *testing.F) {
	f.Add(encodeSeries(nil))
	f.Add(encodeSeries([]session.Point{{Step: 1, Value: 2}, {Step: math.MinInt64, Value: math.NaN()}}))
	f.Add([]byte{seriesVersion, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add(binary.AppendUvarint([]byte{seriesVersion}, 1<<62))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, buf []byte) {
		pts, err := decodeSeries(buf)
		if err != nil {
			return
		}
		if again := encodeSeries(pts); string(again) != string(buf) {
			// Varints have one canonical form when written, so only non-canonical input differs.
			back, err := decodeSeries(again)
			if err != nil || len(back) != len(pts) {
				t.Fatalf("re-encoding %x gave %x that decodes to %v, %v", buf, again, back, err)
			}
		}
	})
}

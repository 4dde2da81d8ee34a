package tfevents

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"testing"
)

func TestCRC8MatchesHashCRC32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, 8)
	for i := range 10000 {
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if i < 256 { // every value of each single byte as well
			b = []byte{byte(i), 0, 0, 0, 0, 0, 0, byte(i)}
		}
		if got, want := crc8(b), crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)); got != want {
			t.Fatalf("crc8(%x) = %08x, want %08x", b, got, want)
		}
	}
}

// TestFastScalarAgreesWithDecodeEvent runs every record of the real event files through
// both decoders: the fast path must give what the general decoder gives, or decline.
func TestFastScalarAgreesWithDecodeEvent(t *testing.T) {
	files, err := EventFiles("../../testdata/tfevents")
	if err != nil || len(files) == 0 {
		t.Fatalf("test data missing (expected testdata/tfevents at the repository root): %v", err)
	}
	type scalar struct {
		tag         string
		step        int64
		wall, value float64
	}
	fast := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(b); {
			n := int(binary.LittleEndian.Uint64(b[off:]))
			data := b[off+headerSize : off+headerSize+n]
			off += headerSize + n + footerSize
			var slow []scalar
			if err := decodeEvent(data, func(tag []byte, step int64, wall, value float64) {
				slow = append(slow, scalar{string(tag), step, wall, value})
			}); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			tag, step, wall, value, ok := fastScalar(data)
			if !ok {
				continue
			}
			fast++
			if got := (scalar{string(tag), step, wall, value}); len(slow) != 1 || slow[0] != got {
				t.Fatalf("%s at %d: fast path %+v, general decoder %+v", f, off, got, slow)
			}
		}
	}
	if fast < 30000 {
		t.Errorf("fast path took only %d records of the rsl_rl files", fast)
	}
}

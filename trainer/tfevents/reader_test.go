package tfevents_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/encoding/protowire"

	"tunebot/session"
	"tunebot/trainer/tfevents"
)

// testdata holds real event files kept in the repository (testdata/tfevents/SOURCES.md).
const testdata = "../../testdata/tfevents"

func realFile(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(testdata, rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test data missing: %v (expected testdata/tfevents at the repository root)", err)
	}
	return p
}

func TestReadRealFiles(t *testing.T) {
	// Counts from testdata/tfevents/SOURCES.md.
	tests := []struct {
		file         string
		tags, points int
	}{
		{"iui-whgi_unitree_rl_gym_go2/events.out.tfevents.1745910742.son-System-Product-Name.4264.0", 21, 31500},
		{"iui-whgi_unitree_rl_gym_go2/events.out.tfevents.1745910672.son-System-Product-Name.4131.0", 21, 42},
		{"janosh_tensorboard-reducer/events.out.tfevents.1622543341.janoshs-mbp.lan.86862.0", 1, 100},
		{"janosh_tensorboard-reducer/events.out.tfevents.1622966509.janoshs-mbp.lan.86059.0", 2, 420},
		{"dfalbel_tfevents-js/events.out.tfevents.1687811641.v2", 1, 1},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			path := realFile(t, tt.file)
			got, err := tfevents.ReadAll(path)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, p := range got {
				n += len(p)
			}
			if len(got) != tt.tags || n != tt.points {
				t.Errorf("got %d tags, %d points; want %d tags, %d points", len(got), n, tt.tags, tt.points)
			}
			st, _ := os.Stat(path)
			var r tfevents.Reader
			if _, err := r.ReadFile(path); err != nil {
				t.Fatal(err)
			}
			if r.Offset(path) != st.Size() {
				t.Errorf("offset after reading = %d, want the file size %d", r.Offset(path), st.Size())
			}
		})
	}
}

func TestReadRealFileFacts(t *testing.T) {
	path := realFile(t, "iui-whgi_unitree_rl_gym_go2/events.out.tfevents.1745910742.son-System-Product-Name.4264.0")
	got, err := tfevents.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	reward := got["Train/mean_reward"]
	if len(reward) != 1500 {
		t.Fatalf("Train/mean_reward has %d points, want 1500", len(reward))
	}
	last := reward[len(reward)-1]
	if last.Step != 1499 || math.Abs(last.Value-24.1968) > 1e-4 {
		t.Errorf("last Train/mean_reward point = %+v, want step 1499, value ≈ 24.1968", last)
	}
	for i, p := range reward {
		if p.Step != int64(i) {
			t.Fatalf("Train/mean_reward point %d has step %d", i, p.Step)
		}
	}
	if n := len(got["Perf/collection time"]); n != 1500 {
		t.Errorf("tag with a space: %d points, want 1500", n)
	}
	// rsl_rl's .../time tags use whole seconds as the step: repeats are kept, in file order.
	timed := got["Train/mean_reward/time"]
	repeats := 0
	for i := 1; i < len(timed); i++ {
		if timed[i].Step < timed[i-1].Step {
			t.Fatalf("steps of Train/mean_reward/time go back at %d: %d after %d", i, timed[i].Step, timed[i-1].Step)
		}
		if timed[i].Step == timed[i-1].Step {
			repeats++
		}
	}
	if repeats == 0 {
		t.Error("Train/mean_reward/time has no repeated steps; they must be kept")
	}
}

// writeSample writes a file with every kind of scalar the writer makes and returns the
// scalars in file order.
func writeSample(t *testing.T, path string) []tfevents.Scalar {
	t.Helper()
	w, err := tfevents.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Unix(1745910742, 250_000_000)
	var want []tfevents.Scalar
	add := func(tag string, step int64, v float64, write func() error) {
		t.Helper()
		if err := write(); err != nil {
			t.Fatal(err)
		}
		want = append(want, tfevents.Scalar{Tag: tag, Step: step, Wall: wall, Value: v})
	}
	for step := int64(0); step < 4; step++ {
		v := float64(step)*0.5 - 1 // exact in float32
		add("Train/mean_reward", step, v, func() error { return w.Scalar("Train/mean_reward", step, v, wall) })
		add("Perf/collection time", step, v+2, func() error { return w.Scalar("Perf/collection time", step, v+2, wall) })
		add("tf2/float_content", step, v, func() error { return w.TensorScalar("tf2/float_content", step, v, wall) })
		d := v + 1e-9 // needs float64
		add("tf2/double_content", step, d, func() error {
			return w.TensorScalarAs("tf2/double_content", step, d, wall, tfevents.DoubleContent)
		})
		add("tf2/float_val", step, v, func() error {
			return w.TensorScalarAs("tf2/float_val", step, v, wall, tfevents.FloatVal)
		})
		add("tf2/double_val", step, d, func() error {
			return w.TensorScalarAs("tf2/double_val", step, d, wall, tfevents.DoubleVal)
		})
	}
	add("Train/mean_reward/time", 7, 1, func() error { return w.Scalar("Train/mean_reward/time", 7, 1, wall) })
	add("Train/mean_reward/time", 7, 2, func() error { return w.Scalar("Train/mean_reward/time", 7, 2, wall) })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

func scanAll(t *testing.T, r *tfevents.Reader, path string) []tfevents.Scalar {
	t.Helper()
	var got []tfevents.Scalar
	if err := r.ScanFile(path, func(s tfevents.Scalar) { got = append(got, s) }); err != nil {
		t.Fatal(err)
	}
	return got
}

// wallClose compares wall times to the microsecond: they travel as float64 seconds.
var wallClose = cmp.Comparer(func(a, b time.Time) bool {
	d := a.Sub(b)
	return d < time.Microsecond && d > -time.Microsecond
})

func TestWriterReaderRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), tfevents.FileName(time.Unix(1, 0), "host.with.dots", 42, 0))
	want := writeSample(t, path)
	var r tfevents.Reader
	if diff := cmp.Diff(want, scanAll(t, &r, path), wallClose); diff != "" {
		t.Errorf("scanned scalars (-want +got):\n%s", diff)
	}
	got, err := tfevents.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(byTag(want), got); diff != "" {
		t.Errorf("ReadAll (-want +got):\n%s", diff)
	}
	// A second read of an unchanged file has nothing new.
	again, err := r.ReadFile(path)
	if err != nil || len(again) != 0 {
		t.Errorf("second read = %v, %v; want nothing new", again, err)
	}
}

func byTag(s []tfevents.Scalar) map[string][]session.Point {
	m := map[string][]session.Point{}
	for _, x := range s {
		m[x.Tag] = append(m[x.Tag], session.Point{Step: x.Step, Value: x.Value})
	}
	return m
}

func TestWriterErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.out.tfevents.x")
	w, err := tfevents.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.TensorScalarAs("a", 0, 1, time.Now(), tfevents.TensorEncoding(99)); err == nil {
		t.Error("unknown encoding: no error")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.Scalar("a", 0, 1, time.Now()); err == nil {
		t.Error("Scalar after Close: no error")
	}
	if _, err := tfevents.Create(filepath.Join(t.TempDir(), "missing", "f")); err == nil {
		t.Error("Create in a missing directory: no error")
	}
}

// TestTruncatedAtEveryOffset cuts files at every byte: a read never fails and never yields
// a wrong point, and once the rest arrives every point has been seen exactly once.
func TestTruncatedAtEveryOffset(t *testing.T) {
	dir := t.TempDir()
	sample := filepath.Join(dir, "sample.tfevents")
	writeSample(t, sample)
	files := []string{
		sample,
		realFile(t, "iui-whgi_unitree_rl_gym_go2/events.out.tfevents.1745910672.son-System-Product-Name.4131.0"),
	}
	for _, src := range files {
		t.Run(filepath.Base(src), func(t *testing.T) {
			full, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			var ref tfevents.Reader
			want := scanAll(t, &ref, src)
			path := filepath.Join(t.TempDir(), "events.out.tfevents.cut")
			for cut := 0; cut <= len(full); cut++ {
				if err := os.WriteFile(path, full[:cut], 0o644); err != nil {
					t.Fatal(err)
				}
				var r tfevents.Reader
				first := scanAll(t, &r, path)
				if len(first) > len(want) || !cmp.Equal(first, want[:len(first)], wallClose, cmpopts.EquateEmpty()) {
					t.Fatalf("cut at %d: read %d scalars that are not a prefix of the file's", cut, len(first))
				}
				appendBytes(t, path, full[cut:])
				rest := scanAll(t, &r, path)
				if diff := cmp.Diff(want, append(first, rest...), wallClose); diff != "" {
					t.Fatalf("cut at %d, then completed (-want +got):\n%s", cut, diff)
				}
			}
		})
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGrowingFile appends a file in pieces of random size, reading between appends, and
// also reads while a Writer flushes: every point arrives exactly once, in order.
func TestGrowingFile(t *testing.T) {
	big := realFile(t, "iui-whgi_unitree_rl_gym_go2/events.out.tfevents.1745910742.son-System-Product-Name.4264.0")
	small := realFile(t, "iui-whgi_unitree_rl_gym_go2/events.out.tfevents.1745910672.son-System-Product-Name.4131.0")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range []struct {
		src      string
		maxPiece int
	}{{small, 7}, {small, 100}, {big, 3000}, {big, 3 << 20}} {
		src, maxPiece := tt.src, tt.maxPiece
		full, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		want, err := tfevents.ReadAll(src)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "events.out.tfevents.grow")
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var r tfevents.Reader
		got := map[string][]session.Point{}
		for off := 0; off < len(full); {
			n := min(1+rng.IntN(maxPiece), len(full)-off)
			appendBytes(t, path, full[off:off+n])
			off += n
			pts, err := r.ReadFile(path)
			if err != nil {
				t.Fatalf("pieces up to %d bytes, after %d bytes: %v", maxPiece, off, err)
			}
			for tag, p := range pts {
				got[tag] = append(got[tag], p...)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("pieces up to %d bytes (-want +got):\n%s", maxPiece, diff)
		}
	}

	// A live Writer, flushed between reads.
	path := filepath.Join(t.TempDir(), "events.out.tfevents.live")
	w, err := tfevents.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var r tfevents.Reader
	var seen []session.Point
	for step := int64(0); step < 50; step++ {
		if err := w.Scalar("loss", step, float64(step), time.Unix(step, 0)); err != nil {
			t.Fatal(err)
		}
		if step%3 == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		pts, err := r.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, pts["loss"]...)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	pts, err := r.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen = append(seen, pts["loss"]...)
	for i, p := range seen {
		if p.Step != int64(i) || p.Value != float64(i) {
			t.Fatalf("point %d = %+v; want each step once, in order", i, p)
		}
	}
	if len(seen) != 50 {
		t.Errorf("saw %d points, want 50", len(seen))
	}
}

func TestCorruptFile(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.tfevents")
	want := writeSample(t, src)
	full, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// Record boundaries: the file_version record, then one record per scalar.
	var starts []int
	for off := 0; off < len(full); {
		starts = append(starts, off)
		off += 12 + int(binary.LittleEndian.Uint64(full[off:])) + 4
	}
	// Records early in a read have their data CRCs checked by the reading stage, late
	// ones by the decoding stage: a bad record is caught in both places.
	last := len(starts) - 1
	tests := []struct {
		name   string
		bad    int // index of the bad record; record i holds want[i-1]
		flip   int // byte to change
		reason string
	}{
		{"data byte", 3, starts[3] + 12 + 5, "data fails its CRC"},
		{"data CRC", 3, starts[4] - 1, "data fails its CRC"},
		{"length", 3, starts[3], "length fails its CRC"},
		{"length CRC", 3, starts[3] + 9, "length fails its CRC"},
		{"late data byte", last, starts[last] + 12 + 5, "data fails its CRC"},
		{"late data CRC", last, len(full) - 2, "data fails its CRC"},
		{"late length", last, starts[last] + 1, "length fails its CRC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := tt.bad
			b := append([]byte(nil), full...)
			b[tt.flip] ^= 0x40
			path := filepath.Join(t.TempDir(), "events.out.tfevents.bad")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var r tfevents.Reader
			// The error sticks: the file is not read past the bad record. The first read
			// returns the points before it, the second nothing new.
			for i, wantPts := range []map[string][]session.Point{byTag(want[:bad-1]), {}} {
				got, err := r.ReadFile(path)
				var ce *tfevents.CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("error = %v, want a *CorruptError", err)
				}
				if ce.Path != path || ce.Offset != int64(starts[bad]) || !strings.Contains(ce.Reason, tt.reason) {
					t.Errorf("error = %v; want path %s, offset %d, reason %q", err, path, starts[bad], tt.reason)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("message %q does not name the file", err)
				}
				if r.Offset(path) != int64(starts[bad]) {
					t.Errorf("offset = %d, want the bad record's %d", r.Offset(path), starts[bad])
				}
				if diff := cmp.Diff(wantPts, got); diff != "" {
					t.Errorf("read %d: points (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestReadDir(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel string, tag string, steps ...int64) {
		t.Helper()
		p := filepath.Join(root, rel)
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		w, err := tfevents.Create(p)
		must(err)
		for _, s := range steps {
			must(w.Scalar(tag, s, float64(s), time.Unix(s, 0)))
		}
		must(w.Close())
	}
	// Host names with dots; nested dirs; a resumed run's second file in the same dir.
	write("run/events.out.tfevents.100.host.lan.1.0", "Train/mean_reward", 0, 1)
	write("run/events.out.tfevents.200.host.lan.2.0", "Train/mean_reward", 2, 3)
	write("run/eval/deep/events.out.tfevents.150.gpu.node.3.0", "Eval/reward", 10)
	must(os.WriteFile(filepath.Join(root, "run", "model_100.pt"), []byte("not events"), 0o644))
	must(os.WriteFile(filepath.Join(root, "run", "train.log"), []byte("x"), 0o644))

	files, err := tfevents.EventFiles(root)
	must(err)
	wantFiles := []string{
		filepath.Join(root, "run/eval/deep/events.out.tfevents.150.gpu.node.3.0"),
		filepath.Join(root, "run/events.out.tfevents.100.host.lan.1.0"),
		filepath.Join(root, "run/events.out.tfevents.200.host.lan.2.0"),
	}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("EventFiles (-want +got):\n%s", diff)
	}

	var r tfevents.Reader
	got, err := r.ReadDir(root)
	must(err)
	want := map[string][]session.Point{
		"Train/mean_reward": {{Step: 0, Value: 0}, {Step: 1, Value: 1}, {Step: 2, Value: 2}, {Step: 3, Value: 3}},
		"Eval/reward":       {{Step: 10, Value: 10}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadDir (-want +got):\n%s", diff)
	}
	// Only new points on the next call, including from a file that appeared since.
	write("run/events.out.tfevents.300.host.lan.4.0", "Train/mean_reward", 4)
	got, err = r.ReadDir(root)
	must(err)
	if diff := cmp.Diff(map[string][]session.Point{"Train/mean_reward": {{Step: 4, Value: 4}}}, got); diff != "" {
		t.Errorf("second ReadDir (-want +got):\n%s", diff)
	}

	if _, err := r.ReadDir(filepath.Join(root, "missing")); err == nil {
		t.Error("ReadDir of a missing dir: no error")
	}
}

// frame wraps data as a TFRecord, written independently of the package's writer.
func frame(data []byte) []byte {
	tab := crc32.MakeTable(crc32.Castagnoli)
	mask := func(b []byte) uint32 {
		c := crc32.Checksum(b, tab)
		return (c>>15 | c<<17) + 0xa282ead8
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(data)))
	out = binary.LittleEndian.AppendUint32(out, mask(out[:8]))
	out = append(out, data...)
	return binary.LittleEndian.AppendUint32(out, mask(data))
}

// tensorEvent builds an Event at step 5 whose only value is the given TensorProto.
func tensorEvent(tag string, tensor []byte) []byte {
	var v, s, e []byte
	v = protowire.AppendTag(v, 1, protowire.BytesType)
	v = protowire.AppendString(v, tag)
	v = protowire.AppendTag(v, 8, protowire.BytesType)
	v = protowire.AppendBytes(v, tensor)
	s = protowire.AppendTag(s, 1, protowire.BytesType)
	s = protowire.AppendBytes(s, v)
	e = protowire.AppendTag(e, 2, protowire.VarintType)
	e = protowire.AppendVarint(e, 5)
	e = protowire.AppendTag(e, 5, protowire.BytesType)
	return protowire.AppendBytes(e, s)
}

func tensor(dtype uint64, dims []uint64, field protowire.Number, payload []byte) []byte {
	var shape, t []byte
	for _, d := range dims {
		var dim []byte
		dim = protowire.AppendTag(dim, 1, protowire.VarintType)
		dim = protowire.AppendVarint(dim, d)
		shape = protowire.AppendTag(shape, 2, protowire.BytesType)
		shape = protowire.AppendBytes(shape, dim)
	}
	t = protowire.AppendTag(t, 1, protowire.VarintType)
	t = protowire.AppendVarint(t, dtype)
	t = protowire.AppendTag(t, 2, protowire.BytesType)
	t = protowire.AppendBytes(t, shape)
	t = protowire.AppendTag(t, field, protowire.BytesType)
	return protowire.AppendBytes(t, payload)
}

// TestTensorKinds feeds hand-built tensors: half precision is read, non-scalars are skipped.
func TestTensorKinds(t *testing.T) {
	le32 := func(f float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(f)) }
	const dtFloat, dtDouble, dtHalf, dtString = 1, 2, 19, 7
	tests := []struct {
		name string
		rec  []byte
		want []session.Point // nil: not a scalar
	}{
		{"half content", tensorEvent("h", tensor(dtHalf, nil, 4, []byte{0x00, 0x3e})), []session.Point{{Step: 5, Value: 1.5}}},
		{"half_val", tensorEvent("h", tensor(dtHalf, nil, 13, protowire.AppendVarint(nil, 0xc000))), []session.Point{{Step: 5, Value: -2}}},
		{"shape [1]", tensorEvent("h", tensor(dtFloat, []uint64{1}, 4, le32(3))), []session.Point{{Step: 5, Value: 3}}},
		{"vector", tensorEvent("h", tensor(dtFloat, []uint64{2}, 4, append(le32(1), le32(2)...))), nil},
		{"histogram-shaped", tensorEvent("h", tensor(dtDouble, []uint64{0, 3}, 4, nil)), nil},
		{"string", tensorEvent("h", tensor(dtString, nil, 8, []byte("text"))), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.out.tfevents.t")
			if err := os.WriteFile(path, frame(tt.rec), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := tfevents.ReadAll(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got["h"]); diff != "" {
				t.Errorf("points (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMalformedEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.out.tfevents.m")
	// A record whose CRCs are right but whose bytes are not a protocol buffer.
	if err := os.WriteFile(path, frame([]byte{0x2a, 0xff}), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := tfevents.ReadAll(path)
	var ce *tfevents.CorruptError
	if !errors.As(err, &ce) || ce.Offset != 0 {
		t.Errorf("error = %v, want a *CorruptError at offset 0", err)
	}
}

// TestLongSeries reads series long enough to grow several times, twice, and checks that
// the first result is untouched by the second read (no memory is shared), and that a tag
// that stops early is not handed back with room for the points the others have.
func TestLongSeries(t *testing.T) {
	const n = 2048*3 + 7
	write := func(path string, offset float64) {
		t.Helper()
		w, err := tfevents.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		for step := int64(0); step < n; step++ {
			for _, tag := range []string{"a", "b", "early"} {
				if tag == "early" && step >= 100 {
					continue
				}
				if err := w.Scalar(tag, step, float64(step)+offset, time.Unix(step, 0)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(got map[string][]session.Point, offset float64) {
		t.Helper()
		for tag, want := range map[string]int{"a": n, "b": n, "early": 100} {
			pts := got[tag]
			if len(pts) != want {
				t.Fatalf("%s: %d points, want %d", tag, len(pts), want)
			}
			if c := cap(pts); c > want+want/8+64 {
				t.Errorf("%s: %d points held in room for %d", tag, want, c)
			}
			for i, p := range pts {
				if p.Step != int64(i) || p.Value != float64(i)+offset {
					t.Fatalf("%s point %d = %+v", tag, i, p)
				}
			}
		}
	}
	dir := t.TempDir()
	write(filepath.Join(dir, "events.out.tfevents.1"), 0)
	write(filepath.Join(dir, "events.out.tfevents.2"), 0.5)
	first, err := tfevents.ReadAll(filepath.Join(dir, "events.out.tfevents.1"))
	if err != nil {
		t.Fatal(err)
	}
	check(first, 0)
	second, err := tfevents.ReadAll(filepath.Join(dir, "events.out.tfevents.2"))
	if err != nil {
		t.Fatal(err)
	}
	check(second, 0.5)
	check(first, 0)
}

// TestRecordLargerThanBuffer reads a record bigger than the reader's buffers, whole and cut
// inside it.
func TestRecordLargerThanBuffer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.out.tfevents.huge")
	w, err := tfevents.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", 3<<20)
	for i, tag := range []string{"before", huge, "after"} {
		if err := w.Scalar(tag, int64(i), float64(i), time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The huge tag is refused as a curve's name (session.MaxTagBytes), but its record is
	// still framed and checked across the buffers, and the record after it read.
	want := map[string][]session.Point{
		"before": {{Step: 0, Value: 0}},
		"after":  {{Step: 2, Value: 2}},
	}
	for _, cut := range []int{len(full), len(full) / 2, len(full) - 40} {
		cutPath := filepath.Join(t.TempDir(), "events.out.tfevents.cut")
		if err := os.WriteFile(cutPath, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		var r tfevents.Reader
		got, err := r.ReadFile(cutPath)
		if err != nil {
			t.Fatal(err)
		}
		appendBytes(t, cutPath, full[cut:])
		rest, err := r.ReadFile(cutPath)
		if err != nil {
			t.Fatal(err)
		}
		for tag, p := range rest {
			got[tag] = append(got[tag], p...)
		}
		if !cmp.Equal(want, got) || r.Cut().Refused.Tags != 1 {
			t.Errorf("cut at %d of %d: got %d tags (%d refused), want the 2 points once each and the huge tag refused", cut, len(full), len(got), r.Cut().Refused.Tags)
		}
	}
}

// TestOverLongRecordIsSkipped: a record whose length passes its CRC but exceeds MaxRecord
// is neither read into memory nor taken as corruption: while the file does not hold all of
// it the read stops before it (it may still be being written); once it does, it is skipped
// with a warning and the records after it are read.
func TestOverLongRecordIsSkipped(t *testing.T) {
	dir := t.TempDir()
	scalarFile := func(name, tag string, step int64) []byte {
		p := filepath.Join(dir, name)
		w, err := tfevents.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Scalar(tag, step, float64(step), time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before, after := scalarFile("a", "before", 1), scalarFile("b", "after", 2)
	const length = tfevents.MaxRecord + 1
	header := binary.LittleEndian.AppendUint64(nil, length) // and its masked CRC: a valid length
	c := crc32.Checksum(header, crc32.MakeTable(crc32.Castagnoli))
	header = binary.LittleEndian.AppendUint32(header, (c>>15|c<<17)+0xa282ead8)

	path := filepath.Join(dir, "events.out.tfevents.long")
	if err := os.WriteFile(path, append(append([]byte(nil), before...), header...), 0o644); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	r := tfevents.Reader{Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	read := func(what string) map[string][]session.Point {
		t.Helper()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		got, err := r.ReadFile(path)
		runtime.ReadMemStats(&ms1)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > tfevents.MaxRecord/4 {
			t.Errorf("%s allocated %d bytes: the long record must not be read", what, alloc)
		}
		return got
	}

	got := read("read with the long record's header only")
	if diff := cmp.Diff(map[string][]session.Point{"before": {{Step: 1, Value: 1}}}, got); diff != "" {
		t.Errorf("first read (-want +got):\n%s", diff)
	}
	if r.Offset(path) != int64(len(before)) {
		t.Errorf("offset %d, want %d (the long record's start)", r.Offset(path), len(before))
	}

	// The rest of the long record (sparse: no 64 MiB written), then a good record.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	end := int64(len(before)) + 12 + length + 4
	if err := f.Truncate(end); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(after, end); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got = read("read past the long record")
	if diff := cmp.Diff(map[string][]session.Point{"after": {{Step: 2, Value: 2}}}, got); diff != "" {
		t.Errorf("second read (-want +got):\n%s", diff)
	}
	if want := end + int64(len(after)); r.Offset(path) != want {
		t.Errorf("offset %d, want %d (the end of the file)", r.Offset(path), want)
	}
	if !strings.Contains(logged.String(), "skipping an event record longer than the cap") || !strings.Contains(logged.String(), fmt.Sprint(len(before))) {
		t.Errorf("warning logged: %q", logged.String())
	}
}

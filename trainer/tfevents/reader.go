package tfevents

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"tunebot/session"
)

const (
	headerSize = 12 // uint64 length + masked CRC of the length
	footerSize = 4  // masked CRC of the data
	chunkSize  = 1 << 20
	minChunk   = 64 << 10
)

// CorruptError reports a complete record that fails its CRC or does not decode. TFRecord
// has no sync markers, so nothing after a bad record can be trusted: the file is not read
// past it, and every later read of the file reports the same error again.
type CorruptError struct {
	Path   string
	Offset int64 // byte offset of the bad record's header
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt event file %s at byte %d: %s", e.Path, e.Offset, e.Reason)
}

// Scalar is one scalar sample with its tag and wall time, as ScanFile hands it out.
type Scalar struct {
	Tag   string
	Step  int64
	Wall  time.Time
	Value float64
}

// Reader reads scalars from event files incrementally: it remembers, per file, the byte
// offset after the last complete record it decoded, so each call returns only new points.
// A torn or still-growing last record is left for the next call. The zero value is ready to
// use; a Reader is safe for concurrent use (calls are serialised).
type Reader struct {
	mu      sync.Mutex
	offsets map[string]int64
	buf     []byte
	tags    map[string]string // interned tags for ScanFile
}

// Offset returns the byte offset up to which path has been read.
func (r *Reader) Offset(path string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.offsets[path]
}

// ReadFile returns the scalar points of path that are new since the last call for path,
// per tag in file order (repeated steps are kept). On a *CorruptError it also returns the
// points decoded before the bad record.
func (r *Reader) ReadFile(path string) (map[string][]session.Point, error) {
	out := map[string][]session.Point{}
	err := r.scan(path, func(tag []byte, step int64, _ float64, value float64) {
		// out[string(tag)] does not allocate; only a tag's first point copies the key.
		pts, ok := out[string(tag)]
		if !ok {
			out[string(tag)] = append(make([]session.Point, 0, 64), session.Point{Step: step, Value: value})
			return
		}
		out[string(tag)] = append(pts, session.Point{Step: step, Value: value})
	})
	return out, err
}

// ScanFile calls fn for each scalar of path that is new since the last read of path, in
// file order, with its wall time. It shares offsets with ReadFile.
func (r *Reader) ScanFile(path string, fn func(Scalar)) error {
	return r.scan(path, func(tag []byte, step int64, wall float64, value float64) {
		t, ok := r.tags[string(tag)]
		if !ok {
			t = string(tag)
			r.tags[t] = t
		}
		sec, frac := math.Modf(wall)
		fn(Scalar{Tag: t, Step: step, Wall: time.Unix(int64(sec), int64(frac*1e9)), Value: value})
	})
}

// ReadDir reads every event file below dir (see EventFiles) in lexical path order and
// returns the new points of all of them, merged per tag in that order. A file that fails
// does not stop the others: its error is joined into the returned error.
func (r *Reader) ReadDir(dir string) (map[string][]session.Point, error) {
	files, err := EventFiles(dir)
	if err != nil {
		return nil, err
	}
	return r.readFiles(files)
}

func (r *Reader) readFiles(files []string) (map[string][]session.Point, error) {
	out := map[string][]session.Point{}
	var errs []error
	for _, f := range files {
		pts, err := r.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
		}
		for tag, p := range pts {
			out[tag] = append(out[tag], p...)
		}
	}
	return out, errors.Join(errs...)
}

// ReadAll reads the given event files and directories (expanded by EventFiles) once, from
// the start, and returns all their points merged per tag.
func ReadAll(paths ...string) (map[string][]session.Point, error) {
	files, err := EventFiles(paths...)
	if err != nil {
		return nil, err
	}
	var r Reader
	return r.readFiles(files)
}

// EventFiles expands paths into event files: a file is taken as it is; a directory is
// walked recursively for files whose base name contains "tfevents" (the name is never split
// on ".", since host names in it contain dots). Each directory's files come in lexical
// order. A path that does not exist is an error.
func EventFiles(paths ...string) ([]string, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("finding event files: %w", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.Contains(d.Name(), "tfevents") {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
					return nil
				}
			} else if !d.Type().IsRegular() {
				return nil
			}
			files = append(files, path)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("finding event files: %w", err)
		}
	}
	return files, nil
}

// emitFunc receives one decoded scalar; tag is only valid during the call.
type emitFunc func(tag []byte, step int64, wall float64, value float64)

// scan decodes the complete records of path from its remembered offset on, calling emit
// for each scalar, and advances the offset past the last complete record.
func (r *Reader) scan(path string, emit emitFunc) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.offsets == nil {
		r.offsets = map[string]int64{}
		r.tags = map[string]string{}
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading events: %w", err)
	}
	defer f.Close()
	start := r.offsets[path]
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading events: %w", err)
	}
	if st.Size() < start {
		return fmt.Errorf("reading events: %s shrank to %d bytes after %d were read", path, st.Size(), start)
	}
	// Size the buffer to the work: a Reader polling many small files stays small.
	if want := min(max(st.Size()-start, minChunk), chunkSize); int64(len(r.buf)) < want {
		r.buf = make([]byte, want)
	}
	pos, err := r.scanFrom(f, path, start, emit)
	r.offsets[path] = pos
	return err
}

// scanFrom reads f from pos in big chunks, carrying a partial record over to the next chunk.
// It returns the offset after the last complete, good record.
func (r *Reader) scanFrom(f *os.File, path string, pos int64, emit emitFunc) (int64, error) {
	n := 0 // bytes of r.buf holding file data from pos on
	for {
		m, rerr := f.ReadAt(r.buf[n:], pos+int64(n))
		n += m
		if rerr != nil && rerr != io.EOF {
			return pos, fmt.Errorf("reading events: %w", rerr)
		}
		used, need, err := scanRecords(r.buf[:n], emit)
		if err != nil {
			return pos + int64(used), &CorruptError{Path: path, Offset: pos + int64(used), Reason: err.Error()}
		}
		copy(r.buf, r.buf[used:n])
		n -= used
		pos += int64(used)
		if rerr == io.EOF || m == 0 {
			return pos, nil
		}
		if need > len(r.buf) {
			// One record larger than the buffer: grow to hold it whole.
			nb := make([]byte, need+chunkSize)
			copy(nb, r.buf[:n])
			r.buf = nb
		}
	}
}

// scanRecords decodes the complete records at the start of b. It returns the bytes used,
// and, when it stops at an incomplete record, the total size that record needs.
func scanRecords(b []byte, emit emitFunc) (used, need int, err error) {
	for {
		rest := b[used:]
		if len(rest) < headerSize {
			return used, headerSize, nil
		}
		length := binary.LittleEndian.Uint64(rest)
		if maskedCRC(rest[:8]) != binary.LittleEndian.Uint32(rest[8:12]) {
			return used, 0, errors.New("record length fails its CRC")
		}
		if length > math.MaxInt32 {
			return used, 0, fmt.Errorf("record length %d is implausible", length)
		}
		total := headerSize + int(length) + footerSize
		if len(rest) < total {
			return used, total, nil
		}
		data := rest[headerSize : headerSize+int(length)]
		if maskedCRC(data) != binary.LittleEndian.Uint32(rest[headerSize+int(length):]) {
			return used, 0, errors.New("record data fails its CRC")
		}
		if err := decodeEvent(data, emit); err != nil {
			return used, 0, err
		}
		used += total
	}
}

var errMalformed = errors.New("malformed event")

// decodeEvent decodes one Event and emits each scalar of its summary.
func decodeEvent(b []byte, emit emitFunc) error {
	ev := b
	var (
		step    int64
		wall    float64
		summary []byte
		nsum    int
	)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		switch {
		case num == eventWallTime && typ == protowire.Fixed64Type:
			v, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return errMalformed
			}
			wall = math.Float64frombits(v)
			b = b[n:]
		case num == eventStep && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return errMalformed
			}
			step = int64(v)
			b = b[n:]
		case num == eventSummary && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errMalformed
			}
			summary = v
			nsum++
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return errMalformed
			}
			b = b[n:]
		}
	}
	if nsum == 0 {
		return nil
	}
	if nsum > 1 {
		// Repeated embedded messages merge; rare enough to take the slow path.
		return decodeSummaries(ev, step, wall, emit)
	}
	return decodeSummary(summary, step, wall, emit)
}

// decodeSummaries handles an Event with its summary field split over several occurrences.
func decodeSummaries(ev []byte, step int64, wall float64, emit emitFunc) error {
	for len(ev) > 0 {
		num, typ, n := protowire.ConsumeTag(ev)
		ev = ev[n:] // decodeEvent already walked ev, so every field is well formed
		if num == eventSummary && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(ev)
			ev = ev[n:]
			if err := decodeSummary(v, step, wall, emit); err != nil {
				return err
			}
			continue
		}
		ev = ev[protowire.ConsumeFieldValue(num, typ, ev):]
	}
	return nil
}

// decodeSummary emits the scalars among a Summary's values.
func decodeSummary(b []byte, step int64, wall float64, emit emitFunc) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		if num != summaryValue || typ != protowire.BytesType {
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return errMalformed
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		tag, value, ok, err := decodeValue(v)
		if err != nil {
			return err
		}
		if ok {
			emit(tag, step, wall, value)
		}
	}
	return nil
}

// decodeValue returns the tag and value of a Summary.Value that holds a scalar.
func decodeValue(b []byte) (tag []byte, value float64, ok bool, err error) {
	var tensor []byte
	hasSimple, hasTensor := false, false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, 0, false, errMalformed
		}
		b = b[n:]
		switch {
		case num == valueTag && typ == protowire.BytesType:
			tag, n = protowire.ConsumeBytes(b)
		case num == valueSimpleValue && typ == protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			value, hasSimple, hasTensor = float64(math.Float32frombits(v)), true, false
		case num == valueTensor && typ == protowire.BytesType:
			tensor, n = protowire.ConsumeBytes(b)
			hasTensor, hasSimple = true, false
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return nil, 0, false, errMalformed
		}
		b = b[n:]
	}
	if hasSimple {
		return tag, value, true, nil
	}
	if hasTensor {
		value, ok, err = decodeTensorScalar(tensor)
		return tag, value, ok, err
	}
	return nil, 0, false, nil
}

// decodeTensorScalar returns the value of a one-element DT_FLOAT, DT_DOUBLE or DT_HALF
// tensor; any other tensor (strings, histograms, images) is not a scalar.
func decodeTensorScalar(b []byte) (float64, bool, error) {
	var (
		dtype                        uint64
		elems                        int64 = 1
		content, floats, doubles, hv []byte
		halfVarints                  []uint64
	)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, false, errMalformed
		}
		b = b[n:]
		switch {
		case num == tensorDtype && typ == protowire.VarintType:
			dtype, n = protowire.ConsumeVarint(b)
		case num == tensorShape && typ == protowire.BytesType:
			var shape []byte
			shape, n = protowire.ConsumeBytes(b)
			if n >= 0 {
				e, err := shapeElements(shape)
				if err != nil {
					return 0, false, err
				}
				elems = e
			}
		case num == tensorContent && typ == protowire.BytesType:
			content, n = protowire.ConsumeBytes(b)
		case num == tensorFloatVal && typ == protowire.BytesType:
			floats, n = protowire.ConsumeBytes(b)
		case num == tensorFloatVal && typ == protowire.Fixed32Type:
			floats, n = b[:min(4, len(b))], 4
			if len(b) < 4 {
				n = -1
			}
		case num == tensorDoubleVal && typ == protowire.BytesType:
			doubles, n = protowire.ConsumeBytes(b)
		case num == tensorDoubleVal && typ == protowire.Fixed64Type:
			doubles, n = b[:min(8, len(b))], 8
			if len(b) < 8 {
				n = -1
			}
		case num == tensorHalfVal && typ == protowire.BytesType:
			hv, n = protowire.ConsumeBytes(b)
		case num == tensorHalfVal && typ == protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			halfVarints = append(halfVarints, v)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return 0, false, errMalformed
		}
		b = b[n:]
	}
	if elems != 1 {
		return 0, false, nil
	}
	switch dtype {
	case dtFloat:
		if len(content) == 4 {
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(content))), true, nil
		}
		if len(floats) == 4 {
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(floats))), true, nil
		}
	case dtDouble:
		if len(content) == 8 {
			return math.Float64frombits(binary.LittleEndian.Uint64(content)), true, nil
		}
		if len(doubles) == 8 {
			return math.Float64frombits(binary.LittleEndian.Uint64(doubles)), true, nil
		}
	case dtHalf:
		if len(content) == 2 {
			return halfToFloat(binary.LittleEndian.Uint16(content)), true, nil
		}
		if len(hv) > 0 {
			v, n := protowire.ConsumeVarint(hv)
			if n == len(hv) {
				return halfToFloat(uint16(v)), true, nil
			}
		}
		if len(halfVarints) == 1 {
			return halfToFloat(uint16(halfVarints[0])), true, nil
		}
	}
	return 0, false, nil
}

// shapeElements returns the element count of a TensorShapeProto (dim=2 {size=1}); rank 0
// has one element.
func shapeElements(b []byte) (int64, error) {
	elems := int64(1)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, errMalformed
		}
		b = b[n:]
		if num == 2 && typ == protowire.BytesType {
			dim, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return 0, errMalformed
			}
			b = b[n:]
			size := int64(0) // a Dim without size has size 0
			for len(dim) > 0 {
				dn, dt, k := protowire.ConsumeTag(dim)
				if k < 0 {
					return 0, errMalformed
				}
				dim = dim[k:]
				if dn == 1 && dt == protowire.VarintType {
					v, k := protowire.ConsumeVarint(dim)
					if k < 0 {
						return 0, errMalformed
					}
					size = int64(v)
					dim = dim[k:]
					continue
				}
				k = protowire.ConsumeFieldValue(dn, dt, dim)
				if k < 0 {
					return 0, errMalformed
				}
				dim = dim[k:]
			}
			elems *= size
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return 0, errMalformed
		}
		b = b[n:]
	}
	return elems, nil
}

// halfToFloat converts IEEE 754 binary16 bits to a float64.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

// Package tfevents reads and writes TensorBoard event files: TFRecord framing around
// tensorflow.Event protocol buffers, encoded and decoded by hand with protowire so the
// package needs no generated code.
//
// Field numbers used here, as in tensorflow/core/util/event.proto,
// tensorflow/core/framework/summary.proto, tensor.proto and types.proto:
//
//	Event          wall_time=1 double, step=2 int64, file_version=3 string, summary=5
//	Summary        value=1 repeated Summary.Value
//	Summary.Value  tag=1, simple_value=2 float, tensor=8 TensorProto, metadata=9
//	SummaryMetadata plugin_data=1 {plugin_name=1}, data_class=4 (DATA_CLASS_SCALAR=1)
//	TensorProto    dtype=1, tensor_shape=2, tensor_content=4, float_val=5, double_val=6, half_val=13
//	DataType       DT_FLOAT=1, DT_DOUBLE=2, DT_HALF=19
package tfevents

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Protocol buffer field numbers and enum values (see the package comment for their source).
const (
	eventWallTime    protowire.Number = 1
	eventStep        protowire.Number = 2
	eventFileVersion protowire.Number = 3
	eventSummary     protowire.Number = 5

	summaryValue protowire.Number = 1

	valueTag         protowire.Number = 1
	valueSimpleValue protowire.Number = 2
	valueTensor      protowire.Number = 8
	valueMetadata    protowire.Number = 9

	metadataPluginData protowire.Number = 1
	metadataDataClass  protowire.Number = 4
	pluginDataName     protowire.Number = 1
	dataClassScalar                     = 1

	tensorDtype     protowire.Number = 1
	tensorShape     protowire.Number = 2
	tensorContent   protowire.Number = 4
	tensorFloatVal  protowire.Number = 5
	tensorDoubleVal protowire.Number = 6
	tensorHalfVal   protowire.Number = 13

	dtFloat  = 1
	dtDouble = 2
	dtHalf   = 19
)

// FileVersion is the file_version string of the first event of every event file.
const FileVersion = "brain.Event:2"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's masked CRC32C: masking keeps a CRC of data that itself holds CRCs
// from being a fixed point.
func maskedCRC(b []byte) uint32 {
	return mask(crc32.Checksum(b, castagnoli))
}

func mask(c uint32) uint32 { return (c>>15 | c<<17) + 0xa282ead8 }

// slicing8 holds the tables of the slicing-by-8 CRC32C method, for crc8.
var slicing8 = func() (t [8][256]uint32) {
	t[0] = *castagnoli
	for i := range 256 {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][c&0xff] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}()

// crc8 is the CRC32C of exactly 8 bytes (a record's length), computed inline: every record
// has one, and for 8 bytes the table method beats a call into hash/crc32.
func crc8(b []byte) uint32 {
	t := &slicing8
	lo := ^binary.LittleEndian.Uint32(b)
	hi := binary.LittleEndian.Uint32(b[4:8])
	return ^(t[7][lo&0xff] ^ t[6][lo>>8&0xff] ^ t[5][lo>>16&0xff] ^ t[4][lo>>24] ^
		t[3][hi&0xff] ^ t[2][hi>>8&0xff] ^ t[1][hi>>16&0xff] ^ t[0][hi>>24])
}

// FileName returns a conventional event file base name,
// "events.out.tfevents.<unix seconds>.<host>.<pid>.<n>", as TensorBoard writers name them.
func FileName(wall time.Time, host string, pid, n int) string {
	return fmt.Sprintf("events.out.tfevents.%d.%s.%d.%d", wall.Unix(), host, pid, n)
}

// TensorEncoding says how TensorScalarAs stores a scalar inside a TensorProto; TF2 writers
// and other tools differ, and a reader must accept each.
type TensorEncoding int

const (
	// FloatContent is DT_FLOAT in tensor_content (what TF2's summary writer emits).
	FloatContent TensorEncoding = iota
	// DoubleContent is DT_DOUBLE in tensor_content.
	DoubleContent
	// FloatVal is DT_FLOAT in the packed float_val field.
	FloatVal
	// DoubleVal is DT_DOUBLE in the packed double_val field.
	DoubleVal
)

// Writer appends scalar events to one event file. It is safe for concurrent use.
// Records are buffered: call Flush to make them visible to readers of the file.
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	bw     *bufio.Writer
	event  []byte // scratch for the encoded Event
	inner  []byte // scratch for nested messages
	tagged map[string]bool
}

// Create creates (or truncates) the event file at path and writes its file_version event.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating event file: %w", err)
	}
	w := &Writer{f: f, bw: bufio.NewWriterSize(f, 64<<10), tagged: map[string]bool{}}
	ev := protowire.AppendTag(nil, eventWallTime, protowire.Fixed64Type)
	ev = protowire.AppendFixed64(ev, math.Float64bits(wallSeconds(time.Now())))
	ev = protowire.AppendTag(ev, eventFileVersion, protowire.BytesType)
	ev = protowire.AppendString(ev, FileVersion)
	if err := w.writeRecord(ev); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func wallSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// Scalar appends a PyTorch-style scalar: Summary.Value.simple_value, a float32.
func (w *Writer) Scalar(tag string, step int64, value float64, wall time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.inner[:0]
	v = protowire.AppendTag(v, valueTag, protowire.BytesType)
	v = protowire.AppendString(v, tag)
	v = protowire.AppendTag(v, valueSimpleValue, protowire.Fixed32Type)
	v = protowire.AppendFixed32(v, math.Float32bits(float32(value)))
	w.inner = v
	return w.writeSummary(step, wall, v)
}

// TensorScalar appends a TF2-style scalar: a rank-0 DT_FLOAT tensor in tensor_content, with
// the scalars plugin metadata on the first value of each tag, as TF2 writes it.
func (w *Writer) TensorScalar(tag string, step int64, value float64, wall time.Time) error {
	return w.TensorScalarAs(tag, step, value, wall, FloatContent)
}

// TensorScalarAs is TensorScalar with a chosen encoding of the tensor.
func (w *Writer) TensorScalarAs(tag string, step int64, value float64, wall time.Time, enc TensorEncoding) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var t []byte
	var dtype uint64 = dtFloat
	if enc == DoubleContent || enc == DoubleVal {
		dtype = dtDouble
	}
	t = protowire.AppendTag(t, tensorDtype, protowire.VarintType)
	t = protowire.AppendVarint(t, dtype)
	t = protowire.AppendTag(t, tensorShape, protowire.BytesType) // rank 0: an empty shape
	t = protowire.AppendVarint(t, 0)
	switch enc {
	case FloatContent:
		t = protowire.AppendTag(t, tensorContent, protowire.BytesType)
		t = protowire.AppendBytes(t, binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(value))))
	case DoubleContent:
		t = protowire.AppendTag(t, tensorContent, protowire.BytesType)
		t = protowire.AppendBytes(t, binary.LittleEndian.AppendUint64(nil, math.Float64bits(value)))
	case FloatVal:
		t = protowire.AppendTag(t, tensorFloatVal, protowire.BytesType)
		t = protowire.AppendBytes(t, binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(value))))
	case DoubleVal:
		t = protowire.AppendTag(t, tensorDoubleVal, protowire.BytesType)
		t = protowire.AppendBytes(t, binary.LittleEndian.AppendUint64(nil, math.Float64bits(value)))
	default:
		return fmt.Errorf("writing tensor scalar: unknown encoding %d", enc)
	}
	v := w.inner[:0]
	v = protowire.AppendTag(v, valueTag, protowire.BytesType)
	v = protowire.AppendString(v, tag)
	if !w.tagged[tag] {
		w.tagged[tag] = true
		var pd, md []byte
		pd = protowire.AppendTag(pd, pluginDataName, protowire.BytesType)
		pd = protowire.AppendString(pd, "scalars")
		md = protowire.AppendTag(md, metadataPluginData, protowire.BytesType)
		md = protowire.AppendBytes(md, pd)
		md = protowire.AppendTag(md, metadataDataClass, protowire.VarintType)
		md = protowire.AppendVarint(md, dataClassScalar)
		v = protowire.AppendTag(v, valueMetadata, protowire.BytesType)
		v = protowire.AppendBytes(v, md)
	}
	v = protowire.AppendTag(v, valueTensor, protowire.BytesType)
	v = protowire.AppendBytes(v, t)
	w.inner = v
	return w.writeSummary(step, wall, v)
}

// writeSummary wraps one encoded Summary.Value in a Summary and an Event and writes it.
// The caller holds w.mu.
func (w *Writer) writeSummary(step int64, wall time.Time, value []byte) error {
	ev := w.event[:0]
	ev = protowire.AppendTag(ev, eventWallTime, protowire.Fixed64Type)
	ev = protowire.AppendFixed64(ev, math.Float64bits(wallSeconds(wall)))
	ev = protowire.AppendTag(ev, eventStep, protowire.VarintType)
	ev = protowire.AppendVarint(ev, uint64(step))
	summaryLen := protowire.SizeTag(summaryValue) + protowire.SizeBytes(len(value))
	ev = protowire.AppendTag(ev, eventSummary, protowire.BytesType)
	ev = protowire.AppendVarint(ev, uint64(summaryLen))
	ev = protowire.AppendTag(ev, summaryValue, protowire.BytesType)
	ev = protowire.AppendBytes(ev, value)
	w.event = ev
	return w.writeRecord(ev)
}

// writeRecord frames data as one TFRecord: length, masked CRC of length, data, masked CRC
// of data.
func (w *Writer) writeRecord(data []byte) error {
	if w.f == nil {
		return fmt.Errorf("writing event: writer is closed")
	}
	var hdr [12]byte
	binary.LittleEndian.PutUint64(hdr[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(hdr[8:], maskedCRC(hdr[:8]))
	var foot [4]byte
	binary.LittleEndian.PutUint32(foot[:], maskedCRC(data))
	if _, err := w.bw.Write(hdr[:]); err != nil {
		return fmt.Errorf("writing event: %w", err)
	}
	if _, err := w.bw.Write(data); err != nil {
		return fmt.Errorf("writing event: %w", err)
	}
	if _, err := w.bw.Write(foot[:]); err != nil {
		return fmt.Errorf("writing event: %w", err)
	}
	return nil
}

// Flush writes buffered records to the file so readers see them.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return fmt.Errorf("flushing events: writer is closed")
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("flushing events: %w", err)
	}
	return nil
}

// Close flushes and closes the file. Closing twice is an error-free no-op.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	ferr := w.bw.Flush()
	cerr := w.f.Close()
	w.f = nil
	if ferr != nil {
		return fmt.Errorf("closing event file: %w", ferr)
	}
	if cerr != nil {
		return fmt.Errorf("closing event file: %w", cerr)
	}
	return nil
}

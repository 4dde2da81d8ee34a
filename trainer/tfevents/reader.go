package tfevents

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
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

	// MaxRecord caps the data of one record. A length field passes its own CRC whatever it
	// says, so without a cap one crafted or damaged record could make the reader allocate
	// up to 2 GiB; a real scalar event is well under a kilobyte, a histogram or image a few
	// megabytes. A longer record is skipped unread, with a warning.
	MaxRecord = 64 << 20
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
	// Logger receives the warning for each record longer than MaxRecord that is skipped;
	// nil: the skip is not logged.
	Logger *slog.Logger
	// Open opens an event file for one read (nil: os.Open). A daemon reading what a
	// trainer wrote passes trainer.OpenBounded's descriptor, so a link out of the run dir,
	// a FIFO or an oversized file is refused, never read.
	Open func(path string) (*os.File, error)
	// Limits bound the tags and bytes taken over all files; see Cut for what they left out.
	Limits Limits

	mu      sync.Mutex
	lim     limitState
	offsets map[string]int64
	bufs    [3][]byte         // read buffers, passed between the two stages of scanFrom
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
	byTag := map[string]*series{}
	var (
		prev  *series
		est   estimate
		total int64 // bytes this read covers, known once scan has looked at the file
	)
	err := r.scanSized(path, func(n int64) { total = n }, func(tag []byte, step int64, _ float64, value float64) {
		// Writers log the same tags in the same order every step, so each series
		// remembers which one followed it last time: a byte comparison then usually
		// replaces the map lookup (which, with a string(bytes) key, does not allocate).
		var s *series
		if prev != nil && prev.next != nil && prev.next.name == string(tag) {
			s = prev.next
		} else {
			s = byTag[string(tag)]
			if s == nil {
				if !r.admit(tag) {
					est.bytes += recordBytes(len(tag)) // else the estimate would see a longer file ahead
					return
				}
				s = &series{name: string(tag)}
				byTag[s.name] = s
			}
			if prev != nil {
				prev.next = s
			}
		}
		prev = s
		est.bytes += recordBytes(len(tag))
		if len(s.pts) == cap(s.pts) {
			s.grow(est.points(len(s.pts), total))
		}
		s.pts = append(s.pts, session.Point{Step: step, Value: value})
	})
	out := make(map[string][]session.Point, len(byTag))
	for tag, s := range byTag {
		if cap(s.pts) > len(s.pts)+len(s.pts)/8+64 {
			// A tag that stopped early (or a read cut short) was estimated too large.
			s.pts = append([]session.Point(nil), s.pts...)
		}
		out[tag] = s.pts
	}
	return out, err
}

// recordBytes is about how many bytes a PyTorch or rsl_rl scalar record with a tag of n
// bytes takes: framing 16, wall time 9, step about 3, summary and value headers 4, tag
// header 2, simple_value 5.
func recordBytes(n int) int64 { return int64(39 + n) }

// estimate predicts how many points a series will hold at the end of a read, from how
// many it holds after the bytes decoded so far, so that each series grows to about its
// final size at once instead of doubling and copying: reading is bound by such copies
// once CRCs and decoding are cheap.
type estimate struct {
	bytes int64 // about the bytes decoded so far (recordBytes of each scalar)
}

// points returns the capacity a series holding n points should grow to, given that the
// read covers total bytes; 0 when there is too little to go on.
func (e estimate) points(n int, total int64) int {
	if n < 64 || e.bytes <= 0 || total <= e.bytes {
		return 0
	}
	p := float64(n) * float64(total) / float64(e.bytes)
	return int(p*1.03) + 16 // a little slack: tags and steps vary in size
}

// series collects one tag's points.
type series struct {
	name string
	next *series // the series that followed this one last time
	pts  []session.Point
}

// grow makes room for at least one more point: to want when that is larger than double
// (the estimate of the final size), else by doubling.
func (s *series) grow(want int) {
	c := max(2*cap(s.pts), 16, want)
	grown := make([]session.Point, len(s.pts), c)
	copy(grown, s.pts)
	s.pts = grown
}

// ScanFile calls fn for each scalar of path that is new since the last read of path, in
// file order, with its wall time. It shares offsets with ReadFile.
func (r *Reader) ScanFile(path string, fn func(Scalar)) error {
	return r.scan(path, func(tag []byte, step int64, wall float64, value float64) {
		t, ok := r.tags[string(tag)]
		if !ok {
			if !r.admit(tag) {
				return
			}
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
			if prev, ok := out[tag]; ok {
				out[tag] = append(prev, p...)
			} else {
				out[tag] = p
			}
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
	return r.scanSized(path, nil, emit)
}

// scanSized is scan that first tells sized, when not nil, how many bytes it is about to
// read.
func (r *Reader) scanSized(path string, sized func(int64), emit emitFunc) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.offsets == nil {
		r.offsets = map[string]int64{}
		r.tags = map[string]string{}
	}
	open := r.Open
	if open == nil {
		open = os.Open
	}
	f, err := open(path)
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
	end := r.readEnd(start, st.Size())
	if sized != nil {
		sized(end - start)
	}
	// Size the buffers to the work: a Reader polling many small files stays small.
	want := int(min(max(end-start, minChunk), chunkSize))
	for i, b := range r.bufs {
		if len(b) < want {
			r.bufs[i] = make([]byte, want)
		}
	}
	pos, err := r.scanFrom(f, path, start, end, emit)
	r.readTo(path, start, pos, end, st.Size())
	r.offsets[path] = pos
	return err
}

// chunk is a buffer of file data whose first used bytes are complete records with good
// length CRCs; the data CRCs of those before checked are good too, the rest are for the
// consumer to check. err, if set, is why the producer stopped right after them.
type chunk struct {
	buf           []byte
	used, checked int
	skip          int64 // an over-long record right after the used bytes, skipped unread
	err           error
}

// The producer checks the data CRCs of a share of each chunk, the consumer the rest. The
// share starts where the stages balance on rsl_rl-like files and then follows the load:
// when the producer finds no free buffer the consumer is behind, so the producer takes on
// more, and otherwise less.
const (
	initialShare = 0.6
	shareStep    = 0.05
)

// scanFrom reads f from pos up to limit and decodes its complete records, returning the offset after
// the last good one. Two stages overlap on a big read: a producer goroutine reads chunks
// and checks their records' CRCs, while this goroutine decodes the chunks read before;
// the CRC work is shared so that neither stage waits long for the other. Reading, checking
// and decoding each cost about what a plain read of the bytes does, so in sequence they
// could not come near one. A record cut short at the end of the file is carried over to
// the next chunk and finally left for the next call.
func (r *Reader) scanFrom(f *os.File, path string, pos, limit int64, emit emitFunc) (int64, error) {
	free := make(chan []byte, len(r.bufs))
	for _, b := range r.bufs {
		free <- b
	}
	full := make(chan chunk, len(r.bufs)-1)
	stop := make(chan struct{})
	go produceChunks(f, path, pos, limit, free, full, stop)

	var err error
	for c := range full {
		if err == nil {
			used, derr := decodeRecords(c.buf[:c.used], c.checked, emit)
			pos += int64(used)
			switch {
			case derr != nil:
				err = &CorruptError{Path: path, Offset: pos, Reason: derr.Error()}
				close(stop)
			case c.err != nil:
				err = c.err
			case c.skip > 0:
				if r.Logger != nil {
					r.Logger.Warn("skipping an event record longer than the cap", "file", path, "offset", pos,
						"bytes", c.skip-headerSize-footerSize, "cap", MaxRecord)
				}
				pos += c.skip
			}
		}
		free <- c.buf // never blocks: free holds every buffer there is
	}
	// The producer has returned (it closed full); keep the buffers for the next call.
	for i := range r.bufs {
		select {
		case r.bufs[i] = <-free:
		default:
			r.bufs[i] = nil // one the producer dropped when stopped early; reallocated next time
		}
	}
	return pos, err
}

// readUpTo reads f into buf from off, never past limit (Limits.MaxBytes): reaching limit
// is io.EOF, as the end of the file would be.
func readUpTo(f *os.File, buf []byte, off, limit int64) (int, error) {
	if left := max(limit-off, 0); int64(len(buf)) > left {
		buf = buf[:left]
	}
	m, err := f.ReadAt(buf, off)
	if err == nil && off+int64(m) >= limit {
		err = io.EOF
	}
	return m, err
}

// produceChunks fills buffers from free with file data from pos on, checks the records in
// them and sends them on full, carrying an incomplete last record over to the next buffer.
// It closes full when it reaches the end of the file or limit (a record across limit is
// left unread), meets a bad record or a read error, or is stopped.
func produceChunks(f *os.File, path string, pos, limit int64, free <-chan []byte, full chan<- chunk, stop <-chan struct{}) {
	defer close(full)
	send := func(c chunk) bool {
		select {
		case full <- c:
			return true
		case <-stop:
			return false
		}
	}
	buf := <-free
	n := 0 // bytes of buf holding file data from pos on
	share := initialShare
	for {
		m, rerr := readUpTo(f, buf[n:], pos+int64(n), limit)
		n += m
		if rerr != nil && rerr != io.EOF {
			send(chunk{buf: buf, err: fmt.Errorf("reading events: %w", rerr)})
			return
		}
		used, checked, need, err := checkRecords(buf[:n], int(float64(n)*share))
		if err != nil {
			send(chunk{buf: buf, used: used, checked: checked, err: &CorruptError{Path: path, Offset: pos + int64(used), Reason: err.Error()}})
			return
		}
		if need > headerSize+MaxRecord+footerSize {
			end, ok := skipOverlong(f, chunk{buf: buf, used: used, checked: checked}, pos, need, limit, send)
			if !ok {
				return
			}
			pos, n = end, 0
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			continue
		}
		if rerr == io.EOF || m == 0 {
			send(chunk{buf: buf, used: used, checked: checked})
			return
		}
		next, ok := nextBuffer(free, stop, &share)
		if !ok {
			return
		}
		if need > len(next) {
			// One record larger than a buffer: this buffer grows to hold it whole.
			next = make([]byte, need+chunkSize)
		}
		copy(next, buf[used:n])
		if !send(chunk{buf: buf, used: used, checked: checked}) {
			return
		}
		n -= used
		pos += int64(used)
		buf = next
	}
}

// skipOverlong sends the chunk c whose record at c.used is over-long (need bytes) and skips
// that record once the file holds all of it (until then it may still be being written, like
// any torn tail, and the chunk ends the read). It returns where reading goes on, and false
// when the read ends here.
func skipOverlong(f *os.File, c chunk, pos int64, need int, limit int64, send func(chunk) bool) (int64, bool) {
	end := pos + int64(c.used) + int64(need)
	st, err := f.Stat()
	if err != nil {
		c.err = fmt.Errorf("reading events: %w", err)
		send(c)
		return 0, false
	}
	if st.Size() < end || end > limit {
		send(c)
		return 0, false
	}
	c.skip = int64(need)
	return end, send(c)
}

// nextBuffer takes the next free buffer. When one is free at once the consumer keeps up, so
// the producer checks a smaller share of the next chunk; when it must wait the consumer is
// behind, so a larger one (share moves by shareStep, within 0–1). False when stopped.
func nextBuffer(free <-chan []byte, stop <-chan struct{}, share *float64) ([]byte, bool) {
	select {
	case next := <-free:
		*share = max(*share-shareStep, 0)
		return next, true
	default:
	}
	*share = min(*share+shareStep, 1)
	select {
	case next := <-free:
		return next, true
	case <-stop:
		return nil, false
	}
}

// checkRecords checks the length CRCs of the complete records at the start of b, and the
// data CRCs of those that start before checkBelow. It returns the bytes the complete
// records span, the bytes whose data CRCs it checked, and, when it stops at an incomplete
// record or at one longer than MaxRecord, the size that record needs.
func checkRecords(b []byte, checkBelow int) (used, checked, need int, err error) {
	for {
		rest := b[used:]
		if len(rest) < headerSize {
			return used, checked, headerSize, nil
		}
		length := binary.LittleEndian.Uint64(rest)
		if mask(crc8(rest[:8])) != binary.LittleEndian.Uint32(rest[8:12]) {
			return used, checked, 0, errLengthCRC
		}
		if length > math.MaxInt32-headerSize-footerSize {
			return used, checked, 0, fmt.Errorf("record length %d is implausible", length)
		}
		total := headerSize + int(length) + footerSize
		if len(rest) < total || length > MaxRecord {
			return used, checked, total, nil
		}
		if used < checkBelow {
			if !dataCRCOK(rest[:total]) {
				return used, checked, 0, errDataCRC
			}
			checked = used + total
		}
		used += total
	}
}

var (
	errLengthCRC = errors.New("record length fails its CRC")
	errDataCRC   = errors.New("record data fails its CRC")
)

// dataCRCOK checks the data CRC of one complete record.
func dataCRCOK(rec []byte) bool {
	n := len(rec) - footerSize
	return maskedCRC(rec[headerSize:n]) == binary.LittleEndian.Uint32(rec[n:])
}

// decodeRecords decodes records that checkRecords has framed, checking the data CRCs of
// those from checked on, and emits their scalars. It returns the bytes of the records
// decoded before any that is bad.
func decodeRecords(b []byte, checked int, emit emitFunc) (used int, err error) {
	for used < len(b) {
		total := headerSize + int(binary.LittleEndian.Uint64(b[used:])) + footerSize
		if used >= checked && !dataCRCOK(b[used:used+total]) {
			return used, errDataCRC
		}
		data := b[used+headerSize : used+total-footerSize]
		if tag, step, wall, value, ok := fastScalar(data); ok {
			emit(tag, step, wall, value)
		} else if err := decodeEvent(data, emit); err != nil {
			return used, err
		}
		used += total
	}
	return used, nil
}

var errMalformed = errors.New("malformed event")

// fastScalar decodes, without calls, the one layout that nearly every record of a PyTorch
// or rsl_rl event file has: wall_time, step, and a summary of one value holding only tag
// and simple_value, each with one-byte keys and lengths. Anything else returns !ok and
// goes through decodeEvent, which handles every valid event.
func fastScalar(b []byte) (tag []byte, step int64, wall float64, value float64, ok bool) {
	if len(b) < 9 || b[0] != 0x09 { // wall_time, fixed64
		return
	}
	wall = math.Float64frombits(binary.LittleEndian.Uint64(b[1:9]))
	i := 9
	if i < len(b) && b[i] == 0x10 { // step, varint; absent when 0
		i++
		var v uint64
		for shift := 0; ; shift += 7 {
			if i >= len(b) || shift > 63 {
				return
			}
			c := b[i]
			i++
			v |= uint64(c&0x7f) << shift
			if c < 0x80 {
				break
			}
		}
		step = int64(v)
	}
	// summary (0x2a), then its one value (0x0a), each running to the end of the record.
	if i+4 > len(b) || b[i] != 0x2a || int(b[i+1]) != len(b)-i-2 || b[i+2] != 0x0a || int(b[i+3]) != len(b)-i-4 {
		return
	}
	i += 4
	if i+2 > len(b) || b[i] != 0x0a || b[i+1] >= 0x80 { // tag
		return
	}
	n := int(b[i+1])
	i += 2
	if i+n+5 != len(b) || b[i+n] != 0x15 { // simple_value, fixed32, ends the record
		return
	}
	tag = b[i : i+n]
	value = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i+n+1:])))
	return tag, step, wall, value, true
}

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
	t, err := readTensor(b)
	if err != nil {
		return 0, false, err
	}
	v, ok := t.scalar()
	return v, ok, nil
}

// tensorFields are the parts of a TensorProto a scalar can be in.
type tensorFields struct {
	dtype                        uint64
	elems                        int64 // from the shape; 1 without one
	content, floats, doubles, hv []byte
	halfVarints                  []uint64
}

// readTensor reads a TensorProto's fields, skipping any it does not need.
func readTensor(b []byte) (tensorFields, error) {
	t := tensorFields{elems: 1}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return t, errMalformed
		}
		b = b[n:]
		switch {
		case num == tensorDtype && typ == protowire.VarintType:
			t.dtype, n = protowire.ConsumeVarint(b)
		case num == tensorShape && typ == protowire.BytesType:
			var shape []byte
			shape, n = protowire.ConsumeBytes(b)
			if n >= 0 {
				e, err := shapeElements(shape)
				if err != nil {
					return t, err
				}
				t.elems = e
			}
		case num == tensorContent && typ == protowire.BytesType:
			t.content, n = protowire.ConsumeBytes(b)
		case num == tensorFloatVal && typ == protowire.BytesType:
			t.floats, n = protowire.ConsumeBytes(b)
		case num == tensorFloatVal && typ == protowire.Fixed32Type:
			t.floats, n = b[:min(4, len(b))], 4
			if len(b) < 4 {
				n = -1
			}
		case num == tensorDoubleVal && typ == protowire.BytesType:
			t.doubles, n = protowire.ConsumeBytes(b)
		case num == tensorDoubleVal && typ == protowire.Fixed64Type:
			t.doubles, n = b[:min(8, len(b))], 8
			if len(b) < 8 {
				n = -1
			}
		case num == tensorHalfVal && typ == protowire.BytesType:
			t.hv, n = protowire.ConsumeBytes(b)
		case num == tensorHalfVal && typ == protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			t.halfVarints = append(t.halfVarints, v)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return t, errMalformed
		}
		b = b[n:]
	}
	return t, nil
}

// scalar is the tensor's value when it has one element of a float type: tensor_content
// first, then the typed values (float_val, double_val; half_val packed, then unpacked
// single). Anything else is not a scalar.
func (t tensorFields) scalar() (float64, bool) {
	if t.elems != 1 {
		return 0, false
	}
	switch t.dtype {
	case dtFloat:
		if len(t.content) == 4 {
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(t.content))), true
		}
		if len(t.floats) == 4 {
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(t.floats))), true
		}
	case dtDouble:
		if len(t.content) == 8 {
			return math.Float64frombits(binary.LittleEndian.Uint64(t.content)), true
		}
		if len(t.doubles) == 8 {
			return math.Float64frombits(binary.LittleEndian.Uint64(t.doubles)), true
		}
	case dtHalf:
		if len(t.content) == 2 {
			return halfToFloat(binary.LittleEndian.Uint16(t.content)), true
		}
		if len(t.hv) > 0 {
			v, n := protowire.ConsumeVarint(t.hv)
			if n == len(t.hv) {
				return halfToFloat(uint16(v)), true
			}
		}
		if len(t.halfVarints) == 1 {
			return halfToFloat(uint16(t.halfVarints[0])), true
		}
	}
	return 0, false
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

package trainer

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"tunebot/session"
)

// box is one ISO base media file box: its type and its payload (after the header).
type box struct {
	typ  string
	body []byte
	at   int // the payload's offset in the file
}

// boxes splits data (at file offset base) into its boxes; a size that runs past the end
// is truncation.
func boxes(data []byte, base int) ([]box, error) {
	var out []box
	for i := 0; i < len(data); {
		if len(data)-i < 8 {
			return out, fmt.Errorf("truncated MP4: %d stray bytes at offset %d", len(data)-i, base+i)
		}
		size := uint64(binary.BigEndian.Uint32(data[i:]))
		typ := string(data[i+4 : i+8])
		head := 8
		switch size {
		case 0: // to the end
			size = uint64(len(data) - i)
		case 1:
			if len(data)-i < 16 {
				return out, fmt.Errorf("truncated MP4: box %s at offset %d", typeName(typ), base+i)
			}
			size, head = binary.BigEndian.Uint64(data[i+8:]), 16
		}
		if size < uint64(head) || size > uint64(len(data)-i) {
			return out, fmt.Errorf("truncated MP4: box %s at offset %d claims %d bytes, %d are left", typeName(typ), base+i, size, len(data)-i)
		}
		out = append(out, box{typ: typ, body: data[i+head : i+int(size)], at: base + i + head})
		i += int(size)
	}
	return out, nil
}

func child(bs []box, typ string) (box, bool) {
	for _, b := range bs {
		if b.typ == typ {
			return b, true
		}
	}
	return box{}, false
}

// path descends from b through the container boxes named.
func path(b box, typs ...string) (box, error) {
	for _, t := range typs {
		kids, err := boxes(b.body, b.at)
		if err != nil {
			return box{}, err
		}
		k, ok := child(kids, t)
		if !ok {
			return box{}, fmt.Errorf("the MP4 has no %s box in %s", t, b.typ)
		}
		b = k
	}
	return b, nil
}

// checkMP4 reads an MP4's structure: the top-level boxes up to the end of the file, the
// movie box, and in it the video track, which must be H.264 (avc1/avc3: what Slack, Discord
// and browsers play inline) and whose samples must all lie in the file's media data. The
// frames are the track's samples, the length its media duration.
func checkMP4(data []byte) (session.Clip, error) {
	c := session.Clip{Format: session.ClipMP4}
	top, err := boxes(data, 0)
	if err != nil {
		return c, refuse("%v", err)
	}
	if top[0].typ != "ftyp" {
		return c, refuse("the MP4 does not start with its ftyp box")
	}
	moov, ok := child(top, "moov")
	if !ok {
		return c, refuse("the MP4 has no movie (moov) box: it was not finished")
	}
	var media [][2]int // the payloads of the mdat boxes, as [start, end) in the file
	for _, b := range top {
		if b.typ == "mdat" {
			media = append(media, [2]int{b.at, b.at + len(b.body)})
		}
	}
	if len(media) == 0 {
		return c, refuse("the MP4 has no media data (mdat) box")
	}
	traks, err := boxes(moov.body, moov.at)
	if err != nil {
		return c, refuse("%v", err)
	}
	for _, trak := range traks {
		if trak.typ != "trak" {
			continue
		}
		hdlr, err := path(trak, "mdia", "hdlr")
		if err != nil {
			return c, refuse("%v", err)
		}
		if len(hdlr.body) < 12 || string(hdlr.body[8:12]) != "vide" {
			continue
		}
		return videoTrack(c, trak, media)
	}
	return c, refuse("the MP4 has no video track")
}

// videoTrack reads the video track: its length (trackSeconds), its size and codec
// (videoSize), and its frames, each of which must lie in the media data (placeFrames).
func videoTrack(c session.Clip, trak box, media [][2]int) (session.Clip, error) {
	secs, err := trackSeconds(trak)
	if err != nil {
		return c, err
	}
	c.Seconds = secs
	stbl, err := path(trak, "mdia", "minf", "stbl")
	if err != nil {
		return c, refuse("%v", err)
	}
	tables, err := boxes(stbl.body, stbl.at)
	if err != nil {
		return c, refuse("%v", err)
	}
	w, h, err := videoSize(tables)
	if err != nil {
		return c, err
	}
	c.Width, c.Height = w, h
	sizes, err := readSampleSizes(tables)
	if err != nil {
		return c, err
	}
	offsets, err := chunkOffsets(tables)
	if err != nil {
		return c, refuse("%v", err)
	}
	if err := placeFrames(tables, offsets, sizes, media); err != nil {
		return c, err
	}
	c.Frames = sizes.count
	return c, nil
}

// trackSeconds is the track's media duration (mdhd, version 0 or 1) over its time scale,
// which must not be 0.
func trackSeconds(trak box) (float64, error) {
	mdhd, err := path(trak, "mdia", "mdhd")
	if err != nil {
		return 0, refuse("%v", err)
	}
	var timescale, duration uint64
	switch b := mdhd.body; {
	case len(b) >= 24 && b[0] == 0:
		timescale, duration = uint64(binary.BigEndian.Uint32(b[12:])), uint64(binary.BigEndian.Uint32(b[16:]))
	case len(b) >= 36 && b[0] == 1:
		timescale, duration = uint64(binary.BigEndian.Uint32(b[20:])), binary.BigEndian.Uint64(b[24:])
	default:
		return 0, refuse("the MP4's media header (mdhd) is malformed")
	}
	if timescale == 0 {
		return 0, refuse("the MP4's video track has a time scale of 0")
	}
	return float64(duration) / float64(timescale), nil
}

// videoSize is the width and height of the track's first sample description, which must
// be H.264 (avc1 or avc3): what chat and browsers play inline.
func videoSize(tables []box) (width, height int, err error) {
	stsd, ok := child(tables, "stsd")
	if !ok || len(stsd.body) < 8+8+28 {
		return 0, 0, refuse("the MP4's video track has no sample description (stsd)")
	}
	entry := stsd.body[8:]
	codec := string(entry[4:8])
	if codec != "avc1" && codec != "avc3" {
		return 0, 0, refuse("the MP4's video is %s, not H.264 (avc1): chat and browsers may not play it; encode it with libx264", codecName(codec))
	}
	return int(binary.BigEndian.Uint16(entry[8+24:])), int(binary.BigEndian.Uint16(entry[8+26:])), nil
}

// sampleSizes is the track's sample size table (stsz): one size for every frame, or a
// size per frame.
type sampleSizes struct {
	fixed uint32
	table []byte // the stsz body
	count int
}

func (s sampleSizes) size(i int) int {
	if s.fixed != 0 {
		return int(s.fixed)
	}
	return int(binary.BigEndian.Uint32(s.table[12+4*i:]))
}

// readSampleSizes reads stsz: a track must have a frame, and a per-frame table must list
// every frame it counts.
func readSampleSizes(tables []box) (sampleSizes, error) {
	stsz, ok := child(tables, "stsz")
	if !ok || len(stsz.body) < 12 {
		return sampleSizes{}, refuse("the MP4's video track has no sample sizes (stsz)")
	}
	s := sampleSizes{fixed: binary.BigEndian.Uint32(stsz.body[4:]), table: stsz.body, count: int(binary.BigEndian.Uint32(stsz.body[8:]))}
	if s.count == 0 {
		return s, refuse("the MP4's video track has no frames")
	}
	if s.fixed == 0 && len(stsz.body) < 12+4*s.count {
		return s, refuse("truncated MP4: the sample size table lists %d of %d frames", (len(stsz.body)-12)/4, s.count)
	}
	return s, nil
}

// placeFrames walks the sample-to-chunk table (stsc) over the chunk offsets: every frame
// must lie inside the media data, and the chunks must place every frame the track counts.
func placeFrames(tables []box, offsets []uint64, sizes sampleSizes, media [][2]int) error {
	stsc, ok := child(tables, "stsc")
	if !ok || len(stsc.body) < 8 {
		return refuse("the MP4's video track has no sample-to-chunk table (stsc)")
	}
	runs := int(binary.BigEndian.Uint32(stsc.body[4:]))
	if len(stsc.body) < 8+12*runs || runs == 0 {
		return refuse("truncated MP4: the sample-to-chunk table is cut off")
	}
	count, sample := sizes.count, 0
	for r := 0; r < runs && sample < count; r++ {
		first := int(binary.BigEndian.Uint32(stsc.body[8+12*r:])) - 1
		per := int(binary.BigEndian.Uint32(stsc.body[8+12*r+4:]))
		last := len(offsets)
		if r+1 < runs {
			last = int(binary.BigEndian.Uint32(stsc.body[8+12*(r+1):])) - 1
		}
		if first < 0 || last > len(offsets) || first > last {
			return refuse("the MP4's sample-to-chunk table names chunks it does not have")
		}
		for ch := first; ch < last && sample < count; ch++ {
			at := offsets[ch]
			for k := 0; k < per && sample < count; k++ {
				end := at + uint64(sizes.size(sample))
				if !inMedia(media, at, end) {
					return refuse("truncated MP4: frame %d of %d lies outside the media data", sample+1, count)
				}
				at = end
				sample++
			}
		}
	}
	if sample < count {
		return refuse("the MP4's chunk tables place %d of its %d frames", sample, count)
	}
	return nil
}

func chunkOffsets(tables []box) ([]uint64, error) {
	if b, ok := child(tables, "stco"); ok && len(b.body) >= 8 {
		n := int(binary.BigEndian.Uint32(b.body[4:]))
		if len(b.body) < 8+4*n {
			return nil, fmt.Errorf("truncated MP4: the chunk offset table is cut off")
		}
		out := make([]uint64, n)
		for i := range out {
			out[i] = uint64(binary.BigEndian.Uint32(b.body[8+4*i:]))
		}
		return out, nil
	}
	if b, ok := child(tables, "co64"); ok && len(b.body) >= 8 {
		n := int(binary.BigEndian.Uint32(b.body[4:]))
		if len(b.body) < 8+8*n {
			return nil, fmt.Errorf("truncated MP4: the chunk offset table is cut off")
		}
		out := make([]uint64, n)
		for i := range out {
			out[i] = binary.BigEndian.Uint64(b.body[8+8*i:])
		}
		return out, nil
	}
	return nil, fmt.Errorf("the MP4's video track has no chunk offsets (stco)")
}

func inMedia(media [][2]int, from, to uint64) bool {
	for _, m := range media {
		if from >= uint64(m[0]) && to <= uint64(m[1]) {
			return true
		}
	}
	return false
}

// codecName names a video codec a message may quote (typeName), or says it is unknown.
func codecName(codec string) string {
	if knownTypes[codec] {
		return strconv.Quote(codec)
	}
	return "in an unknown codec"
}

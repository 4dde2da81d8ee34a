package charts

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
)

// encodePNG writes an opaque RGBA image as an 8-bit RGB PNG with the Sub filter on every row
// and the fastest deflate level. image/png tries five filters per row and keeps the alpha
// channel out only after scanning for it; on charts (long runs of one colour) Sub compresses
// about as well at a fraction of the time, and encoding was half of a report's render time.
func encodePNG(img *image.RGBA) ([]byte, error) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	var raw bytes.Buffer
	raw.Grow(h * (1 + 3*w) / 8)
	zw, err := zlib.NewWriterLevel(&raw, zlib.BestSpeed)
	if err != nil {
		return nil, fmt.Errorf("starting deflate: %w", err)
	}
	row := make([]byte, 1+3*w)
	row[0] = 1 // Sub: each byte minus the same channel of the pixel to its left
	for y := 0; y < h; y++ {
		off := img.PixOffset(b.Min.X, b.Min.Y+y)
		src := img.Pix[off : off+4*w]
		dst := row[1:]
		var pr, pg, pb byte
		for x := 0; x < w; x++ {
			px, d := src[4*x:4*x+3:4*x+3], dst[3*x:3*x+3:3*x+3]
			d[0], d[1], d[2] = px[0]-pr, px[1]-pg, px[2]-pb
			pr, pg, pb = px[0], px[1], px[2]
		}
		if _, err := zw.Write(row); err != nil {
			return nil, fmt.Errorf("deflating: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("deflating: %w", err)
	}

	var out bytes.Buffer
	out.Grow(raw.Len() + 64)
	out.WriteString("\x89PNG\r\n\x1a\n")
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 2 // 8 bits per channel, truecolour without alpha
	chunk(&out, "IHDR", ihdr[:])
	chunk(&out, "IDAT", raw.Bytes())
	chunk(&out, "IEND", nil)
	return out.Bytes(), nil
}

func chunk(out *bytes.Buffer, kind string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	out.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(kind))
	crc.Write(data)
	out.WriteString(kind)
	out.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	out.Write(n[:])
}

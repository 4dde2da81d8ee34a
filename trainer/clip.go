package trainer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image/gif"
	"image/png"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"tunebot/private"
	"tunebot/session"
)

// Clip files of the run-dir contract (docs/design.md §4). {clip_output} is ClipFile: the
// trainer writes an MP4 or a GIF there under that name, without an extension, since
// tunebot reads the container from the content; once checked it is renamed to
// clip.mp4 or clip.gif, so the run directory says what it holds. {clip_poster} is
// ClipPosterFile, a frame of the clip as a PNG (optional).
const (
	ClipFile       = "clip"
	ClipPosterFile = "clip-poster.png"
)

// Caps on what a trainer may hand over as a clip. A clip is a few seconds of video at a
// phone's size (the mjlab adapter's are 480×360, 5 s, a few hundred KiB): anything far
// larger is a mistake, and is refused rather than carried into chat and the page.
const (
	MaxClipBytes   = 16 << 20
	MaxPosterBytes = 4 << 20
	// MaxClipSide bounds a clip's width and height in pixels.
	MaxClipSide = 1920
	// maxGIFPixels bounds the pixels of all a GIF's frames together, so decoding one to
	// check it cannot take more than a few hundred MB.
	maxGIFPixels = 200 << 20
)

// ClipError is a clip the trainer wrote that tunebot refuses; the message names why.
type ClipError struct{ Reason string }

func (e *ClipError) Error() string { return "clip refused: " + e.Reason }

func refuse(format string, args ...any) error {
	return &ClipError{Reason: fmt.Sprintf(format, args...)}
}

// CheckClip opens the clip at path (OpenBounded, with its directory as the root) and
// tells what it is (checkClip). A missing file is an error satisfying errors.Is(err,
// os.ErrNotExist); a file that is not a regular file, or is over MaxClipBytes, or fails
// checkClip, is a *ClipError.
func CheckClip(path string) (session.Clip, error) {
	f, err := openChecked(filepath.Dir(path), filepath.Base(path), MaxClipBytes, "clip")
	if err != nil {
		return session.Clip{}, err
	}
	defer f.Close()
	return checkClip(f)
}

// checkClip reads the open clip f and tells what it is. The container is sniffed from the
// content, never the name: an MP4 (ISO base media file starting with an ftyp box) must
// hold an H.264 video track whose samples lie inside the file; a GIF (GIF87a or GIF89a)
// must decode whole. Anything else is a *ClipError that says so without quoting the
// content (a clip linked to a key must not show the key in a note). The returned Clip's
// File is f's path, size and SHA-256, from the bytes read here.
func checkClip(f *RunFile) (session.Clip, error) {
	data, err := f.ReadAll()
	if err != nil {
		return session.Clip{}, err
	}
	var c session.Clip
	switch {
	case len(data) >= 8 && string(data[4:8]) == "ftyp":
		c, err = checkMP4(data)
	case bytes.HasPrefix(data, []byte("GIF87a")) || bytes.HasPrefix(data, []byte("GIF89a")):
		c, err = checkGIF(data)
	case len(data) == 0:
		return c, refuse("the file is empty")
	default:
		return c, refuse("unknown format: neither an MP4 nor a GIF")
	}
	if err != nil {
		return c, err
	}
	if c.Width < 1 || c.Height < 1 || c.Width > MaxClipSide || c.Height > MaxClipSide {
		return c, refuse("%d×%d pixels; a clip is at most %d on a side", c.Width, c.Height, MaxClipSide)
	}
	sum := sha256.Sum256(data)
	c.File = session.File{Path: f.Path(), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	return c, nil
}

// CheckPoster opens a clip's poster frame at path as CheckClip does and checks it
// (checkPoster).
func CheckPoster(path string) (session.File, error) {
	f, err := openChecked(filepath.Dir(path), filepath.Base(path), MaxPosterBytes, "poster frame")
	if err != nil {
		return session.File{}, err
	}
	defer f.Close()
	return checkPoster(f)
}

// checkPoster reads the open poster frame f: a PNG that decodes, at most MaxPosterBytes.
func checkPoster(f *RunFile) (session.File, error) {
	data, err := f.ReadAll()
	if err != nil {
		return session.File{}, err
	}
	if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		return session.File{}, refuse("the poster frame is not a PNG")
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err == nil && (cfg.Width > MaxClipSide || cfg.Height > MaxClipSide) {
		return session.File{}, refuse("the poster frame is %d×%d pixels; at most %d on a side", cfg.Width, cfg.Height, MaxClipSide)
	}
	if err == nil {
		_, err = png.Decode(bytes.NewReader(data))
	}
	if err != nil {
		return session.File{}, refuse("the poster frame does not decode: %v", err)
	}
	sum := sha256.Sum256(data)
	return session.File{Path: f.Path(), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
}

// openChecked opens a clip file the trainer wrote through OpenBounded; a refusal becomes
// a *ClipError, so the clip's note says why.
func openChecked(dir, name string, limit int64, what string) (*RunFile, error) {
	f, err := OpenBounded(dir, name, limit, "the "+what)
	var re *RefusedError
	if errors.As(err, &re) {
		return nil, refuse("%s", re.Reason)
	}
	return f, err
}

// OpenClip opens the clip recorded on t (poster: its poster frame) from its run directory
// under sessionsDir (OpenRunFile), and only while it is still the file recorded: the same
// size, and the same SHA-256 hashed from the open descriptor, so what chat and the page
// show is what was checked. Reads of the returned file go to that descriptor alone; the
// caller closes it.
func OpenClip(sessionsDir string, t session.Trial, poster bool) (*RunFile, error) {
	what := fmt.Sprintf("the clip of %s", t.Ref())
	if t.Clip == nil {
		return nil, session.Userf(session.ErrNotFound, "%s has no clip%s", t.Ref(), noteSuffix(t.ClipNote))
	}
	rec, limit := t.Clip.File, int64(MaxClipBytes)
	if poster {
		what = fmt.Sprintf("the poster frame of %s", t.Ref())
		if t.Clip.Poster == nil {
			return nil, session.Userf(session.ErrNotFound, "the clip of %s has no poster frame", t.Ref())
		}
		rec, limit = *t.Clip.Poster, MaxPosterBytes
	}
	f, err := OpenRunFile(sessionsDir, t.SessionID, rec.Path, limit, what)
	if err != nil {
		return nil, err
	}
	if f.Size() != rec.Size {
		f.Close()
		return nil, session.Userf(nil, "%s changed on disk since it was checked (%d bytes, recorded %d)", what, f.Size(), rec.Size)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f.Section()); err != nil {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != rec.SHA256 {
		f.Close()
		return nil, session.Userf(nil, "%s changed on disk since it was checked", what)
	}
	return f, nil
}

// ReadClip returns the bytes of the clip OpenClip opens, and its path, for chat (which
// uploads a file's bytes); the page streams from OpenClip's file instead.
func ReadClip(sessionsDir string, t session.Trial, poster bool) ([]byte, string, error) {
	f, err := OpenClip(sessionsDir, t, poster)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	data, err := f.ReadAll()
	if err != nil {
		return nil, "", err
	}
	return data, f.Path(), nil
}

func noteSuffix(note string) string {
	if note == "" {
		return ""
	}
	return " (" + note + ")"
}

// collectClip checks what an evaluate job left at the clip paths and records it: a clip
// renamed to clip.<format>, its poster when it wrote a valid one, or a note saying why
// there is none. A refused clip is said in the job's log, so the log tells the whole story.
// The clip is opened once: its checked bytes are those of the open descriptor, and it is
// kept only if the renamed name still holds that file.
func collectClip(runDir string, asked bool, logPath string, logger *slog.Logger) (*session.Clip, string) {
	if !asked {
		return nil, "no clip: the evaluate template does not pass {clip_output}"
	}
	f, err := openChecked(runDir, ClipFile, MaxClipBytes, "clip")
	if errors.Is(err, os.ErrNotExist) {
		return nil, "no clip: the trainer wrote none"
	}
	var c session.Clip
	if err == nil {
		defer f.Close()
		c, err = checkClip(f)
	}
	if err != nil {
		var ce *ClipError
		if !errors.As(err, &ce) {
			ce = &ClipError{Reason: err.Error()}
		}
		appendLog(logPath, "=== tunebot: "+ce.Error())
		logger.Warn("clip refused", "reason", ce.Reason)
		return nil, ce.Error()
	}
	final := ClipFile + "." + c.Format
	if err := keepChecked(runDir, ClipFile, final, f); err != nil {
		appendLog(logPath, "=== tunebot: clip not kept: "+err.Error())
		return nil, "clip not kept: " + err.Error()
	}
	c.Path = filepath.Join(runDir, final)
	note := ""
	if p, err := collectPoster(runDir); err == nil {
		c.Poster = &p
	} else if !errors.Is(err, os.ErrNotExist) {
		appendLog(logPath, "=== tunebot: poster frame refused: "+err.Error())
		logger.Warn("poster frame refused", "err", err)
		note = "poster frame refused: " + err.Error()
	}
	return &c, note
}

// collectPoster checks the poster frame an evaluate job wrote, from one open descriptor.
func collectPoster(runDir string) (session.File, error) {
	f, err := openChecked(runDir, ClipPosterFile, MaxPosterBytes, "poster frame")
	if err != nil {
		return session.File{}, err
	}
	defer f.Close()
	return checkPoster(f)
}

// keepChecked renames the checked clip from to to inside runDir, and undoes it unless to
// then names the very file that was checked (f): a clip swapped after its check is not
// recorded with the checked clip's hash.
func keepChecked(runDir, from, to string, f *RunFile) error {
	r, err := os.OpenRoot(runDir)
	if err != nil {
		return fmt.Errorf("opening the run directory: %w", err)
	}
	defer r.Close()
	if err := r.Rename(from, to); err != nil {
		return errors.New("renaming it failed")
	}
	if st, err := r.Lstat(to); err != nil || !os.SameFile(st, f.Stat()) {
		_ = r.Remove(to)
		return errors.New("it was replaced while it was checked")
	}
	return nil
}

// removeClip deletes what an earlier evaluation of the run dir left at the clip paths, so
// a job that writes no clip is not credited with an old one.
func removeClip(runDir string) error {
	for _, name := range []string{ClipFile, ClipFile + "." + session.ClipMP4, ClipFile + "." + session.ClipGIF, ClipPosterFile} {
		if err := os.Remove(filepath.Join(runDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing an old clip: %w", err)
		}
	}
	return nil
}

func appendLog(path, line string) {
	f, err := private.Append(path, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// knownTypes are the MP4 box and codec names a message may quote: they say what the file
// is without quoting content (a clip linked to another file must not show its bytes).
var knownTypes = map[string]bool{
	"ftyp": true, "moov": true, "mdat": true, "mvhd": true, "trak": true, "tkhd": true, "edts": true,
	"mdia": true, "mdhd": true, "hdlr": true, "minf": true, "vmhd": true, "smhd": true, "dinf": true,
	"stbl": true, "stsd": true, "stts": true, "stss": true, "ctts": true, "stsc": true, "stsz": true,
	"stco": true, "co64": true, "udta": true, "meta": true, "free": true, "skip": true, "wide": true,
	"uuid": true, "moof": true, "mfra": true, "sidx": true, "mp4v": true, "hvc1": true, "hev1": true,
	"av01": true, "vp08": true, "vp09": true, "mjpg": true, "jpeg": true, "apcn": true, "apch": true,
}

// typeName quotes an MP4 box or codec name when it is a known one, and else says it is not.
func typeName(t string) string {
	if knownTypes[t] {
		return strconv.Quote(t)
	}
	return "of an unknown type"
}

// checkGIF reads a GIF's block structure (frames and their delays, up to the trailer) and
// then decodes it whole with image/gif.
func checkGIF(data []byte) (session.Clip, error) {
	c := session.Clip{Format: session.ClipGIF}
	if len(data) < 13 {
		return c, refuse("truncated GIF: no screen descriptor")
	}
	c.Width, c.Height = int(le16(data[6:])), int(le16(data[8:]))
	if c.Width < 1 || c.Height < 1 || c.Width > MaxClipSide || c.Height > MaxClipSide {
		return c, refuse("%d×%d pixels; a clip is at most %d on a side", c.Width, c.Height, MaxClipSide)
	}
	w := gifWalk{data: data, i: 13}
	if data[10]&0x80 != 0 {
		w.i += 3 << (data[10]&7 + 1) // the global colour table
	}
	for {
		if w.i >= len(data) {
			c.Frames = w.frames
			return c, refuse("truncated GIF: it ends after %d frames without its trailer", w.frames)
		}
		var err error
		switch data[w.i] {
		case 0x3b: // trailer
			return w.trailer(c)
		case 0x21:
			err = w.extension()
		case 0x2c:
			err = w.image()
		default:
			err = refuse("the GIF is corrupt: a block of an unknown type after frame %d", w.frames)
		}
		if err != nil {
			c.Frames = w.frames
			return c, err
		}
	}
}

// gifWalk walks a GIF's blocks from i, counting its frames and their length.
type gifWalk struct {
	data          []byte
	i             int
	frames        int
	centis, delay int // the frames' length so far; the next frame's delay (hundredths)
}

// skipSub skips the data sub-blocks up to their terminator; false when the data ends first.
func (w *gifWalk) skipSub() bool {
	for w.i < len(w.data) {
		n := int(w.data[w.i])
		w.i++
		if n == 0 {
			return true
		}
		w.i += n
	}
	return false
}

// extension skips an extension block, keeping a graphic control extension's delay.
func (w *gifWalk) extension() error {
	if w.i+2 >= len(w.data) {
		return refuse("truncated GIF extension")
	}
	if w.data[w.i+1] == 0xf9 && w.i+6 < len(w.data) {
		w.delay = int(le16(w.data[w.i+4:]))
	}
	w.i += 2
	if !w.skipSub() {
		return refuse("truncated GIF extension")
	}
	return nil
}

// image skips a frame and adds its delay: browsers show a delay under 2 hundredths as 10,
// so that is what it adds to the clip's length.
func (w *gifWalk) image() error {
	if w.i+10 > len(w.data) {
		return refuse("truncated GIF: frame %d has no descriptor", w.frames+1)
	}
	packed := w.data[w.i+9]
	w.i += 10
	if packed&0x80 != 0 {
		w.i += 3 << (packed&7 + 1) // a local colour table
	}
	w.i++ // LZW minimum code size
	if !w.skipSub() {
		return refuse("truncated GIF: frame %d is cut off", w.frames+1)
	}
	w.frames++
	if w.delay < 2 {
		w.delay = 10
	}
	w.centis += w.delay
	w.delay = 0
	return nil
}

// trailer ends the walk: a GIF with frames, not too many pixels to decode whole, that
// decodes.
func (w *gifWalk) trailer(c session.Clip) (session.Clip, error) {
	c.Frames = w.frames
	if c.Frames == 0 {
		return c, refuse("the GIF has no frames")
	}
	if c.Frames*c.Width*c.Height > maxGIFPixels {
		return c, refuse("the GIF's %d frames of %d×%d pixels are too many to check", c.Frames, c.Width, c.Height)
	}
	if _, err := gif.DecodeAll(bytes.NewReader(w.data)); err != nil {
		return c, refuse("the GIF does not decode")
	}
	c.Seconds = float64(w.centis) / 100
	return c, nil
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

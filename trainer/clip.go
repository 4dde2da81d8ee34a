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

// CheckClip reads the clip at path and tells what it is. The container is sniffed from
// the content, never the name: an MP4 (ISO base media file starting with an ftyp box)
// must hold an H.264 video track whose samples lie inside the file; a GIF (GIF87a or
// GIF89a) must decode whole. A missing file is an error satisfying errors.Is(err,
// os.ErrNotExist); a file that is none of these, truncated, empty or over MaxClipBytes is
// a *ClipError. The returned Clip's Path is path.
func CheckClip(path string) (session.Clip, error) {
	data, err := readCapped(path, MaxClipBytes, "clip")
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
		return c, refuse("neither an MP4 nor a GIF (it starts with %q)", printable(data[:min(len(data), 8)]))
	}
	if err != nil {
		return c, err
	}
	if c.Width < 1 || c.Height < 1 || c.Width > MaxClipSide || c.Height > MaxClipSide {
		return c, refuse("%d×%d pixels; a clip is at most %d on a side", c.Width, c.Height, MaxClipSide)
	}
	sum := sha256.Sum256(data)
	c.File = session.File{Path: path, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	return c, nil
}

// CheckPoster reads a clip's poster frame at path: a PNG that decodes, at most
// MaxPosterBytes.
func CheckPoster(path string) (session.File, error) {
	data, err := readCapped(path, MaxPosterBytes, "poster")
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
	return session.File{Path: path, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
}

// readCapped reads a regular file of at most limit bytes.
func readCapped(path string, limit int64, what string) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, refuse("the %s is not a regular file", what)
	}
	if st.Size() > limit {
		return nil, refuse("the %s is %s, over the %s a %s may be", what, session.Bytes(st.Size()), session.Bytes(limit), what)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the %s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, refuse("the %s grew past %s while it was read", what, session.Bytes(limit))
	}
	return data, nil
}

// ReadClip returns the bytes of the clip recorded on t (poster: its poster frame) from its
// run directory under sessionsDir, and its path there, with the checks of a policy
// download (OpenRunFile), and only while the file is still the one recorded (same size and
// SHA-256): what chat and the page show is what was checked.
func ReadClip(sessionsDir string, t session.Trial, poster bool) ([]byte, string, error) {
	what := fmt.Sprintf("the clip of %s", t.Ref())
	if t.Clip == nil {
		return nil, "", session.Userf(session.ErrNotFound, "%s has no clip%s", t.Ref(), noteSuffix(t.ClipNote))
	}
	f := t.Clip.File
	if poster {
		what = fmt.Sprintf("the poster frame of %s", t.Ref())
		if t.Clip.Poster == nil {
			return nil, "", session.Userf(session.ErrNotFound, "the clip of %s has no poster frame", t.Ref())
		}
		f = *t.Clip.Poster
	}
	path, size, err := OpenRunFile(sessionsDir, t.SessionID, f.Path, what)
	if err != nil {
		return nil, "", err
	}
	if size != f.Size {
		return nil, "", session.Userf(nil, "%s changed on disk since it was checked (%d bytes, recorded %d)", what, size, f.Size)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", what, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != f.SHA256 {
		return nil, "", session.Userf(nil, "%s changed on disk since it was checked", what)
	}
	return data, path, nil
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
func collectClip(runDir string, asked bool, logPath string, logger *slog.Logger) (*session.Clip, string) {
	if !asked {
		return nil, "no clip: the evaluate template does not pass {clip_output}"
	}
	path := filepath.Join(runDir, ClipFile)
	c, err := CheckClip(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "no clip: the trainer wrote none"
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
	final := path + "." + c.Format
	if err := os.Rename(path, final); err != nil {
		appendLog(logPath, "=== tunebot: clip not kept: "+err.Error())
		return nil, "clip not kept: renaming it failed"
	}
	c.Path = final
	note := ""
	if p, err := CheckPoster(filepath.Join(runDir, ClipPosterFile)); err == nil {
		c.Poster = &p
	} else if !errors.Is(err, os.ErrNotExist) {
		appendLog(logPath, "=== tunebot: poster frame refused: "+err.Error())
		logger.Warn("poster frame refused", "err", err)
		note = "poster frame refused: " + err.Error()
	}
	return &c, note
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
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
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
	i := 13
	if data[10]&0x80 != 0 {
		i += 3 << (data[10]&7 + 1)
	}
	skipSub := func() bool { // the data sub-blocks up to their terminator
		for i < len(data) {
			n := int(data[i])
			i++
			if n == 0 {
				return true
			}
			i += n
		}
		return false
	}
	centis := 0
	delay := 0
	for {
		if i >= len(data) {
			return c, refuse("truncated GIF: it ends after %d frames without its trailer", c.Frames)
		}
		switch data[i] {
		case 0x3b: // trailer
			if c.Frames == 0 {
				return c, refuse("the GIF has no frames")
			}
			if c.Frames*c.Width*c.Height > maxGIFPixels {
				return c, refuse("the GIF's %d frames of %d×%d pixels are too many to check", c.Frames, c.Width, c.Height)
			}
			if _, err := gif.DecodeAll(bytes.NewReader(data)); err != nil {
				return c, refuse("the GIF does not decode: %v", err)
			}
			c.Seconds = float64(centis) / 100
			return c, nil
		case 0x21: // extension
			if i+2 >= len(data) {
				return c, refuse("truncated GIF extension")
			}
			if data[i+1] == 0xf9 && i+6 < len(data) {
				delay = int(le16(data[i+4:]))
			}
			i += 2
			if !skipSub() {
				return c, refuse("truncated GIF extension")
			}
		case 0x2c: // image
			if i+10 > len(data) {
				return c, refuse("truncated GIF: frame %d has no descriptor", c.Frames+1)
			}
			packed := data[i+9]
			i += 10
			if packed&0x80 != 0 {
				i += 3 << (packed&7 + 1)
			}
			i++ // LZW minimum code size
			if !skipSub() {
				return c, refuse("truncated GIF: frame %d is cut off", c.Frames+1)
			}
			c.Frames++
			// Browsers show a delay under 2 hundredths as 10: so is the clip's length.
			if delay < 2 {
				delay = 10
			}
			centis += delay
			delay = 0
		default:
			return c, refuse("the GIF is corrupt: unknown block 0x%02x after frame %d", data[i], c.Frames)
		}
	}
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

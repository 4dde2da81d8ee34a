package session

// Clip is the short video of a trial's policy that its evaluation job wrote
// (docs/design.md §4): where it is and what it is, never its bytes, which stay in the run
// directory. The trainer checked the file (container sniffed, structure read, size capped)
// before it was recorded; Size and SHA256 let a reader notice a file changed since.
type Clip struct {
	File
	Format  string  `json:"format"` // "mp4" (H.264) or "gif", from the content, never the name
	Width   int     `json:"width"`
	Height  int     `json:"height"`
	Frames  int     `json:"frames"`
	Seconds float64 `json:"seconds"`
	// Poster is a frame of the clip as a PNG, when the trainer wrote one: what a phone
	// notification and the page show before the clip plays.
	Poster *File `json:"poster,omitempty"`
}

// File is a file of a run directory as recorded: its path relative to the session
// directory, its size and its SHA-256 (hex).
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Clip formats.
const (
	ClipMP4 = "mp4"
	ClipGIF = "gif"
)

// ContentType is the clip's MIME type.
func (c Clip) ContentType() string {
	if c.Format == ClipGIF {
		return "image/gif"
	}
	return "video/mp4"
}

package session

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"tunebot/secret"
)

// Printable is s, text from outside tunebot (a job's log and failure reason, a metric or
// tag name a trainer wrote, DeepSeek's answer and model name, a chat message), without
// what can disguise what a reader sees or drive a terminal: control characters (newline
// and tab kept, for text of several lines), every Unicode format character (category Cf:
// the bidi embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069, the marks
// U+200E, U+200F and U+061C, the zero-width U+200B–U+200D and U+2060, U+FEFF, the tag
// characters), the line and paragraph separators U+2028 and U+2029, and bytes that are not
// UTF-8. It is the one filter foreign text passes where it enters tunebot; a caller that
// wants one line folds the newlines and tabs it keeps.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == '\u2028', r == '\u2029', r == utf8.RuneError:
			return -1
		}
		return r
	}, s)
}

// TextLimit is the most bytes of one text tunebot stores or serves from outside (a reason,
// an audit entry's string): a few paragraphs, enough for any reason a person reads, while
// a hostile answer of megabytes costs a few kilobytes (CapText).
const TextLimit = 4 << 10

// CapText is s cut to at most limit bytes (on a rune boundary), saying where it was cut and
// how long it was: "… (cut to 4096 of 3145728 bytes)". s within limit is returned as is. The
// process's secrets are masked before the cut: the store masks only whole values, so a secret
// the cut split would keep its first part.
func CapText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	if s = secret.Process().String(s); len(s) <= limit {
		return s
	}
	note := fmt.Sprintf("… (cut to %d of %d bytes)", limit, len(s))
	cut := max(limit-len(note), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

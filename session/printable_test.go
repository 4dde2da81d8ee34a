package session_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"tunebot/session"
)

// TestBidiAndZeroWidthStrippedByPrintable: the attack of issue 44 (table item 9) put bidi
// marks and zero-width characters the old filter let through (U+202A/B/C, U+2069, U+200E/F,
// U+061C, U+200B–U+200D, U+FEFF) into a failure reason, a metric name and DeepSeek's model
// field. The one sanitizer removes every format character (Cf) and control character,
// keeping newlines and tabs, so nothing disguises the text a person reads.
func TestBidiAndZeroWidthStrippedByPrintable(t *testing.T) {
	hidden := []rune{
		'\u202a', '\u202b', '\u202c', '\u202d', '\u202e', // embeddings and overrides
		'\u2066', '\u2067', '\u2068', '\u2069', // isolates
		'\u200e', '\u200f', '\u061c', // marks
		'\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', // zero-width
		'\U000E0041',       // a tag character
		'\u2028', '\u2029', // line and paragraph separators
		'\x1b', '\x07', '\x00', '\r', '\u0085', '\u009b', // C0 and C1 controls
	}
	for _, r := range hidden {
		in := "bad" + string(r) + "term"
		if got := session.Printable(in); got != "badterm" {
			t.Errorf("Printable(%q) = %q, want %q", in, got, "badterm")
		}
	}
	tests := []struct{ in, want string }{
		{"line 1\n\tline 2", "line 1\n\tline 2"},
		{"\x1b]0;owned\x07\x1b[31mred\x1b[0m", "]0;owned[31mred[0m"},
		{"bad \xff\xfe bytes", "bad  bytes"},
		{"é ü 中文 🙂 ‹›", "é ü 中文 🙂 ‹›"},
	}
	for _, tt := range tests {
		if got := session.Printable(tt.in); got != tt.want {
			t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCapTextSaysTheCut: a capped text fits its limit, ends on a whole rune and says it was
// cut and how long it was.
func TestCapTextSaysTheCut(t *testing.T) {
	if got := session.CapText("short", 10); got != "short" {
		t.Errorf("CapText of a short text = %q", got)
	}
	long := strings.Repeat("é", 3<<20)
	got := session.CapText(long, session.TextLimit)
	if len(got) > session.TextLimit || !utf8.ValidString(got) || !strings.HasSuffix(got, "… (cut to 4096 of 6291456 bytes)") {
		t.Errorf("CapText of 6 MB: %d bytes, valid %v, ends %q", len(got), utf8.ValidString(got), got[max(len(got)-40, 0):])
	}
}

// TestBidiAndZeroWidthInTagsAndMetricNamesRefused: a trainer's event tags and extra metric
// names with escape sequences, U+202E, U+200B or U+061C were stored raw and served on the
// page (issue 44, table item 9). Such a name is refused on its own (TagProblem, which the
// event reader, the store and KeptMetrics ask), the rest kept, so no name is rewritten into
// another.
func TestBidiAndZeroWidthInTagsAndMetricNamesRefused(t *testing.T) {
	for _, name := range []string{"Episode_Reward/\u202etrack", "loss\u200b", "a\u061cb", "\x1b[2Jreward", "two\nlines", "\ufeffbom"} {
		if session.TagProblem(name) == "" {
			t.Errorf("TagProblem(%q) takes it", name)
		}
	}
	if p := session.TagProblem("Episode_Reward/track_lin_vel · é"); p != "" {
		t.Errorf("a plain tag is refused: %s", p)
	}
	m := session.Metrics{"fall_rate": 0.1, "gait_score": 1, "gait\u202escore": 2, "gait\u200bscore": 3}
	kept, dropped := session.KeptMetrics(m)
	if dropped != 2 || len(kept) != 2 || kept["gait_score"] != 1 {
		t.Errorf("KeptMetrics kept %v, dropped %d; want fall_rate and gait_score, 2 dropped", kept, dropped)
	}
}

// A secret that straddles CapText's cut is masked whole before the cut: the store masks only
// whole values, so a cut that split one would have kept its first part in the record.
func TestCapTextNeverSplitsASecret(t *testing.T) {
	key := "sk-cut-straddling-0123456789abcdef"
	t.Setenv("DEEPSEEK_API_KEY", key)
	long := strings.Repeat("x", session.TextLimit-60) + key + strings.Repeat("y", 200)
	got := session.CapText(long, session.TextLimit)
	if strings.Contains(got, key[:12]) || len(got) > session.TextLimit {
		t.Errorf("CapText kept a part of the key (%d bytes): …%q", len(got), got[max(len(got)-120, 0):])
	}
}

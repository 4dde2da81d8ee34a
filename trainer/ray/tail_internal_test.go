package ray

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestTailStringField: the end kept of a log answer is the end of the string json decodes,
// for every escape JSON has (a surrogate pair, a lone surrogate, control characters), at
// every length around the bound; an answer cut short gives its end so far, marked cut.
func TestTailStringField(t *testing.T) {
	piece := "step 12 \"quoted\" back\\slash tab\t é ✓ 😀 \x01\n"
	for _, n := range []int{0, 1, 3, 20, 21, 40, 200} {
		log := strings.Repeat(piece, n)
		body, err := json.Marshal(map[string]string{"logs": log})
		if err != nil {
			t.Fatal(err)
		}
		for _, keep := range []int{1, 7, 64, 1000} {
			got, cut, err := tailStringField(strings.NewReader(" "+string(body)), "logs", keep)
			if err != nil {
				t.Fatalf("%d pieces, keep %d: %v", n, keep, err)
			}
			want := log
			if len(want) > keep {
				want = want[len(want)-keep:]
			}
			if got != want || cut != (len(log) > keep) {
				t.Fatalf("%d pieces, keep %d: got %q (cut %v), want %q", n, keep, got, cut, want)
			}
		}
	}
	// JSON as Ray writes it: ASCII only, a non-BMP rune as a surrogate pair.
	got, _, err := tailStringField(strings.NewReader(`{"logs": "a\u00e9\ud83d\ude00\ud800z\n"}`), "logs", 100)
	if err != nil || got != "aé😀\uFFFDz\n" {
		t.Errorf("escapes decode to %q, %v", got, err)
	}
	got, cut, err := tailStringField(io.LimitReader(strings.NewReader(`{"logs": "0123456789abcdef"}`), 20), "logs", 4)
	if err != nil || got != "6789" || !cut {
		t.Errorf("a cut answer gives %q (cut %v), %v; want its end so far, cut", got, cut, err)
	}
	for _, bad := range []string{``, `[]`, `{"other": "x"}`, `{"logs": 3}`, `{"logs": "\q"}`} {
		if _, _, err := tailStringField(strings.NewReader(bad), "logs", 10); err == nil {
			t.Errorf("%q read as a log", bad)
		}
	}
}

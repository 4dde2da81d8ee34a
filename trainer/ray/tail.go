package ray

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// tailStringField reads a JSON object whose first member is the string field (the head's
// {"logs": "..."}) and returns the last keep bytes of that string, decoded, and whether
// more came before them. The string is decoded as it streams in, keeping at most 2×keep
// bytes, so its length costs time but no memory; a string cut short by r's end (a bound on
// the read) returns what was read, marked as cut.
func tailStringField(r io.Reader, field string, keep int) (string, bool, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if err := expect(br, '{'); err != nil {
		return "", false, err
	}
	if err := expect(br, '"'); err != nil {
		return "", false, err
	}
	name := &tail{keep: 256}
	if err := name.decode(br); err != nil || name.String() != field || name.cut {
		return "", false, fmt.Errorf("the log answer does not begin with %q", field)
	}
	if err := expect(br, ':'); err != nil {
		return "", false, err
	}
	if err := expect(br, '"'); err != nil {
		return "", false, err
	}
	t := &tail{keep: keep}
	err := t.decode(br)
	end := t.String()
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return end, true, nil // the bound on the read cut it: its end so far
	}
	return end, t.cut, err
}

// expect skips JSON whitespace and reads want.
func expect(br *bufio.Reader, want byte) error {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return fmt.Errorf("the log answer ends early: %w", io.ErrUnexpectedEOF)
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case want:
			return nil
		}
		return fmt.Errorf("the log answer is not the JSON expected: %q where %q belongs", c, want)
	}
}

// tail keeps the last keep bytes written to it.
type tail struct {
	keep int
	buf  []byte
	cut  bool
}

func (t *tail) add(b ...byte) {
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*t.keep {
		n := copy(t.buf, t.buf[len(t.buf)-t.keep:])
		t.buf, t.cut = t.buf[:n], true
	}
}

func (t *tail) String() string {
	if len(t.buf) > t.keep {
		t.cut = true
		return string(t.buf[len(t.buf)-t.keep:])
	}
	return string(t.buf)
}

// decode reads a JSON string's body up to its closing quote (the opening one was read).
func (t *tail) decode(br *bufio.Reader) error {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return io.ErrUnexpectedEOF
		}
		switch c {
		case '"':
			return nil
		case '\\':
			if err := t.escape(br); err != nil {
				return err
			}
		default:
			t.add(c)
		}
	}
}

var escapes = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape decodes one escape after its backslash; a \u pair of surrogates is one rune, a
// lone surrogate U+FFFD.
func (t *tail) escape(br *bufio.Reader) error {
	c, err := br.ReadByte()
	if err != nil {
		return io.ErrUnexpectedEOF
	}
	if e, ok := escapes[c]; ok {
		t.add(e)
		return nil
	}
	if c != 'u' {
		return fmt.Errorf("the log answer holds a bad escape \\%c", c)
	}
	r, err := hex4(br)
	if err != nil {
		return err
	}
	if utf16.IsSurrogate(r) {
		if b, err := br.Peek(2); err == nil && b[0] == '\\' && b[1] == 'u' {
			_, _ = br.Discard(2)
			r2, err := hex4(br)
			if err != nil {
				return err
			}
			r = utf16.DecodeRune(r, r2)
		} else {
			r = utf8.RuneError
		}
	}
	t.add(utf8.AppendRune(nil, r)...)
	return nil
}

func hex4(br *bufio.Reader) (rune, error) {
	var b [4]byte
	if _, err := io.ReadFull(br, b[:]); err != nil {
		return 0, io.ErrUnexpectedEOF
	}
	n, err := strconv.ParseUint(string(b[:]), 16, 16)
	if err != nil {
		return 0, fmt.Errorf("the log answer holds a bad escape \\u%s", b[:])
	}
	return rune(n), nil
}

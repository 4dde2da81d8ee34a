package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"tunebot/session"
)

// terminalHandler writes the warnings and errors of a foreground command (tune, demo, run
// with the console) in the terminal's own format, "[15:04:05] warning: what (trial 2 @
// rung 0): key value; …", between the console's lines; logfmt stays in tunebot.log.
type terminalHandler struct {
	mu     *sync.Mutex // one line at a time on w, shared by the handlers With makes
	w      io.Writer
	attrs  []slog.Attr
	prefix string // the open groups, "a.b."
}

func newTerminalHandler(w io.Writer) *terminalHandler {
	return &terminalHandler{mu: &sync.Mutex{}, w: w}
}

func (h *terminalHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *terminalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), qualified(h.prefix, as)...)
	return &c
}

func (h *terminalHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix += name + "."
	return &c
}

func (h *terminalHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := append([]slog.Attr(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, qualified(h.prefix, []slog.Attr{a})...)
		return true
	})
	level := "warning"
	if r.Level >= slog.LevelError {
		level = "error"
	}
	line := fmt.Sprintf("[%s] %s: %s%s\n", r.Time.Local().Format("15:04:05"), level, oneLine(r.Message), terminalAttrs(attrs))
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, line)
	return err
}

// qualified is as with each key under the groups in prefix; a group's members are
// flattened into it, and those of a group without a key into its parent (as slog asks).
func qualified(prefix string, as []slog.Attr) []slog.Attr {
	var out []slog.Attr
	for _, a := range as {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindGroup {
			inner := prefix
			if a.Key != "" {
				inner += a.Key + "."
			}
			out = append(out, qualified(inner, v.Group())...)
			continue
		}
		if a.Key != "" {
			out = append(out, slog.Attr{Key: prefix + a.Key, Value: v})
		}
	}
	return out
}

// terminalAttrs says a record's attributes as the console's lines do: the trial as
// "(trial 2 @ rung 0)", an error or reason as it is, the rest as "key value", after a
// colon. The session is left out, as the console names it at start.
func terminalAttrs(as []slog.Attr) string {
	var trial, rung string
	var rest []string
	for _, a := range as {
		switch a.Key {
		case "session":
		case "trial":
			trial = a.Value.String()
		case "rung":
			rung = a.Value.String()
		case "err", "error", "reason":
			rest = append(rest, oneLine(a.Value.String()))
		default:
			rest = append(rest, strings.ReplaceAll(a.Key, "_", " ")+" "+oneLine(a.Value.String()))
		}
	}
	var b strings.Builder
	if trial != "" {
		b.WriteString(" (trial " + trial)
		if rung != "" {
			b.WriteString(" @ rung " + rung)
		}
		b.WriteString(")")
	} else if rung != "" {
		rest = append([]string{"rung " + rung}, rest...)
	}
	if len(rest) > 0 {
		b.WriteString(": " + strings.Join(rest, "; "))
	}
	return b.String()
}

// oneLine is s, which may be a trainer's words, printable and on one line.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(session.Printable(s), "\n", " ⏎ "), "\t", " ")
}

package console

import (
	"testing"

	"tunebot/session"
)

func TestProgressShown(t *testing.T) {
	cases := []struct {
		name       string
		last       int
		seen       bool
		mark, step int
		verbose    bool
		want       bool
	}{
		{"first mark on a page", 0, false, 0, 4, false, true},
		{"a new mark on a page", 1, true, 2, 4, false, true},
		{"the same mark again", 2, true, 2, 4, false, false},
		{"an older mark", 3, true, 2, 4, false, false},
		{"100% on a page: the result line follows", 3, true, 4, 4, false, false},
		{"100% when verbose", 9, true, 10, 10, true, true},
		{"first mark at 100% on a page", 0, false, 4, 4, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := progressShown(c.last, c.seen, c.mark, c.step, c.verbose); got != c.want {
				t.Errorf("progressShown = %v, want %v", got, c.want)
			}
		})
	}
}

func TestDecisionSaid(t *testing.T) {
	elsewhere := session.Actor{Platform: "slack", ID: "U1"}
	hereInAnotherChannel := User
	hereInAnotherChannel.Where = "elsewhere"
	cases := []struct {
		name    string
		d       *session.Decision
		verbose bool
		want    bool
	}{
		{"undecided", nil, true, false},
		{"typed here: answered already", &session.Decision{By: User}, true, false},
		{"typed here, Where aside", &session.Decision{By: hereInAnotherChannel}, true, false},
		{"made in chat", &session.Decision{By: elsewhere}, false, true},
		{"tunebot's own on a page", &session.Decision{By: session.System}, false, false},
		{"tunebot's own when verbose", &session.Decision{By: session.System}, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := decisionSaid(c.d, c.verbose); got != c.want {
				t.Errorf("decisionSaid = %v, want %v", got, c.want)
			}
		})
	}
}

package session_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"tunebot/session"
)

// pagedSessions is a SessionStore whose RecentSessions answers two sessions a page, so
// that a prefix is looked for on every page.
type pagedSessions struct {
	session.SessionStore
	ids []string
}

func (p pagedSessions) Session(_ context.Context, id string) (session.Session, error) {
	for _, x := range p.ids {
		if x == id {
			return session.Session{ID: id}, nil
		}
	}
	return session.Session{}, session.ErrNotFound
}

func (p pagedSessions) RecentSessions(_ context.Context, cursor string, _ int) ([]session.Session, string, error) {
	from, _ := strconv.Atoi(cursor)
	to := min(from+2, len(p.ids))
	var page []session.Session
	for _, id := range p.ids[from:to] {
		page = append(page, session.Session{ID: id})
	}
	next := ""
	if to < len(p.ids) {
		next = strconv.Itoa(to)
	}
	return page, next, nil
}

func TestResolveID(t *testing.T) {
	st := pagedSessions{ids: []string{"aaaa111122223333", "bbbb111122223333", "cccc111122223333", "cccc999922223333", "dddd111122223333"}}
	for _, tc := range []struct {
		typed, want string
		err         error
		says        []string
	}{
		{"bbbb111122223333", "bbbb111122223333", nil, nil},
		{"dddd1111", "dddd111122223333", nil, nil}, // on the last page
		{" AAAA ", "aaaa111122223333", nil, nil},
		{"cccc", "", session.ErrConflict, []string{"ambiguous", "cccc111122223333", "cccc999922223333"}},
		{"cccc9", "cccc999922223333", nil, nil},
		{"eeee", "", session.ErrNotFound, []string{"session eeee does not exist"}},
		{"", "", session.ErrNotFound, []string{"no session id"}},
	} {
		got, err := session.ResolveID(context.Background(), st, tc.typed)
		msg := ""
		if err != nil {
			msg, _ = session.UserMessage(err)
		}
		if got != tc.want || !errors.Is(err, tc.err) && (tc.err != nil || err != nil) {
			t.Errorf("%q: %q, %v; want %q, %v", tc.typed, got, err, tc.want, tc.err)
		}
		for _, s := range tc.says {
			if !strings.Contains(msg, s) {
				t.Errorf("%q: %q does not say %q", tc.typed, msg, s)
			}
		}
	}
}

func TestDisplayNames(t *testing.T) {
	for _, name := range session.MetricNames {
		if l := session.MetricLabel(name); l == name || l == "" {
			t.Errorf("metric %s has no display name", name)
		}
	}
	for _, tc := range []struct{ got, want string }{
		{session.StateLabel(session.StateAwaitingApproval), "awaiting approval"},
		{session.ParamLabel("pose.x"), "params.pose.x"},
		{session.ActorLabel(session.Actor{Platform: "console", ID: "console", Name: "you"}), "the terminal"},
		{session.ActorLabel(session.Actor{Platform: "slack", ID: "U1", Name: "ann"}), "ann (slack)"},
		{session.ActorLabel(session.Actor{Platform: "cli", ID: "bob", Name: "bob"}), "bob at the command line"},
		{session.ActorLabel(session.Actor{Platform: "cli", ID: "cli", Name: "cli"}), "the command line"},
		{session.MetricLabel("made_up"), "made_up"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}

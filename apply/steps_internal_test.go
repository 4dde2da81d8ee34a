package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"tunebot/session"
)

// TestFailReason: a person is told a user error's own message, not its wrapping.
func TestFailReason(t *testing.T) {
	ue := session.Userf(session.ErrNotFound, "edit file a.py does not exist in the checkout")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "a user error", err: ue, want: "edit file a.py does not exist in the checkout"},
		{name: "a wrapped user error", err: fmt.Errorf("planning: %w", ue), want: "edit file a.py does not exist in the checkout"},
		{name: "any other error", err: fmt.Errorf("reading a.py: %w", fs.ErrPermission), want: "reading a.py: permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := failReason(tt.err); got != tt.want {
				t.Errorf("failReason = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRevertError: a clean undo tells the person why; an unfinished one is not theirs to
// read and names what is left.
func TestRevertError(t *testing.T) {
	cause := errors.New("exit status 1")
	tests := []struct {
		name     string
		problems []string
		want     string
		user     bool
	}{
		{name: "undone", want: "apply of preset p1 reverted: tests failed", user: true},
		{name: "undo unfinished", problems: []string{"returning to branch main: locked", "deleting branch tunebot/p1: busy"},
			want: "apply of preset p1 failed (tests failed) and the undo did not finish, the checkout /repo needs a look: returning to branch main: locked; deleting branch tunebot/p1: busy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := revertError("p1", "/repo", "tests failed", cause, tt.problems)
			if err.Error() != tt.want {
				t.Errorf("error = %q, want %q", err, tt.want)
			}
			msg, user := session.UserMessage(err)
			if user != tt.user || (user && msg != tt.want) {
				t.Errorf("UserMessage = %q, %v; want a user error: %v", msg, user, tt.user)
			}
			if user && !errors.Is(err, cause) {
				t.Errorf("the cause is lost: %v", err)
			}
		})
	}
}

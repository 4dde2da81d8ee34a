package session_test

import (
	"errors"
	"fmt"
	"testing"

	"tunebot/session"
)

func TestUserMessage(t *testing.T) {
	invalid := &session.InvalidError{What: "patch refused", Problems: []string{"a is unknown", "b is negative"}}
	tests := []struct {
		name   string
		err    error
		want   string
		wantOK bool
	}{
		{"user error", session.Userf(session.ErrNotFound, "no session is active"), "no session is active", true},
		{"wrapped user error", fmt.Errorf("deciding: %w", session.Userf(nil, "proposal 2 was already rejected")), "proposal 2 was already rejected", true},
		{"invalid error lists every problem", invalid, "patch refused:\n• a is unknown\n• b is negative", true},
		// The outermost message a person was meant to see wins over what it wraps.
		{"user error around an invalid one", &session.UserError{Msg: "the advisor could not propose", Err: invalid}, "the advisor could not propose", true},
		{"joined", errors.Join(errors.New("disk"), invalid), "patch refused:\n• a is unknown\n• b is negative", true},
		{"internal", fmt.Errorf("reading bolt page: %w", errors.New("checksum")), "reading bolt page: checksum", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := session.UserMessage(tc.err)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("UserMessage = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

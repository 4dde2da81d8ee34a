package advisor_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"tunebot/advisor"
	"tunebot/session/sessiontest"
)

// unknownWeights is a patch naming n weights no reward space has: 1.3 MB for n = 100,000,
// the hostile reply of issue 44 (table item 7).
func unknownWeights(n int) string {
	var b strings.Builder
	b.WriteString(`{"weights": {`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"bogus_term_%06d": -0.1`, i)
	}
	b.WriteString(`}, "params": {}}`)
	return b.String()
}

// hostileReplies answers every round of one proposal with 100,000 unknown weight names.
func hostileReplies(t *testing.T) *fakeDeepSeek {
	bad := answer(unknownWeights(100_000), "trust me")
	if len(bad) < 1<<20 {
		t.Fatalf("the hostile answer is %d bytes, want over 1 MB", len(bad))
	}
	return newFake(t, reply{content: bad}, reply{content: bad}, reply{content: bad})
}

// TestHundredThousandUnknownWeightsBoundedAudit: a DeepSeek reply naming 100,000 unknown
// weights made each failed proposal store a 3 MB audit entry and a 3 MB error (the session's
// pause reason). The problems are listed up to 20, then "and N more", so every audit entry
// and the error a person reads are a few kilobytes.
func TestHundredThousandUnknownWeightsBoundedAudit(t *testing.T) {
	audit := &sessiontest.AuditLog{}
	d := newAdvisor(t, hostileReplies(t), audit, nil)
	_, err := d.Propose(t.Context(), proposalRequest())
	var pe *advisor.ProposalError
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v, want a *ProposalError", err)
	}
	if len(pe.Problems) > 21 || len(err.Error()) > 8<<10 {
		t.Errorf("the error lists %d problems in %d bytes, want at most 20 and a line for the rest, a few KB", len(pe.Problems), len(err.Error()))
	}
	if !regexp.MustCompile(`; and 9998\d more$`).MatchString(err.Error()) {
		t.Errorf("the error does not say how many more problems there were: …%s", err.Error()[max(len(err.Error())-80, 0):])
	}
	entries, _ := audit.Audit(t.Context(), "s-1")
	if len(entries) != 3 {
		t.Fatalf("%d audit entries, want one per answer", len(entries))
	}
	for i, e := range entries {
		if b, _ := json.Marshal(e); len(b) > 8<<10 {
			t.Errorf("audit entry %d is %d bytes, want a few KB", i, len(b))
		}
	}
}

// TestRepairPromptBounded: the answer of 100,000 unknown weights went back to DeepSeek with
// every problem named, 3–6 MB per repair round. A repair round now names at most 20
// problems and how many more, with the refused answer cut as before, so each request
// grows by tens of kilobytes at most.
func TestRepairPromptBounded(t *testing.T) {
	f := hostileReplies(t)
	d := newAdvisor(t, f, nil, nil)
	_, _ = d.Propose(t.Context(), proposalRequest())
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (two repair rounds)", len(reqs))
	}
	for i := 1; i < len(reqs); i++ {
		if grew := len(reqs[i].body) - len(reqs[0].body); grew > 64<<10 {
			t.Errorf("repair request %d is %d bytes more than the first, want at most 64 KiB", i, grew)
		}
		last := reqs[i].req.Messages[len(reqs[i].req.Messages)-1].Content
		if !regexp.MustCompile(`and 9998\d more`).MatchString(last) {
			t.Errorf("repair prompt %d does not say how many more problems there were", i)
		}
	}
}

// TestModelFieldSanitizedAndCapped: DeepSeek's `model` field of 200 KB with escape
// sequences, bidi overrides, zero-width characters and a Slack broadcast was stored with
// the proposal, audited and served raw. It is kept printable on one line and at most 100
// runes, in the suggestion and in the audit.
func TestModelFieldSanitizedAndCapped(t *testing.T) {
	model := "deepseek\x1b]0;owned\x07\x1b[2J\u202e\u200b\u061c\u2066<!channel>\n" + strings.Repeat("m", 200_000)
	body, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": good}}},
	})
	audit := &sessiontest.AuditLog{}
	d := newAdvisor(t, newFake(t, reply{body: string(body)}), audit, nil)
	sug, err := d.Propose(t.Context(), proposalRequest())
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := audit.Audit(t.Context(), "s-1")
	if len(entries) != 1 {
		t.Fatalf("%d audit entries, want 1", len(entries))
	}
	audited, _ := entries[0].Detail["model"].(string)
	for where, got := range map[string]string{"suggestion": sug.Model, "audit": audited} {
		if n := len([]rune(got)); n > 100 || !strings.HasPrefix(got, "deepseek]0;owned[2J") {
			t.Errorf("%s's model is %d runes, starting %q", where, n, got[:min(len(got), 40)])
		}
		for _, r := range got {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Errorf("%s's model keeps %U", where, r)
			}
		}
	}
}

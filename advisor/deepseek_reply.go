package advisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"tunebot/session"
)

// RationaleLimit is the most runes of a rationale shown to people.
const RationaleLimit = 1500

// dsImpactTokens are the expected-impact values kept; anything else is dropped.
var dsImpactTokens = []string{"++", "+", "0", "-", "--"}

// dsDecodeReply decodes the model's answer strictly and checks its patch against the
// reward space. It returns the suggestion, or every problem found (none means valid).
//
// Code fences are stripped on purpose: JSON mode should prevent them, but a model that wraps
// a correct object in ```json ... ``` has answered correctly and a repair round would waste
// a call. Anything else around the object (prose, a second object) is refused.
func dsDecodeReply(content string, req session.ProposalRequest) (session.Suggestion, []string) {
	var probs []string
	var top map[string]json.RawMessage
	if err := dsStrictJSON([]byte(dsStripFence(content)), &top); err != nil {
		return session.Suggestion{}, []string{"the reply is not one valid JSON object: " + err.Error()}
	}
	if top == nil {
		return session.Suggestion{}, []string{"the reply must be a JSON object, not null"}
	}
	sug := session.Suggestion{Source: session.SourceAdvisor}
	for _, k := range dsSortedKeys(top) {
		switch k {
		case "patch", "rationale", "expected_impact", "confidence":
		default:
			probs = append(probs, fmt.Sprintf("unknown field %q (only patch, rationale, expected_impact, confidence)", dsCap(k, 40)))
		}
	}

	patchOK := false
	if raw, ok := top["patch"]; !ok {
		probs = append(probs, `patch: missing (an object {"weights": {...}, "params": {...}})`)
	} else if p, err := session.DecodePatch(raw); err != nil {
		probs = append(probs, dsProblems("patch", err)...)
	} else {
		sug.Patch, patchOK = p, true
	}

	var prob string
	if sug.Rationale, prob = dsDecodeRationale(top); prob != "" {
		probs = append(probs, prob)
	}
	if sug.Confidence, prob = dsDecodeConfidence(top); prob != "" {
		probs = append(probs, prob)
	}
	if sug.ExpectedImpact, prob = dsDecodeImpact(top); prob != "" {
		probs = append(probs, prob)
	}

	if patchOK {
		if _, err := req.Check(sug.Patch); err != nil {
			probs = append(probs, dsProblems("", err)...)
		}
	}
	if len(probs) > 0 {
		return session.Suggestion{}, probs
	}
	return sug, nil
}

// dsDecodeRationale is the reply's rationale, sanitized for chat, or the problem with it:
// a string that is not blank.
func dsDecodeRationale(top map[string]json.RawMessage) (string, string) {
	raw, ok := top["rationale"]
	if !ok {
		return "", "rationale: missing (a short plain-text reason for the change)"
	}
	var rationale any
	if err := json.Unmarshal(raw, &rationale); err != nil {
		return "", "rationale: must be a string"
	}
	s, isStr := rationale.(string)
	switch {
	case !isStr:
		return "", "rationale: must be a string"
	case strings.TrimSpace(s) == "":
		return "", "rationale: must not be empty"
	}
	return SanitizeRationale(s), ""
}

// dsDecodeConfidence is the reply's confidence, or the problem with it: a number in 0–1.
func dsDecodeConfidence(top map[string]json.RawMessage) (float64, string) {
	raw, ok := top["confidence"]
	if !ok {
		return 0, "confidence: missing (a number between 0 and 1)"
	}
	var c any
	if json.Unmarshal(raw, &c) != nil {
		return 0, "confidence: must be a number between 0 and 1"
	}
	f, isNum := c.(float64)
	switch {
	case !isNum:
		return 0, "confidence: must be a number between 0 and 1, not " + dsJSONKind(c)
	case !(f >= 0 && f <= 1) || math.IsNaN(f):
		return 0, fmt.Sprintf("confidence: %g is outside 0–1", f)
	}
	return f, ""
}

// dsDecodeImpact is the reply's expected impact (dsImpact), or the problem with it: absent
// or null is none, anything else must be an object.
func dsDecodeImpact(top map[string]json.RawMessage) (map[string]string, string) {
	raw, ok := top["expected_impact"]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, ""
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, `expected_impact: must be an object of objective: "+", "-", "0", "++" or "--"`
	}
	return dsImpact(m), ""
}

// dsImpact keeps the known objectives with a recognised token; the rest is dropped, since it
// only decorates the proposal and is not worth a repair round.
func dsImpact(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		s, ok := v.(string)
		if !ok || !slices.Contains(session.ObjectiveNames, k) {
			continue
		}
		if s = strings.TrimSpace(s); slices.Contains(dsImpactTokens, s) {
			out[k] = s
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func dsProblems(prefix string, err error) []string {
	var ie *session.InvalidError
	if !errors.As(err, &ie) {
		return []string{strings.TrimPrefix(prefix+": ", ": ") + err.Error()}
	}
	out := make([]string, len(ie.Problems))
	for i, p := range ie.Problems {
		if prefix != "" {
			p = prefix + ": " + p
		}
		out[i] = p
	}
	return out
}

func dsJSONKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "that"
}

// dsStrictJSON decodes exactly one JSON value and refuses anything after it.
func dsStrictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		msg := err.Error()
		if strings.Contains(msg, "invalid character 'N'") || strings.Contains(msg, "invalid character 'I'") ||
			strings.Contains(msg, "invalid character 'n' in numeric literal") {
			msg += " (NaN and Infinity are not JSON numbers: every value must be a finite number)"
		}
		return errors.New(msg)
	}
	if dec.More() {
		return errors.New("trailing text after the JSON object")
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err == nil {
		return errors.New("trailing text after the JSON object")
	}
	return nil
}

var dsFenceRE = regexp.MustCompile("^```[A-Za-z]*[ \t]*\r?\n((?s).*?)\r?\n?```$")

// dsStripFence removes one Markdown code fence wrapping the whole answer.
func dsStripFence(s string) string {
	s = strings.TrimSpace(s)
	if m := dsFenceRE.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return s
}

func dsSortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// dsMaxProblems is the most problems of one answer listed (then "and N more"): enough to
// say what kind of rule an answer breaks, while an answer naming 100,000 unknown terms
// (issue 44) costs a few kilobytes in the audit, the error and the repair prompt, not
// megabytes.
const dsMaxProblems = 20

// dsMoreProblems is the line that stands for the problems past dsMaxProblems.
func dsMoreProblems(n int) string {
	return fmt.Sprintf("and %d more", n-dsMaxProblems)
}

// dsSanitizeProblems makes problems safe to show and bounded: they quote the model's names
// and values, and there are at most dsMaxProblems of them, each at most 300 runes.
func dsSanitizeProblems(probs []string) []string {
	out := make([]string, 0, min(len(probs), dsMaxProblems+1))
	for _, p := range probs[:min(len(probs), dsMaxProblems)] {
		out = append(out, dsNeutralise(dsCap(dsOneLine(p), 300)))
	}
	if len(probs) > dsMaxProblems {
		out = append(out, dsMoreProblems(len(probs)))
	}
	return out
}

// dsCap cuts s to at most n runes, marking the cut with an ellipsis.
func dsCap(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	cut := n - 1
	// Prefer a word boundary in the last few runes, so a word is not split.
	for i := cut; i > cut-40 && i > 0; i-- {
		if unicode.IsSpace(r[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(r[:cut]), unicode.IsSpace) + "…"
}

// dsOneLine is s printable (session.Printable) on one line: the newlines and tabs it keeps
// become spaces.
func dsOneLine(s string) string {
	return dsFoldLines.Replace(session.Printable(s))
}

var dsFoldLines = strings.NewReplacer("\n", " ", "\t", " ")

var dsBlankLines = regexp.MustCompile(`\n{3,}`)

// dsNeutralise makes chat markup inert while keeping the text readable: no mention syntax
// (@everyone, @here, <@id>, <!channel>, <#channel>), no Slack <url|text> or Markdown
// [text](url) links hiding their target, no code fence breaking out of a quote.
func dsNeutralise(s string) string {
	r := strings.NewReplacer(
		"@", "＠", // fullwidth: reads as @, never a mention on Slack or Discord
		"<", "‹", ">", "›", // no <!here>, <@U123>, <#C1>, <url|text>, <t:...>
		"](", "] (", // no [text](url) masked link
		"```", "'''",
	)
	return r.Replace(s)
}

// SanitizeRationale prepares untrusted model text for chat: control and invisible
// characters removed, mention and link markup neutralised, blank runs collapsed and the
// length capped at RationaleLimit runes with an ellipsis.
func SanitizeRationale(s string) string {
	// Cap a first time before the work, so a megabyte of text costs little.
	if len(s) > 8*RationaleLimit*utf8.UTFMax {
		s = s[:8*RationaleLimit*utf8.UTFMax]
	}
	s = strings.ReplaceAll(session.Printable(s), "\t", " ")
	s = dsNeutralise(s)
	s = dsBlankLines.ReplaceAllString(s, "\n\n")
	s = strings.TrimSpace(s)
	return dsCap(s, RationaleLimit)
}

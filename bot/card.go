// Package bot is everything a chat platform needs that is not the platform itself: the
// platform-neutral message model (cards), the command grammar, allow-lists, the handler of
// inbound interactions and the persisted outbox. Slack, Discord and the console only
// translate this model.
package bot

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"tunebot/session"
)

// BlockKind says how a block is drawn.
type BlockKind string

// Block kinds. Adapters translate each into their platform's nearest element.
const (
	BlockHeader      BlockKind = "header"      // Text: the card's title
	BlockText        BlockKind = "text"        // Text: a paragraph (Untrusted: from outside, never markup)
	BlockCode        BlockKind = "code"        // Text: preformatted, monospace
	BlockFields      BlockKind = "fields"      // Fields: label/value pairs
	BlockTable       BlockKind = "table"       // Table
	BlockAttachments BlockKind = "attachments" // Attachments: chart PNGs
	BlockActions     BlockKind = "actions"     // Actions: buttons
	BlockStamp       BlockKind = "stamp"       // Stamp: who decided what and when, in place of the actions
)

// Card is one chat message in the platform-neutral model. Ref names it for its whole life:
// an adapter posts a card the first time it sees its Ref and edits that message afterwards,
// so the session's root message and a proposal's buttons are updated in place.
type Card struct {
	Ref     string  `json:"ref"`
	Kind    string  `json:"kind"` // root, trial, proposal, summary, notice
	Session string  `json:"session,omitempty"`
	Title   string  `json:"title"` // one line: notification title and fallback text
	Blocks  []Block `json:"blocks"`
	// Mentions are user IDs of the target platform to notify (the owner, configured users).
	Mentions []string `json:"mentions,omitempty"`
	// Urgent marks a card a person must act on or should see now (a decision waits, a
	// session failed): push notifications raise their priority.
	Urgent bool `json:"urgent,omitempty"`
	// Link is the card's subject on the monitoring page (a trial, a session), when the page
	// has a public address: a push notification opens it when tapped.
	Link string `json:"link,omitempty"`
}

// Block is one part of a card; which fields are set depends on Kind.
type Block struct {
	Kind        BlockKind    `json:"kind"`
	Text        string       `json:"text,omitempty"`
	Untrusted   bool         `json:"untrusted,omitempty"`
	Fields      []Field      `json:"fields,omitempty"`
	Table       *Table       `json:"table,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	Actions     []Action     `json:"actions,omitempty"`
	Stamp       *Stamp       `json:"stamp,omitempty"`
	// ThreadHint marks a text block that says what to reply in a chat thread: a terminal,
	// which has no thread and no buttons, prints its own line instead.
	ThreadHint bool `json:"thread_hint,omitempty"`
}

// Field is a label and its value.
type Field struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Table is a small table; Align holds "r" for right-aligned (numeric) columns.
type Table struct {
	Caption string     `json:"caption,omitempty"`
	Columns []string   `json:"columns"`
	Align   []string   `json:"align,omitempty"`
	Rows    [][]string `json:"rows"`
}

// Attachment is a file attached to a card: a chart PNG, or (ContentType set) another file
// such as a preset's JSON or a policy.onnx, which adapters upload as a file named Name.
type Attachment struct {
	Name  string `json:"name"` // file name, e.g. "trial-003-curves.png"
	Title string `json:"title"`
	Data  []byte `json:"-"` // the file's bytes (a PNG chart, JSON, ONNX), carried beside the JSON in an outbox body, see EncodeMessage
	Size  int    `json:"size"`
	// ContentType is the MIME type of the bytes; "" means image/png. Anything else is a
	// file to upload as it is, never an image to embed.
	ContentType string `json:"content_type,omitempty"`
	// Path is where the bytes are on this machine (a clip in its run directory): the
	// console names it instead of saving a copy. "" for bytes made for the card.
	Path string `json:"path,omitempty"`
	// Link is where to see the file when a platform cannot carry it (over its upload
	// limit): the trial on the monitoring page. "" for none.
	Link string `json:"link,omitempty"`
}

// Action is a button. Its ID carries everything the handler needs (see ActionID), so a
// click works after a restart without any state held by the adapter.
type Action struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Style string `json:"style,omitempty"` // primary, danger or ""
}

// Stamp records a decision; it replaces a proposal's buttons.
type Stamp struct {
	By       string    `json:"by"`
	Action   string    `json:"action"` // "approved", "rejected", "edited and approved", "voided"
	At       time.Time `json:"at"`
	Feedback string    `json:"feedback,omitempty"` // untrusted
}

// Text returns a text block.
func Text(s string) Block { return Block{Kind: BlockText, Text: s} }

// UntrustedText returns a text block of text that came from outside tunebot (the advisor's
// rationale, a person's feedback, a log tail), neutralised by Neutralise and capped at max
// runes.
func UntrustedText(s string, max int) Block {
	return Block{Kind: BlockText, Text: Neutralise(s, max), Untrusted: true}
}

// Fields returns a fields block.
func Fields(kv ...string) Block {
	b := Block{Kind: BlockFields}
	for i := 0; i+1 < len(kv); i += 2 {
		b.Fields = append(b.Fields, Field{kv[i], kv[i+1]})
	}
	return b
}

// MaxUntrusted is the default cap on untrusted text in a card.
const MaxUntrusted = 1500

var (
	mdLink     = regexp.MustCompile(`\[([^\]\n]*)\]\(([^)\s]*)\)`)
	broadcast  = regexp.MustCompile(`(?i)@(everyone|here|channel)\b`)
	angleToken = regexp.MustCompile(`<([@!#&]|https?:|mailto:)`)
)

// Neutralise makes untrusted text inert on every platform: broadcast mentions (@everyone,
// @here, @channel) and entity tokens (<@U1>, <!here>, <#C1>, <https://…|x>) are broken with
// a zero-width space so they no longer ping or link, markdown links become "text (url)",
// code fences and control characters go, and the result is capped at max runes (0: no cap).
// Adapters still escape their own markup characters; this is the part no escaping covers.
func Neutralise(s string, max int) string {
	s = session.Printable(s)
	s = mdLink.ReplaceAllString(s, "$1 ($2)")
	s = broadcast.ReplaceAllString(s, "@\u200b$1")
	s = angleToken.ReplaceAllString(s, "<\u200b$1")
	s = strings.ReplaceAll(s, "```", "'''")
	if max > 0 {
		s = Truncate(s, max)
	}
	return strings.TrimSpace(s)
}

// Action IDs: "tune:<verb>:<session id>:<proposal id>".
const actionPrefix = "tune"

// PlatformConsole is the terminal's platform name (console.User's).
const PlatformConsole = "console"

// Button verbs.
const (
	ButtonApprove = "approve"
	ButtonReject  = "reject"
	ButtonEdit    = "edit"
	ButtonPause   = "pause"
)

// ActionID builds the ID of a proposal's button.
func ActionID(verb, sessionID, proposalID string) string {
	return strings.Join([]string{actionPrefix, verb, sessionID, proposalID}, ":")
}

// ParseActionID splits an action ID built by ActionID. IDs come back from the platform, so
// they are checked like any other input.
func ParseActionID(id string) (verb, sessionID, proposalID string, err error) {
	parts := strings.Split(id, ":")
	if len(parts) != 4 || parts[0] != actionPrefix {
		return "", "", "", fmt.Errorf("unknown action %q", Truncate(id, 80))
	}
	switch parts[1] {
	case ButtonApprove, ButtonReject, ButtonEdit, ButtonPause,
		ButtonPreferA, ButtonPreferB, ButtonPreferTie, ButtonPreferNote, ButtonGo:
	default:
		return "", "", "", fmt.Errorf("unknown action %q", Truncate(id, 80))
	}
	if !idRE.MatchString(parts[2]) || (parts[3] != "" && !idRE.MatchString(parts[3])) {
		return "", "", "", fmt.Errorf("malformed action %q", Truncate(id, 80))
	}
	return parts[1], parts[2], parts[3], nil
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

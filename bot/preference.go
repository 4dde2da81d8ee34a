package bot

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"tunebot/session"
)

// Buttons of an A/B card ("which walks better?") and of a promotion plan (issue 23). Their
// action IDs name the card (card-<seq>) or the rung (rung-<r>) as the proposal's name a
// proposal: a click works after a restart without any state held by the adapter.
const (
	ButtonPreferA    = "prefer-a"
	ButtonPreferB    = "prefer-b"
	ButtonPreferTie  = "prefer-tie"
	ButtonPreferNote = "prefer-note" // opens a form for a note to one's own answer
	ButtonGo         = "go"
)

// FieldNote is the note form's field.
const FieldNote = "note"

// CardID is the action ID part naming A/B card seq; RungID names rung r's plan.
func CardID(seq int) string { return fmt.Sprintf("card-%d", seq) }
func RungID(r int) string   { return fmt.Sprintf("rung-%d", r) }

// numbered reads the number of a CardID or RungID.
func numbered(id, prefix string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, prefix+"-"))
	return n, err == nil && strings.HasPrefix(id, prefix+"-") && n >= 0
}

func preferenceRef(id string, seq int) string { return fmt.Sprintf("s/%s/preference/%d", id, seq) }
func reviewRef(id string, rung int) string    { return fmt.Sprintf("s/%s/review/%d", id, rung) }

// PreferenceInput is what an A/B card shows: the card, and its two trials (nil when a
// trial cannot be found), each with its clip or, when it has none, its charts.
type PreferenceInput struct {
	Session    session.Session
	Preference session.Preference
	A, B       *ClipSide
	Charts     []Attachment // the charts of a side without a clip
	// NoAdvisor: no advisor reads the note, so the card's effect names none (Renderer.NoAdvisor).
	NoAdvisor bool
}

// askedWhy is session.AskedWhy from the card's two sides' rung-0 scores; without both, it
// names the trials only.
func askedWhy(in PreferenceInput) string {
	p := in.Preference
	if in.A != nil && in.B != nil && in.A.Trial.Score != nil && in.B.Trial.Score != nil {
		return session.AskedWhy(p, in.A.Trial.Score.Total, in.B.Trial.Score.Total)
	}
	if p.B == 0 {
		return fmt.Sprintf("A is trial %d, which just finished; B is the baseline (trial 0), still the best so far", p.A)
	}
	return fmt.Sprintf("A is trial %d, which just finished; B is the best so far, trial %d", p.A, p.B)
}

// PreferenceCard asks "which walks better?": A is the trial that just finished, B the best
// so far, each labelled with its number, their clips side by side (ClipBlocks; a side
// without a clip shows its charts), and the buttons A · B · Can't tell. Once answered, a
// stamp says who chose what, and what the answer does; an unanswered card expires quietly
// when its rung ends.
func PreferenceCard(in PreferenceInput) Card {
	p, s := in.Preference, in.Session
	c := Card{Ref: preferenceRef(s.ID, p.Seq), Kind: "preference", Session: s.ID,
		Title: fmt.Sprintf("Which walks better? A: trial %d · B: trial %d", p.A, p.B)}
	if !p.Asked {
		c.Title = fmt.Sprintf("preference: %s", p.Verdict())
	}
	c.Blocks = append(c.Blocks, Block{Kind: BlockHeader, Text: c.Title})
	if p.Asked {
		c.Blocks = append(c.Blocks, Text(askedWhy(in)+". Watch both and say which gait looks right: the score cannot see a hopping or shuffling gait."))
	}
	var sides []ClipSide
	for _, side := range []*ClipSide{in.A, in.B} {
		if side != nil {
			sides = append(sides, *side)
		}
	}
	c.Blocks = append(c.Blocks, ClipBlocks(sides...)...)
	if len(in.Charts) > 0 {
		c.Blocks = append(c.Blocks, Block{Kind: BlockAttachments, Attachments: in.Charts})
	}
	switch {
	case p.Open():
		id := CardID(p.Seq)
		c.Blocks = append(c.Blocks, Block{Kind: BlockActions, Actions: []Action{
			{ID: ActionID(ButtonPreferA, s.ID, id), Label: fmt.Sprintf("A: trial %d", p.A), Style: "primary"},
			{ID: ActionID(ButtonPreferB, s.ID, id), Label: fmt.Sprintf("B: trial %d", p.B), Style: "primary"},
			{ID: ActionID(ButtonPreferTie, s.ID, id), Label: "Can't tell"},
		}})
		hint := Text("reply in this thread: " + PreferReplies(p) + "; a note after it tells DeepSeek why")
		hint.ThreadHint = true
		c.Blocks = append(c.Blocks, hint)
	case p.Decided():
		by := "someone"
		if p.By != nil {
			by = p.By.String()
		}
		c.Blocks = append(c.Blocks, Text("answer: "+p.Verdict()))
		c.Blocks = append(c.Blocks, Block{Kind: BlockStamp, Stamp: &Stamp{By: by, Action: "answered", At: p.At, Feedback: Neutralise(p.Note, 500)}})
		c.Blocks = append(c.Blocks, Text(session.PreferenceEffectFor(p, !in.NoAdvisor)))
		if p.Note == "" {
			c.Blocks = append(c.Blocks, Block{Kind: BlockActions, Actions: []Action{{ID: ActionID(ButtonPreferNote, s.ID, CardID(p.Seq)), Label: "Add a note"}}})
		}
	case p.Expired:
		c.Blocks = append(c.Blocks, Text("expired: rung 0 ended before anyone answered; nothing changed"))
	}
	return c
}

// PreferReplies are the typed answers to card p: "prefer 8 over 5 · prefer 5 over 8 ·
// prefer neither".
func PreferReplies(p session.Preference) string {
	return fmt.Sprintf("prefer %d over %d · prefer %d over %d · prefer neither", p.A, p.B, p.B, p.A)
}

// ReviewCard shows a rung's promotion plan (docs/design.md §1): which trials go on, the
// changes people made and who made them, and while it waits the Go button and the typed
// forms; once the promotions started, who said go (or that the wait ran out).
func ReviewCard(s session.Session, r session.Review, trials []session.Trial, mentions []string) Card {
	iters := 0
	if r.Rung < len(s.Settings.Rungs) {
		iters = s.Settings.Rungs[r.Rung]
	}
	c := Card{Ref: reviewRef(s.ID, r.Rung), Kind: "review", Session: s.ID, Mentions: mentions,
		Title: fmt.Sprintf("promotions to rung %d: %s", r.Rung, session.PlanText(r.Plan, iters))}
	c.Urgent = !r.Done && s.Settings.Mode == session.ModeApproval
	c.Blocks = append(c.Blocks, Block{Kind: BlockHeader, Text: c.Title})
	t := &Table{Caption: fmt.Sprintf("the plan (scores at rung %d)", r.Rung-1), Columns: []string{"trial", "score", "how"}, Align: []string{"r", "r", ""}}
	for _, n := range r.Plan {
		score := "—"
		for _, tr := range trials {
			if tr.Number == n && tr.Rung == r.Rung-1 && tr.Score != nil {
				score = Signed(tr.Score.Total)
			}
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(n), score, r.How(n, s.Settings.Control)})
	}
	c.Blocks = append(c.Blocks, Block{Kind: BlockTable, Table: t})
	for _, ch := range r.Changes {
		c.Blocks = append(c.Blocks, Text(ch.Text()+" ("+ch.At.UTC().Format("15:04 UTC")+")"))
	}
	if !r.Done {
		c.Blocks = append(c.Blocks, Block{Kind: BlockActions, Actions: []Action{{ID: ActionID(ButtonGo, s.ID, RungID(r.Rung)), Label: "Go", Style: "primary"}}})
		hint := Text(fmt.Sprintf("reply in this thread: %s; it goes ahead at %s", session.ReviewReplies, r.Until.UTC().Format("15:04 UTC")))
		hint.ThreadHint = true
		c.Blocks = append(c.Blocks, hint)
		return c
	}
	by, action := "tunebot", "started"
	if r.GoBy != nil {
		by, action = r.GoBy.String(), "go"
	} else if r.DoneAt.After(r.OpenedAt) {
		action = "started once the review's wait ran out"
	}
	c.Blocks = append(c.Blocks, Block{Kind: BlockStamp, Stamp: &Stamp{By: by, Action: action, At: r.DoneAt}})
	return c
}

// prefer answers an A/B card, or records a typed preference, for session s.
func (h *Handler) prefer(ctx context.Context, s session.Session, req session.PreferRequest, log *slog.Logger) Reply {
	req.SessionID = s.ID
	p, err := h.cfg.Engine.Prefer(ctx, req)
	if err != nil {
		return h.engineError(err, log)
	}
	text := fmt.Sprintf("%s: %s", req.By, p.Verdict())
	if p.Note != "" {
		text += " (“" + Neutralise(p.Note, 200) + "”)"
	}
	return Reply{Text: text + "\n" + session.PreferenceEffectFor(p, h.Advised())}
}

// preferCommand is the typed answer: "prefer 8 over 5 [note]", or "prefer neither [note]"
// for the card that waits.
func (h *Handler) preferCommand(ctx context.Context, s session.Session, cmd Command, by session.Actor, log *slog.Logger) Reply {
	req := session.PreferRequest{Winner: cmd.Trial, Loser: cmd.Other, Note: cmd.Note, By: by}
	if cmd.Neither {
		card, ok := s.OpenCard()
		if !ok {
			return Reply{Private: true, Text: fmt.Sprintf("no A/B card waits in session %s; to say you cannot tell two trials apart, answer their card", session.Short(s.ID))}
		}
		req.Card, req.Answer = card.Seq, session.AnswerTie
	}
	return h.prefer(ctx, s, req, log)
}

// preferAction handles the buttons of an A/B card: A, B and Can't tell answer it; Add a
// note opens a form whose submission adds the note to the person's own answer.
func (h *Handler) preferAction(ctx context.Context, in Interaction, verb, sid, id string, log *slog.Logger) Reply {
	seq, ok := numbered(id, "card")
	if !ok {
		return Reply{Private: true, Text: "unknown A/B card"}
	}
	if r, ok := h.refuse(ctx, in, VerbPrefer, sid); !ok {
		return r
	}
	s, err := h.session(ctx, sid, false)
	if err != nil {
		return errorReply(err)
	}
	req := session.PreferRequest{Card: seq, By: in.User}
	switch verb {
	case ButtonPreferA:
		req.Answer = session.AnswerA
	case ButtonPreferB:
		req.Answer = session.AnswerB
	case ButtonPreferTie:
		req.Answer = session.AnswerTie
	case ButtonPreferNote:
		var card *session.Preference
		for i := range s.Preferences {
			if s.Preferences[i].Seq == seq {
				card = &s.Preferences[i]
			}
		}
		if card == nil || !card.Decided() {
			return Reply{Private: true, Text: "answer the card first (A, B or Can't tell); a note goes with an answer"}
		}
		if in.Kind == KindAction {
			return Reply{Form: &Form{ActionID: in.ActionID, Title: fmt.Sprintf("Note on trials %d and %d", card.A, card.B),
				Inputs: []Input{{ID: FieldNote, Label: "Why? (DeepSeek reads it)", Multiline: true, Hint: "e.g. 8 trots evenly; 5 hops on its hind legs"}}}}
		}
		req.Answer, req.Note = card.Answer, strings.TrimSpace(in.Values[FieldNote])
		if req.Note == "" {
			return Reply{Private: true, Text: "the note is empty; nothing changed"}
		}
	}
	return h.prefer(ctx, s, req, log)
}

// reviewCommand runs go, promote N or drop N on session s's waiting promotion plan.
func (h *Handler) reviewCommand(ctx context.Context, s session.Session, cmd Command, by session.Actor, log *slog.Logger) Reply {
	rung := 0
	if cmd.Verb == VerbGo && cmd.Rung > 0 {
		rung = cmd.Rung // the Go button of that rung's plan
	}
	_, text, err := h.cfg.Engine.Review(ctx, session.ReviewRequest{SessionID: s.ID, Action: string(cmd.Verb), Trial: cmd.Trial, Rung: rung, By: by})
	if err != nil {
		return h.engineError(err, log)
	}
	return Reply{Text: text}
}

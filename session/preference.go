package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// NoiseMargin is how far apart two rung-0 scores must be to count as different: the margin
// an improvement must clear (early stop counts proposals that did not beat the best by
// more), about the score's noise on three evaluation seeds (bench/sampler/README.md). An
// A/B card is asked when a new trial scores within it of the best so far, and at a
// promotion a person's preference orders two trials within it of each other.
const NoiseMargin = 0.01

// Answers to "which walks better?" (Preference.Answer).
const (
	AnswerA   = "a"
	AnswerB   = "b"
	AnswerTie = "tie" // can't tell
)

// Preference is a person's judgement of two rung-0 trials' gaits: an A/B card tunebot asked
// (A the trial that had just finished, B the best so far) or a "prefer N over M" typed on
// the person's own. Both trials' configurations are kept with it, as the proposers learn
// from them.
type Preference struct {
	Seq     int          `json:"seq"`
	A       int          `json:"a"`
	B       int          `json:"b"`
	AConfig RewardConfig `json:"a_config"`
	BConfig RewardConfig `json:"b_config"`
	// Asked says tunebot asked it (a card, counted against preferences.max); a typed one
	// was not asked.
	Asked   bool      `json:"asked,omitempty"`
	AskedAt time.Time `json:"asked_at,omitzero"`
	Answer  string    `json:"answer,omitempty"` // AnswerA, AnswerB or AnswerTie; "" while open
	Note    string    `json:"note,omitempty"`
	By      *Actor    `json:"by,omitempty"`
	At      time.Time `json:"at,omitzero"`
	// Expired is set on a card nobody answered before its rung ended.
	Expired bool `json:"expired,omitempty"`
}

// AskedWhy says why tunebot asked card p, from its two trials' rung-0 scores (a is A's, the
// trial that had just finished; b is B's, the best so far): A scored within NoiseMargin of B,
// or above it by more. Every surface that shows the card says it so.
func AskedWhy(p Preference, a, b float64) string {
	// B is the baseline until a trial beats it: named so, as "the best so far" alone reads
	// as a tuned trial.
	best := "the best so far (B, trial %d, at %s)"
	if p.B == 0 {
		best = "the baseline, still the best so far (B, trial %d, at %s),"
	}
	best = fmt.Sprintf(best, p.B, SignedScore(b))
	if a-b > NoiseMargin {
		return fmt.Sprintf("A, trial %d, just finished at %s, above %s by more than the noise (%.2f)", p.A, SignedScore(a), best, NoiseMargin)
	}
	return fmt.Sprintf("A, trial %d, just finished at %s, within the noise (%.2f) of %s", p.A, SignedScore(a), NoiseMargin, strings.TrimSuffix(best, ","))
}

// Open reports whether p is a card that waits for an answer.
func (p Preference) Open() bool { return p.Answer == "" && !p.Expired }

// Decided reports whether a person answered p.
func (p Preference) Decided() bool { return p.Answer != "" }

// Winner returns the trial that walks better and the other; ok is false for "can't tell"
// and for a card not answered.
func (p Preference) Winner() (win, lose int, ok bool) {
	switch p.Answer {
	case AnswerA:
		return p.A, p.B, true
	case AnswerB:
		return p.B, p.A, true
	}
	return 0, 0, false
}

// Configs returns the configurations of the preferred trial and the other (for "can't
// tell": A's and B's).
func (p Preference) Configs() (win, lose RewardConfig) {
	if p.Answer == AnswerB {
		return p.BConfig, p.AConfig
	}
	return p.AConfig, p.BConfig
}

// Has reports whether p compares trials a and b (in either order).
func (p Preference) Has(a, b int) bool { return p.A == a && p.B == b || p.A == b && p.B == a }

// Verdict says what p holds, the same on every surface: "trial 8 walks better than trial
// 5", "can't tell trial 8 from trial 5", "which walks better, trial 8 or trial 5?".
func (p Preference) Verdict() string {
	if w, l, ok := p.Winner(); ok {
		return fmt.Sprintf("%s walks better than %s", TrialName(w), TrialName(l))
	}
	switch {
	case p.Answer == AnswerTie:
		return fmt.Sprintf("can't tell %s from %s", TrialName(p.A), TrialName(p.B))
	case p.Expired:
		return fmt.Sprintf("nobody compared %s with %s before rung 0 ended", TrialName(p.A), TrialName(p.B))
	}
	return fmt.Sprintf("which walks better, %s or %s?", TrialName(p.A), TrialName(p.B))
}

// TrialName names trial n in a sentence, the baseline as such: "trial 8", "the baseline
// (trial 0)".
func TrialName(n int) string {
	if n == 0 {
		return "the baseline (trial 0)"
	}
	return fmt.Sprintf("trial %d", n)
}

// Whose is trial n's possessive in a sentence: "trial 8's", "the baseline's".
func Whose(n int) string {
	if n == 0 {
		return "the baseline's"
	}
	return fmt.Sprintf("trial %d's", n)
}

// PreferenceEffect says in words what an answered preference does, where it is recorded
// (docs/design.md §1): both proposers learn from it, and halving respects it, never past a
// gate.
func PreferenceEffect(p Preference) string { return PreferenceEffectFor(p, true) }

// PreferenceEffectFor is PreferenceEffect in a session with an advisor (DeepSeek) or, with
// advisor false, without one: then only the numeric sampler learns from it, and no note
// is promised to a prompt nobody reads.
func PreferenceEffectFor(p Preference, advisor bool) string {
	w, l, ok := p.Winner()
	if !advisor {
		const learns = "the numeric sampler learns from it (no advisor is configured, so no prompt reads a note): it "
		if !ok {
			return learns + "counts the two configurations as equally good; halving ranks them by their scores"
		}
		return learns + "leans its next proposals towards " + Whose(w) + " configuration; " + promotionEffect(w, l) + "; it never overrides a gate"
	}
	if !ok {
		return "both proposers learn from it: DeepSeek's next prompt lists it, and the numeric sampler counts the two configurations as equally good; halving ranks them by their scores"
	}
	return fmt.Sprintf("both proposers learn from it: DeepSeek's next prompt lists it with its note, and the numeric sampler leans its next proposals towards %s configuration; %s; it never overrides a gate", Whose(w), promotionEffect(w, l))
}

// promotionEffect says what an answer that w walks better than l does at a promotion.
func promotionEffect(w, l int) string {
	if w == 0 {
		return fmt.Sprintf("trial %d is never promoted ahead of a tuned trial nobody marked worse than the baseline", l)
	}
	return fmt.Sprintf("at a promotion %s ranks above %s when their scores are within %.2f of each other", TrialName(w), TrialName(l), NoiseMargin)
}

// PreferRequest is a person's answer to an A/B card, or a preference typed on their own
// ("prefer 8 over 5 too bouncy").
type PreferRequest struct {
	SessionID string
	// Card is the Seq of the card answered, with Answer (AnswerA, AnswerB, AnswerTie); 0
	// names the pair by Winner and Loser instead (its card when one asks about it).
	Card   int
	Answer string
	Winner int
	Loser  int
	Tie    bool // with Winner and Loser: can't tell them apart
	Note   string
	By     Actor
}

// Prefer records a preference. One decision per pair, as for proposals: a second answer is
// refused, naming who answered first, except that whoever answered may add a note to their
// own answer by giving it again with the note.
func (e *Engine) Prefer(ctx context.Context, r PreferRequest) (Preference, error) {
	if n := len([]rune(r.Note)); n > MaxFeedback {
		return Preference{}, Userf(ErrConflict, "the note is %d characters; at most %d", n, MaxFeedback)
	}
	r.Note = strings.TrimSpace(r.Note)
	if r.Card == 0 && r.Winner == r.Loser {
		return Preference{}, Userf(ErrConflict, "compare two different trials: prefer N over M")
	}
	trials, err := e.cfg.Store.Trials(ctx, r.SessionID)
	if err != nil {
		return Preference{}, e.lookupErr(r.SessionID, err)
	}
	var got Preference
	added := false // a note added to an answer given before
	now := time.Now().UTC()
	s, err := e.cfg.Store.UpdateSession(ctx, r.SessionID, func(x *Session) error {
		if !x.State.Active() {
			return Userf(ErrConflict, "session %s is %s: its trials can no longer be compared", short(x.ID), x.State)
		}
		i, answer, err := preferenceTarget(x, r)
		if err != nil {
			return err
		}
		if i >= 0 && x.Preferences[i].Decided() {
			p := &x.Preferences[i]
			if err := secondAnswer(*p, r, answer); err != nil {
				return err
			}
			p.Note, added = r.Note, true
			got = *p
			return nil
		}
		if i < 0 {
			if i, err = addPair(x, trials, r.Winner, r.Loser); err != nil {
				return err
			}
		}
		p := &x.Preferences[i]
		by := r.By
		p.Answer, p.Note, p.By, p.At, p.Expired = answer, r.Note, &by, now, false
		got = *p
		x.UpdatedAt = now
		return nil
	})
	if err != nil {
		return Preference{}, e.lookupErr(r.SessionID, err)
	}
	e.announcePreference(ctx, s, got, r.By, added)
	return got, nil
}

// preferenceTarget is the index in x.Preferences of the pair r answers (-1: a pair not
// asked about yet) and r's answer about it: a card's answer must be A, B or can't tell; a
// pair named by winner and loser is answered by which of its sides won.
func preferenceTarget(x *Session, r PreferRequest) (int, string, error) {
	if r.Card > 0 {
		i := slices.IndexFunc(x.Preferences, func(p Preference) bool { return p.Seq == r.Card })
		if i < 0 {
			return -1, "", Userf(ErrNotFound, "session %s has no A/B card %d", short(x.ID), r.Card)
		}
		if r.Answer != AnswerA && r.Answer != AnswerB && r.Answer != AnswerTie {
			return -1, "", Userf(ErrConflict, "unknown answer %q (A, B or can't tell)", r.Answer)
		}
		return i, r.Answer, nil
	}
	i := slices.IndexFunc(x.Preferences, func(p Preference) bool { return p.Has(r.Winner, r.Loser) })
	answer := AnswerA
	switch {
	case r.Tie:
		answer = AnswerTie
	case i >= 0 && x.Preferences[i].B == r.Winner:
		answer = AnswerB
	}
	return i, answer, nil
}

// secondAnswer refuses answer to decided pair p, naming who answered first, except that
// whoever answered may add a note by giving their answer again with it (nil: the note is
// added).
func secondAnswer(p Preference, r PreferRequest, answer string) error {
	if p.By != nil && p.By.Platform == r.By.Platform && p.By.ID == r.By.ID && p.Answer == answer && r.Note != "" {
		return nil
	}
	who := ""
	if p.By != nil {
		who = fmt.Sprintf(" by %s at %s", p.By, p.At.Format("15:04:05 UTC"))
	}
	return Userf(ErrConflict, "%s and %s were already compared%s: %s", TrialName(p.A), TrialName(p.B), who, p.Verdict())
}

// addPair adds to x the pair of finished rung-0 trials winner and loser (A and B), asked by
// nobody, and returns its index.
func addPair(x *Session, trials []Trial, winner, loser int) (int, error) {
	a, b := findRung0(trials, winner), findRung0(trials, loser)
	for k, t := range []*Trial{a, b} {
		if t == nil {
			return -1, Userf(ErrNotFound, "session %s has no finished rung-0 trial %d to compare", short(x.ID), []int{winner, loser}[k])
		}
	}
	x.Preferences = append(x.Preferences, Preference{Seq: len(x.Preferences) + 1, A: a.Number, B: b.Number,
		AConfig: a.RewardConfig.Clone(), BConfig: b.RewardConfig.Clone()})
	return len(x.Preferences) - 1, nil
}

// announcePreference audits and announces a recorded answer, or a note added to one.
func (e *Engine) announcePreference(ctx context.Context, s Session, got Preference, by Actor, added bool) {
	detail := map[string]any{"seq": got.Seq, "a": got.A, "b": got.B, "answer": got.Answer, "note": got.Note, "asked": got.Asked}
	if added {
		detail["note_added"] = true
	}
	e.audit(ctx, s.ID, "preference", by, detail)
	text := fmt.Sprintf("%s: %s", by, got.Verdict())
	if added {
		text = fmt.Sprintf("%s added a note to their answer (%s)", by, got.Verdict())
	}
	p := got
	e.notify(Event{Kind: EventPreference, Session: s, Preference: &p, Text: text})
	e.bump()
}

// findRung0 is trial n's completed rung-0 record among trials, nil when there is none.
func findRung0(trials []Trial, n int) *Trial {
	for i := range trials {
		if trials[i].Number == n && trials[i].Rung == 0 && trials[i].State == TrialCompleted {
			return &trials[i]
		}
	}
	return nil
}

// OpenCard returns the session's A/B card that waits for an answer, if any (at most one
// waits at a time).
func (s Session) OpenCard() (Preference, bool) {
	for _, p := range s.Preferences {
		if p.Open() {
			return p, true
		}
	}
	return Preference{}, false
}

// askCard opens an A/B card on x for rung-0 trial t that has just finished, when the rules
// allow (docs/design.md §1): cards are on, fewer than preferences.max were asked, none is
// open, t passed the gates and scores within NoiseMargin of the best trial so far (or
// above it), and the two were not compared yet. A is t, B the best so far. r0 is every
// rung-0 trial as stored, t included.
func askCard(x *Session, t Trial, r0 []Trial, now time.Time) *Preference {
	if !x.Settings.Preferences.Asks() || t.Rung != 0 || t.Number == 0 || !t.Eligible() {
		return nil
	}
	asked := 0
	for _, p := range x.Preferences {
		if p.Asked {
			asked++
		}
		if p.Open() {
			return nil
		}
	}
	if asked >= x.Settings.Preferences.Max {
		return nil
	}
	var others []Trial
	for _, o := range r0 {
		if o.Number != t.Number && o.State.Terminal() {
			others = append(others, o)
		}
	}
	best, ok := bestOf(x.Settings, r0, others)
	if !ok || t.Score.Total < best.Score.Total-NoiseMargin {
		return nil
	}
	for _, p := range x.Preferences {
		if p.Has(t.Number, best.Number) {
			return nil
		}
	}
	p := Preference{Seq: len(x.Preferences) + 1, A: t.Number, B: best.Number, AConfig: t.RewardConfig.Clone(),
		BConfig: best.RewardConfig.Clone(), Asked: true, AskedAt: now}
	x.Preferences = append(x.Preferences, p)
	return &p
}

// expireCards closes the session's open A/B card, quietly: its rung ended (or the session)
// before anyone answered it.
func (e *Engine) expireCards(ctx context.Context, id string) {
	if s, err := e.cfg.Store.Session(ctx, id); err != nil {
		e.log.Error("reading the session", "session", id, "err", err)
		return
	} else if _, open := s.OpenCard(); !open {
		return
	}
	var gone []Preference
	s, err := e.cfg.Store.UpdateSession(ctx, id, func(x *Session) error {
		gone = nil
		for i := range x.Preferences {
			if x.Preferences[i].Open() {
				x.Preferences[i].Expired = true
				gone = append(gone, x.Preferences[i])
			}
		}
		return nil
	})
	if err != nil {
		e.log.Error("expiring the A/B card", "session", id, "err", err)
		return
	}
	for _, p := range gone {
		e.audit(ctx, id, "preference_expired", System, map[string]any{"seq": p.Seq, "a": p.A, "b": p.B})
		e.notify(Event{Kind: EventPreference, Session: s, Preference: &p, Text: p.Verdict()})
	}
}

// Preferred reports whether a person said trial a walks better than trial b.
func Preferred(prefs []Preference, a, b int) bool {
	for _, p := range prefs {
		if w, l, ok := p.Winner(); ok && w == a && l == b {
			return true
		}
	}
	return false
}

// rankForPromotion orders the trials a rung promotes from, best first (docs/design.md §1):
// by their equal-training figure among trials, the session's (RankFigure), then people's
// preferences: of two trials within NoiseMargin of each other, the one a person preferred
// ranks above the other, and a trial a person said walks worse than the baseline goes after
// every tuned trial nobody said so of. ts are eligible trials of one rung; a preference
// never makes another trial eligible.
func rankForPromotion(st Settings, trials, ts []Trial, prefs []Preference) []Trial {
	out := slices.Clone(ts)
	figs := FiguresAmong(st, trials, ts)
	figs.Sort(out)
	// Each move puts a preferred trial just above the first trial within the margin that
	// it was preferred to; a cycle of preferences (8 over 5, 5 over 9, 9 over 8) would move
	// for ever, so the moves are bounded.
	for moves := 0; moves < len(out)*len(out); moves++ {
		moved := false
		for i := 0; i < len(out) && !moved; i++ {
			for j := i + 1; j < len(out); j++ {
				if figs.Of(out[i])-figs.Of(out[j]) <= NoiseMargin && Preferred(prefs, out[j].Number, out[i].Number) {
					t := out[j]
					out = slices.Insert(slices.Delete(out, j, j+1), i, t)
					moved = true
					break
				}
			}
		}
		if !moved {
			break
		}
	}
	worse := func(t Trial) bool { return t.Number != 0 && Preferred(prefs, 0, t.Number) }
	slices.SortStableFunc(out, func(a, b Trial) int {
		switch wa, wb := worse(a), worse(b); {
		case wa && !wb:
			return 1
		case wb && !wa:
			return -1
		}
		return 0
	})
	return out
}

package session

import (
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Rule is what a person's feedback asks of one scalar (docs/design.md §2, "Constraints").
type Rule string

// Rules. "Up" is the direction a reader of a card sees as a factor above 1: for a weight its
// magnitude grows (the term gets stronger: foot_slip −0.25 → −0.5 is up), for a param its
// value grows. "weaker foot_slip" means the penalty must not get stronger; a value word said
// of a penalty turns round (valueWords): "lower foot_slip" means it must not get weaker.
const (
	RuleKeep   Rule = "keep"    // must not change: keep, leave, freeze, don't touch
	RuleNoUp   Rule = "no_up"   // must not go up: lower, decrease, less, weaker, too strong
	RuleNoDown Rule = "no_down" // must not go down: higher, increase, more, stronger, too weak
)

// Constraint is one rule on one scalar, read from the feedback of a rejected proposal. It
// holds for the rest of the session, for every proposer (SessionConstraints); a later
// feedback about the same scalar replaces it.
type Constraint struct {
	Name     string `json:"name"`
	Param    bool   `json:"param,omitempty"`
	Rule     Rule   `json:"rule"`
	Proposal int    `json:"proposal"` // the rejected proposal (Seq) whose feedback said it
}

// String says the constraint as the reply to a reject and the advisor's prompt show it:
// "keep is_terminated", "foot_slip no stronger", "params.foot_gait.period no higher".
func (c Constraint) String() string {
	up, down, name := "stronger", "weaker", c.Name
	if c.Param {
		up, down, name = "higher", "lower", ParamLabel(c.Name) // one vocabulary: as cards show it
	}
	switch c.Rule {
	case RuleNoUp:
		return name + " no " + up
	case RuleNoDown:
		return name + " no " + down
	}
	return "keep " + name
}

// Allows says whether the constraint lets its scalar move up (up) or down.
func (c Constraint) Allows(up bool) bool {
	switch c.Rule {
	case RuleKeep:
		return false
	case RuleNoUp:
		return !up
	case RuleNoDown:
		return up
	}
	return true
}

// AllowsMove says whether scalar name may move up (a weight's magnitude, a param's value)
// or down under cs. Every proposer asks it, so that a constraint holds whoever proposes.
func AllowsMove(cs []Constraint, name string, up bool) bool {
	for _, c := range cs {
		if c.Name == name && !c.Allows(up) {
			return false
		}
	}
	return true
}

// BrokenConstraints lists the constraints of cs that patch breaks as a change from base.
func BrokenConstraints(cs []Constraint, base RewardConfig, patch Patch) []Constraint {
	var out []Constraint
	for _, c := range cs {
		m, bm := patch.Weights, base.Weights
		if c.Param {
			m, bm = patch.Params, base.Params
		}
		v, ok := m[c.Name]
		if !ok {
			continue
		}
		old := bm[c.Name]
		if nearlyEqual(old, v) {
			continue
		}
		up := v > old
		if !c.Param {
			up = math.Abs(v) > math.Abs(old)
		}
		if !c.Allows(up) {
			out = append(out, c)
		}
	}
	return out
}

// problem is the constraint as a refusal of a patch that breaks it.
func (c Constraint) problem() string {
	kind, what := "weights.", ""
	if c.Param {
		kind = "params."
	}
	switch c.Rule {
	case RuleKeep:
		what = "must not change (leave it out of the patch)"
	case RuleNoUp:
		what = "must not go up"
		if !c.Param {
			what = "must not get stronger (its magnitude must not grow)"
		}
	case RuleNoDown:
		what = "must not go down"
		if !c.Param {
			what = "must not get weaker (its magnitude must not shrink)"
		}
	}
	return fmt.Sprintf("%s%s %s: a person asked for %q when rejecting proposal %d", kind, c.Name, what, c.String(), c.Proposal)
}

// MergeConstraints adds newer constraints to old: a scalar named again takes its newer rule
// (a person may change their mind), the rest keep theirs, in the order first named.
func MergeConstraints(old, newer []Constraint) []Constraint {
	out := append([]Constraint(nil), old...)
	for _, c := range newer {
		replaced := false
		for i := range out {
			if out[i].Name == c.Name && out[i].Param == c.Param {
				out[i], replaced = c, true
			}
		}
		if !replaced {
			out = append(out, c)
		}
	}
	return out
}

// SessionConstraints are the constraints in force in a session whose proposals are ps
// (oldest first): what the feedback of each rejected one asked (Decision.Read, stored with
// the decision, so they survive a restart), a later word on a scalar replacing an earlier.
func SessionConstraints(ps []Proposal) []Constraint {
	var out []Constraint
	for _, p := range ps {
		if p.State == ProposalRejected && p.Decision != nil {
			out = MergeConstraints(out, p.Decision.Read)
		}
	}
	return out
}

// ConstraintList says constraints in one line: "keep is_terminated; foot_slip no stronger".
func ConstraintList(cs []Constraint) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

// FeedbackNote says what became of a rejection's feedback: the constraints read from it,
// which every proposer honours, or plainly that only DeepSeek's next prompt reads it
// (advisor: one is configured), since the numeric sampler reads no free text.
func FeedbackNote(read []Constraint, advisor bool) string {
	if len(read) > 0 {
		note := "read: " + ConstraintList(read) + ". Every proposer keeps to this for the rest of the session"
		if advisor {
			note += "; the whole feedback also goes to DeepSeek's next prompt"
		}
		return note + "."
	}
	hint := "name a term or param with keep, lower or higher (e.g. “keep is_terminated, lower foot_slip”) to bind every proposer"
	if advisor {
		return "no term or param was named with keep, lower or higher, so this feedback reaches only DeepSeek's next prompt; the numeric sampler cannot read it (" + hint + ")."
	}
	return "no term or param was named with keep, lower or higher, and this session's numeric sampler cannot read free text, so this feedback changes no proposal (" + hint + ")."
}

// ReplacedNote points out the constraints of read that turn round or loosen what earlier
// feedback (old, in force) asked of the same scalar: the newer word holds, and the person
// is told, "" when nothing changed.
func ReplacedNote(old, read []Constraint) string {
	var parts []string
	for _, c := range read {
		for _, o := range old {
			if o.Name == c.Name && o.Param == c.Param && o.Rule != c.Rule {
				parts = append(parts, fmt.Sprintf("%q replaces %q (asked when rejecting proposal %d)", c.String(), o.String(), o.Proposal))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "this contradicts earlier feedback: " + strings.Join(parts, "; ") + "; the newer word holds."
}

// OverrideNote says that a person's edit changes scalars that earlier feedback constrained:
// a person may override a constraint for the patch they wrote; it holds for later proposals.
func OverrideNote(broken []Constraint) string {
	if len(broken) == 0 {
		return ""
	}
	return "this edit overrides " + ConstraintList(broken) + " (asked when rejecting earlier proposals): a person's edit may; proposers still keep to it."
}

// The feedback grammar of ReadConstraints. A rule word binds the term and param names next
// to it (before or after, through connecting words such as "the", "weight", "and"); any
// other word ends the binding, so "more falls since is_terminated doubled" reads nothing.
var (
	feedbackToken = regexp.MustCompile(`[\p{L}\p{N}_]+(?:\.[\p{L}\p{N}_]+)*(?:'[\p{L}]+)?|[.;!?\n]`)

	keepWords = words("keep keeping kept leave leaving freeze frozen fix fixed hold stay stays unchanged alone constant preserve untouched")
	// touchWords mean "keep" only when negated: "don't touch", "do not change".
	touchWords = words("touch touching change changing move moving modify alter adjust tweak mess")
	downWords  = words("lower lowering lowered decrease decreasing decreased reduce reducing reduced less weaker weaken weakening smaller soften shrink halve lessen down")
	upWords    = words("higher raise raising raised increase increasing increased more stronger strengthen larger bigger boost double up heavier")
	// valueWords speak of a value, not of a strength: said of a penalty (a term whose
	// default weight is negative) they mean its value as the card prints it, or what it
	// penalises, both of which a stronger penalty lowers, so they turn round ("lower
	// foot_slip": less foot slip, −0.25 → −0.5). A clause that speaks of the penalty itself
	// ("raise the action_rate_l2 penalty") means its size, as strength words do.
	valueWords = words("lower lowering lowered decrease decreasing decreased reduce reducing reduced less down higher raise raising raised increase increasing increased more up high low")
	// tooUp/tooDown follow "too": "too strong" asks for less of it, "too weak" for more.
	tooUp     = words("high strong big large much heavy harsh aggressive")
	tooDown   = words("low weak small little light soft")
	negations = words("not no never don't dont doesn't shouldn't mustn't stop avoid without")
	linkWords = words("and or the a an its it this that these weight weights term terms param params penalty penalties reward rewards of on for is are be should must please as value values both also to at do so very bit")
)

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// ReadConstraints reads what feedback asks of single scalars of space, as constraints of the
// rejected proposal seq: a term or param name with keep, leave, freeze or don't touch is
// kept; with lower, decrease, less or weaker it may not go up; with higher, increase, more
// or stronger it may not go down ("up" as Rule says: a weight's magnitude). A negation turns
// a direction round ("don't lower X": X may not go down). Names are matched exactly (any
// case, "weights."/"params." prefixes allowed); anything it cannot read is left to the
// advisor's prompt, and the reply says what was read.
func ReadConstraints(feedback string, space *Space, seq int) []Constraint {
	text := strings.ToLower(strings.NewReplacer("’", "'", "‘", "'").Replace(feedback))
	var out []Constraint
	byValue := false // the rule binding names was said with a value word (valueWords)
	tokens := feedbackToken.FindAllString(text, -1)
	sizeClause := sizeClauses(tokens)
	clause := 0
	set := func(name string, param bool, r Rule) {
		if t, ok := space.Term(name); ok && !param && byValue && !sizeClause[clause] && r != RuleKeep && t.Default < 0 {
			r = flip(r, true)
		}
		out = MergeConstraints(out, []Constraint{{Name: name, Param: param, Rule: r, Proposal: seq}})
	}
	type name struct {
		n     string
		param bool
	}
	var pending []name // names seen before any rule word of the clause
	var rule Rule      // the rule binding names that follow, "" for none
	negated, too := false, false
	reset := func() { pending, rule, negated, too = nil, "", false, false }
	for _, tok := range tokens {
		switch {
		case strings.ContainsAny(tok, ".;!?\n") && len(tok) == 1:
			reset()
			clause++
			continue
		case negations[tok]:
			negated = true
			continue
		case tok == "too":
			too = true
			continue
		}
		if n, param, ok := scalarName(tok, space); ok {
			if rule != "" {
				set(n, param, rule)
			} else {
				pending = append(pending, name{n, param})
			}
			continue
		}
		r := ruleOf(tok, negated, too)
		if r == "" {
			if !linkWords[tok] {
				// A word that is neither a name, a rule nor a link ends what binds.
				pending, rule, negated, too = nil, "", false, false
			}
			continue
		}
		negated, too = false, false
		rule, byValue = r, valueWords[tok]
		for _, p := range pending {
			set(p.n, p.param, r)
		}
		pending = nil
	}
	return out
}

// sizeClauses says, per clause of tokens (ended by . ; ! ? or a new line), whether it speaks
// of a penalty's size ("penalty", "penalties"): its value words then mean strength.
func sizeClauses(tokens []string) []bool {
	out := []bool{false}
	for _, tok := range tokens {
		switch tok {
		case ".", ";", "!", "?", "\n":
			out = append(out, false)
		case "penalty", "penalties":
			out[len(out)-1] = true
		}
	}
	return out
}

// ruleOf is the rule a word asks for, given a negation or "too" before it; "" for none.
func ruleOf(w string, negated, too bool) Rule {
	var up bool
	switch {
	case too && tooUp[w]: // "too strong": it must not go further up
		return flip(RuleNoUp, negated)
	case too && tooDown[w]:
		return flip(RuleNoDown, negated)
	case keepWords[w]: // "no, keep X" keeps X too
		return RuleKeep
	case touchWords[w]:
		if negated {
			return RuleKeep
		}
		return ""
	case downWords[w]:
		up = false
	case upWords[w]:
		up = true
	default:
		return ""
	}
	r := RuleNoUp // "lower X" forbids up
	if up {
		r = RuleNoDown
	}
	return flip(r, negated) // "don't lower X" forbids down
}

func flip(r Rule, negated bool) Rule {
	if !negated {
		return r
	}
	if r == RuleNoUp {
		return RuleNoDown
	}
	return RuleNoUp
}

// scalarName matches a word to a term or param of space.
func scalarName(w string, space *Space) (string, bool, bool) {
	if space == nil {
		return "", false, false
	}
	if n, ok := strings.CutPrefix(w, "weights."); ok {
		_, found := space.Term(n)
		return n, false, found
	}
	if n, ok := strings.CutPrefix(w, "params."); ok {
		_, found := space.Param(n)
		return n, true, found
	}
	if _, ok := space.Term(w); ok {
		return w, false, true
	}
	if _, ok := space.Param(w); ok {
		return w, true, true
	}
	return "", false, false
}

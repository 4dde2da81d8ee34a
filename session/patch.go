package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// RewardConfig is a full reward configuration: every term's weight and every param.
// A Patch has the same shape and names only what changes.
type RewardConfig struct {
	Weights map[string]float64 `json:"weights"`
	Params  map[string]float64 `json:"params"`
}

// Patch is a proposal's change to a RewardConfig.
type Patch = RewardConfig

// Clone returns a deep copy, so callers can hand configurations around without aliasing maps.
func (c RewardConfig) Clone() RewardConfig {
	out := RewardConfig{Weights: make(map[string]float64, len(c.Weights)), Params: make(map[string]float64, len(c.Params))}
	for k, v := range c.Weights {
		out.Weights[k] = v
	}
	for k, v := range c.Params {
		out.Params[k] = v
	}
	return out
}

// Len is the number of scalars named, weights and params together.
func (c RewardConfig) Len() int { return len(c.Weights) + len(c.Params) }

// Equal reports whether two configurations name the same scalars with the same values.
func (c RewardConfig) Equal(o RewardConfig) bool {
	return sameValues(c.Weights, o.Weights) && sameValues(c.Params, o.Params)
}

func sameValues(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !nearlyEqual(v, w) {
			return false
		}
	}
	return true
}

// nearlyEqual treats values that differ only by float formatting noise (a JSON round trip,
// a value typed back from chat) as the same.
func nearlyEqual(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// InvalidError is a refusal that names every problem found, so a person fixes all at once.
type InvalidError struct {
	What     string
	Problems []string
}

func (e *InvalidError) Error() string {
	return e.What + ": " + strings.Join(e.Problems, "; ")
}

// Tried is a configuration already run in a session, labelled for the duplicate message.
type Tried struct {
	Label  string
	Config RewardConfig
	// Rejected marks a proposal a person rejected: never proposed again in the session.
	Rejected bool
}

// DecodePatch decodes a patch strictly: only "weights" and "params" objects, JSON numbers
// only. Every problem is reported, not just the first.
func DecodePatch(data []byte) (Patch, error) {
	return decodeConfig(data, "patch")
}

// DecodeConfig decodes a full reward configuration with the same strictness as a patch;
// whether it is complete is Space.CheckConfig's business.
func DecodeConfig(data []byte) (RewardConfig, error) {
	return decodeConfig(data, "reward configuration")
}

func decodeConfig(data []byte, what string) (RewardConfig, error) {
	out := RewardConfig{Weights: map[string]float64{}, Params: map[string]float64{}}
	var top map[string]json.RawMessage
	if err := strictJSON(data, &top); err != nil {
		return out, &InvalidError{What: what, Problems: []string{"malformed JSON: " + err.Error()}}
	}
	if top == nil {
		return out, &InvalidError{What: what, Problems: []string{`must be a JSON object {"weights": {...}, "params": {...}}`}}
	}
	var probs []string
	for _, k := range sortedRawKeys(top) {
		var dst map[string]float64
		switch k {
		case "weights":
			dst = out.Weights
		case "params":
			dst = out.Params
		default:
			probs = append(probs, fmt.Sprintf("unknown field %q (only \"weights\" and \"params\")", k))
			continue
		}
		if strings.TrimSpace(string(top[k])) == "null" {
			continue // an empty section, as encoding/json writes a nil map
		}
		var inner map[string]json.RawMessage
		if err := strictJSON(top[k], &inner); err != nil || inner == nil {
			probs = append(probs, fmt.Sprintf("%s: must be an object of name: number", k))
			continue
		}
		for _, name := range sortedRawKeys(inner) {
			v, err := jsonNumber(inner[name])
			if err != nil {
				probs = append(probs, fmt.Sprintf("%s.%s: %v", k, name, err))
				continue
			}
			dst[name] = v
		}
	}
	if len(probs) > 0 {
		return out, &InvalidError{What: what, Problems: probs}
	}
	return out, nil
}

func strictJSON(data []byte, v any) error {
	if err := noDuplicateKeys(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		if strings.Contains(err.Error(), "invalid character 'N'") || strings.Contains(err.Error(), "invalid character 'I'") ||
			strings.Contains(err.Error(), "in literal null") && bytes.Contains(bytes.ToLower(data), []byte("nan")) {
			return fmt.Errorf("%w (NaN and Infinity are not JSON numbers)", err)
		}
		if errors.Is(err, io.EOF) {
			return errors.New("empty input")
		}
		return err
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// noDuplicateKeys refuses an object that names a key twice: encoding/json would keep the
// last silently, and a patch whose first value vanished is not what its author meant.
func noDuplicateKeys(data []byte) error {
	type frame struct {
		object    bool
		keys      map[string]bool
		expectKey bool
		path      string // where this container is
		last      string // where the current key's value is
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // syntax errors are the decoder's to report
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				path := ""
				if top != nil {
					path = top.path
					if top.object {
						path = top.last
					}
				}
				stack = append(stack, &frame{object: d == '{', keys: map[string]bool{}, expectKey: d == '{', path: path})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		}
		if top != nil && top.object && top.expectKey {
			k, _ := tok.(string)
			name := k
			if top.path != "" {
				name = top.path + "." + k
			}
			if top.keys[k] {
				return fmt.Errorf("duplicate key %q", name)
			}
			top.keys[k] = true
			top.last, top.expectKey = name, false
			continue
		}
		valueDone()
	}
}

func jsonNumber(raw json.RawMessage) (float64, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return 0, fmt.Errorf("missing value")
	}
	switch s[0] {
	case '"':
		return 0, fmt.Errorf("must be a number, got the string %s", truncate(s, 40))
	case 't', 'f':
		return 0, fmt.Errorf("must be a number, got %s", s)
	case 'n':
		return 0, fmt.Errorf("must be a number, got null")
	case '{', '[':
		return 0, fmt.Errorf("must be a number, got an %s", map[byte]string{'{': "object", '[': "array"}[s[0]])
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("must be a finite number, got %s", truncate(s, 40))
	}
	return v, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func sortedRawKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Merge applies patch to base and returns a new configuration; base is not modified.
func Merge(base RewardConfig, patch Patch) RewardConfig {
	out := base.Clone()
	for k, v := range patch.Weights {
		out.Weights[k] = v
	}
	for k, v := range patch.Params {
		out.Params[k] = v
	}
	return out
}

// Validate checks patch against base under the proposal rules of docs/design.md §2 and returns
// the merged configuration, its values rounded (Round), or an *InvalidError naming every
// broken rule. tried holds the configurations already run in the session; a merged result
// equal to one is a duplicate.
func (s *Space) Validate(base RewardConfig, patch Patch, tried []Tried) (RewardConfig, error) {
	// What is checked, merged and compared with the tried list is what will be stored.
	patch = s.Round(base, patch)
	weightProbs, weightsSame := s.checkWeights(base, patch.Weights)
	paramProbs, paramsSame := s.checkParams(base, patch.Params)
	// Changes are counted after merging: a value equal to base's is no change (an edit
	// may name one to leave it as it is). A name the space does not know counts.
	var probs []string
	if n := patch.Len() - weightsSame - paramsSame; n > s.MaxChanges {
		probs = append(probs, fmt.Sprintf("%d changes: at most %d scalars may change per proposal", n, s.MaxChanges))
	}
	probs = append(append(probs, weightProbs...), paramProbs...)
	if patch.Len() == 0 {
		probs = append(probs, "empty patch: at least 1 scalar must change")
	} else if weightsSame+paramsSame == patch.Len() && len(probs) == 0 {
		probs = append(probs, "the patch changes nothing: every value equals the current one")
	}
	merged := Merge(base, patch)
	probs = append(probs, s.orderProblems(patch, merged)...)
	if len(probs) == 0 {
		if dup := duplicateOf(merged, tried); dup != "" {
			probs = append(probs, dup)
		}
	}
	if len(probs) > 0 {
		return RewardConfig{}, &InvalidError{What: "patch refused", Problems: probs}
	}
	return merged, nil
}

// checkWeights checks a patch's weights against base: each names a known term, is finite
// and keeps to the term's rules (checkWeight); same counts those equal to base's (a term
// base lacks is at its default).
func (s *Space) checkWeights(base RewardConfig, weights map[string]float64) (probs []string, same int) {
	for _, name := range sortedKeys(weights) {
		v := weights[name]
		t, ok := s.Term(name)
		if !ok {
			probs = append(probs, "weights."+name+": "+s.unknown(name, "term", len(probs) < hintedUnknowns))
			continue
		}
		if !finite(v) {
			probs = append(probs, fmt.Sprintf("weights.%s: %g is not a finite number", name, v))
			continue
		}
		old, _ := s.current(base, "weight", name)
		if nearlyEqual(old, v) {
			same++
		}
		probs = append(probs, s.checkWeight(t, old, v)...)
	}
	return probs, same
}

// checkParams checks a patch's params against base: each names a known param, is finite
// and within the param's bounds; same counts those equal to base's (a param base lacks is
// at its default).
func (s *Space) checkParams(base RewardConfig, params map[string]float64) (probs []string, same int) {
	for _, name := range sortedKeys(params) {
		v := params[name]
		p, ok := s.Param(name)
		if !ok {
			probs = append(probs, "params."+name+": "+s.unknown(name, "param", len(probs) < hintedUnknowns))
			continue
		}
		if !finite(v) {
			probs = append(probs, fmt.Sprintf("params.%s: %g is not a finite number", name, v))
			continue
		}
		if old, _ := s.current(base, "param", name); nearlyEqual(old, v) {
			same++
		}
		if v < p.Min || v > p.Max {
			probs = append(probs, fmt.Sprintf("params.%s: %g is outside its bounds [%g, %g]", name, v, p.Min, p.Max))
		}
	}
	return probs, same
}

// orderProblems names each ordered pair of params (s.Orders) that the patch touches and
// that merged no longer keeps strictly in order.
func (s *Space) orderProblems(patch Patch, merged RewardConfig) []string {
	var probs []string
	for _, o := range s.Orders {
		lo, hi := merged.Params[o.Lower], merged.Params[o.Upper]
		if (patchHas(patch.Params, o.Lower) || patchHas(patch.Params, o.Upper)) && !(lo < hi) {
			probs = append(probs, fmt.Sprintf("params.%s (%g) must stay below params.%s (%g)", o.Lower, lo, o.Upper, hi))
		}
	}
	return probs
}

// duplicateOf names the first configuration of tried that merged equals, whether it was
// run or rejected earlier in the session ("" when merged is new).
func duplicateOf(merged RewardConfig, tried []Tried) string {
	for _, t := range tried {
		if merged.Equal(t.Config) {
			if t.Rejected {
				return "duplicate: the merged configuration equals " + t.Label + ", rejected earlier in this session"
			}
			return "duplicate: the merged configuration equals " + t.Label + ", already tried in this session"
		}
	}
	return ""
}

func patchHas(m map[string]float64, k string) bool { _, ok := m[k]; return ok }

func (s *Space) checkWeight(t Term, old, v float64) []string {
	var probs []string
	name := "weights." + t.Name
	if v == 0 && !t.MayBeZero {
		probs = append(probs, fmt.Sprintf("%s: this term may not be 0", name))
	} else if v < t.Min || v > t.Max {
		probs = append(probs, fmt.Sprintf("%s: %g is outside its bounds [%g, %g]", name, v, t.Min, t.Max))
	}
	if old != 0 && v != 0 {
		if (old < 0) != (v < 0) {
			probs = append(probs, fmt.Sprintf("%s: sign flip from %g to %g (a weight keeps its sign)", name, old, v))
		} else if f := v / old; f < s.StepMin*(1-1e-9) || f > s.StepMax*(1+1e-9) {
			probs = append(probs, fmt.Sprintf("%s: %g → %g is a step of %.3g×; one proposal may move a weight only %g×–%g×", name, old, v, f, s.StepMin, s.StepMax))
		}
	}
	return probs
}

// CheckConfig validates a full configuration: every term and param present, no unknown
// name, each value inside its bounds, non-zero where required, thresholds ordered.
func (s *Space) CheckConfig(c RewardConfig) error {
	var probs []string
	for _, name := range sortedKeys(c.Weights) {
		if _, ok := s.Term(name); !ok {
			probs = append(probs, "weights."+name+": "+s.unknown(name, "term", len(probs) < hintedUnknowns))
		}
	}
	for _, name := range sortedKeys(c.Params) {
		if _, ok := s.Param(name); !ok {
			probs = append(probs, "params."+name+": "+s.unknown(name, "param", len(probs) < hintedUnknowns))
		}
	}
	for _, t := range s.Terms {
		v, ok := c.Weights[t.Name]
		switch {
		case !ok:
			probs = append(probs, "weights."+t.Name+": missing")
		case !finite(v):
			probs = append(probs, fmt.Sprintf("weights.%s: %g is not a finite number", t.Name, v))
		case v == 0 && !t.MayBeZero:
			probs = append(probs, fmt.Sprintf("weights.%s: this term may not be 0", t.Name))
		case v < t.Min || v > t.Max:
			probs = append(probs, fmt.Sprintf("weights.%s: %g is outside its bounds [%g, %g]", t.Name, v, t.Min, t.Max))
		}
	}
	for _, p := range s.Params {
		v, ok := c.Params[p.Name]
		switch {
		case !ok:
			probs = append(probs, "params."+p.Name+": missing")
		case !finite(v):
			probs = append(probs, fmt.Sprintf("params.%s: %g is not a finite number", p.Name, v))
		case v < p.Min || v > p.Max:
			probs = append(probs, fmt.Sprintf("params.%s: %g is outside its bounds [%g, %g]", p.Name, v, p.Min, p.Max))
		}
	}
	for _, o := range s.Orders {
		lo, okLo := c.Params[o.Lower]
		hi, okHi := c.Params[o.Upper]
		// A missing or non-finite one is named above; its order would only repeat it.
		if okLo && okHi && finite(lo, hi) && !(lo < hi) {
			probs = append(probs, fmt.Sprintf("params.%s (%g) must stay below params.%s (%g)", o.Lower, lo, o.Upper, hi))
		}
	}
	if len(probs) > 0 {
		return &InvalidError{What: "reward configuration invalid", Problems: probs}
	}
	return nil
}

// hintedUnknowns is how many problems a check lists before it stops looking for the known
// name closest to an unknown one: a hint costs an edit distance to every name, and an
// answer naming 100,000 unknown terms (issue 44) must not cost seconds for hints nobody
// reads (the advisor lists 20 problems).
const hintedUnknowns = 20

// unknown explains a name that is not a kind ("term" or "param") of the space: the other
// kind, a close misspelling (when hint), or nothing known.
func (s *Space) unknown(name, kind string, hint bool) string {
	if _, ok := s.Term(name); ok && kind == "param" {
		return "is a reward term, not a param: put it under \"weights\""
	}
	if _, ok := s.Param(name); ok && kind == "term" {
		return "is a param, not a reward term: put it under \"params\""
	}
	if !hint {
		return "unknown " + kind
	}
	return "unknown " + kind + s.suggest(name)
}

// Suggest returns the known name closest to a misspelt one, if any is close.
func (s *Space) Suggest(name string) (string, bool) {
	hint := s.suggest(name)
	if hint == "" {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(hint, " (did you mean "), "?)"), true
}

// suggest returns a " (did you mean X?)" hint for a misspelt name, or "".
func (s *Space) suggest(name string) string { return DidYouMean(name, s.Names()) }

// DidYouMean is the hint " (did you mean X?)" for the one of names closest to a mistyped
// word (Closest), "" when none is close: every refusal of a name or a value that is one of
// a few words ends with it.
func DidYouMean(word string, names []string) string {
	if best, ok := Closest(word, names); ok {
		return " (did you mean " + best + "?)"
	}
	return ""
}

// Closest returns the one of names nearest to a misspelt name, when it is near enough to
// be what was meant: only close misspellings earn a hint, since a wild guess would mislead.
func Closest(name string, names []string) (string, bool) {
	best, bestD := "", min(3, max(2, len(name)/4)+1)
	for _, n := range names {
		if d := EditDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best, best != ""
}

// EditDistance is the optimal-string-alignment distance over runes: Levenshtein plus
// transposition of neighbours, the commonest typo ("statsu", "sede").
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 99 // nothing that long is a typo of a command or a name
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Change is one scalar that differs between two configurations.
type Change struct {
	Kind string  `json:"kind"` // "weight" or "param"
	Name string  `json:"name"`
	Old  float64 `json:"old"`
	New  float64 `json:"new"`
}

// Factor is New/Old, or 0 when Old is 0 (a term switched on has no factor).
func (c Change) Factor() float64 {
	if c.Old == 0 {
		return 0
	}
	return c.New / c.Old
}

// Diff lists what differs from a to b, weights first, in the space's table order, then any
// names the space does not know, sorted.
func (s *Space) Diff(a, b RewardConfig) []Change {
	var out []Change
	seen := map[string]bool{}
	add := func(kind, name string, am, bm map[string]float64) {
		if seen[kind+name] {
			return
		}
		seen[kind+name] = true
		av, aok := am[name]
		bv, bok := bm[name]
		if aok && bok && nearlyEqual(av, bv) || !aok && !bok {
			return
		}
		out = append(out, Change{Kind: kind, Name: name, Old: av, New: bv})
	}
	for _, t := range s.Terms {
		add("weight", t.Name, a.Weights, b.Weights)
	}
	for _, k := range append(sortedKeys(a.Weights), sortedKeys(b.Weights)...) {
		add("weight", k, a.Weights, b.Weights)
	}
	for _, p := range s.Params {
		add("param", p.Name, a.Params, b.Params)
	}
	for _, k := range append(sortedKeys(a.Params), sortedKeys(b.Params)...) {
		add("param", k, a.Params, b.Params)
	}
	return out
}

// WithoutUnchanged is patch less the values equal to base's (rounded as Validate rounds
// them, and a name base lacks at its default, as Validate counts them), and those values:
// a person may name one in an edit to leave it as it is, and the patch that runs names only
// what changes.
func (s *Space) WithoutUnchanged(base RewardConfig, patch Patch) (Patch, []Change) {
	patch = s.Round(base, patch)
	changed := Patch{Weights: map[string]float64{}, Params: map[string]float64{}}
	var same []Change
	for _, kind := range []struct {
		name    string
		in, out map[string]float64
	}{{"weight", patch.Weights, changed.Weights}, {"param", patch.Params, changed.Params}} {
		for _, name := range sortedKeys(kind.in) {
			v := kind.in[name]
			if old, ok := s.current(base, kind.name, name); ok && nearlyEqual(old, v) {
				same = append(same, Change{Kind: kind.name, Name: name, Old: v, New: v})
				continue
			}
			kind.out[name] = v
		}
	}
	return changed, same
}

// current is base's value of the weight or param name (kind "weight" or "param"): its own,
// or the space's default when base lacks it; false when neither base nor the space has it.
func (s *Space) current(base RewardConfig, kind, name string) (float64, bool) {
	if kind == "weight" {
		if v, ok := base.Weights[name]; ok {
			return v, true
		}
		t, ok := s.Term(name)
		return t.Default, ok
	}
	if v, ok := base.Params[name]; ok {
		return v, true
	}
	p, ok := s.Param(name)
	return p.Default, ok
}

// UnchangedNote says which values an edit named at their current value, left as they
// were and not counted as changes; "" when none.
func UnchangedNote(same []Change) string {
	if len(same) == 0 {
		return ""
	}
	parts := make([]string, len(same))
	for i, c := range same {
		parts[i] = fmt.Sprintf("%s = %g", c.Label(), c.New)
	}
	if len(same) == 1 {
		return parts[0] + " is its current value: left as it was (not a change)."
	}
	return strings.Join(parts, ", ") + " are their current values: left as they were (not changes)."
}

// PatchOf turns a diff back into the patch that produces b from a.
func PatchOf(changes []Change) Patch {
	p := Patch{Weights: map[string]float64{}, Params: map[string]float64{}}
	for _, c := range changes {
		if c.Kind == "weight" {
			p.Weights[c.Name] = c.New
		} else {
			p.Params[c.Name] = c.New
		}
	}
	return p
}

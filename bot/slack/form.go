package slack

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"tunebot/bot"
	"tunebot/session"
)

// Modal limits.
const (
	maxTitle     = 24 // a modal's title
	maxLabel     = 2000
	maxHint      = 2000
	maxInitial   = 3000
	maxMeta      = 3000
	patchInputs  = 4 // room for the at most 4 changes of a proposal
	valueActions = "value"
)

// patchBlock is the block ID of line i of an edit form.
func patchBlock(i int) string { return bot.FieldPatch + "_" + strconv.Itoa(i) }

// Modal builds the modal of a form. The patch field (one term=value per line) becomes one
// single-line input per change, at least four, so a person edits, clears or fills a line
// rather than a text area, and an error can point at its line. The form's ActionID is the
// view's callback_id; meta (where the answer goes) rides in private_metadata.
func Modal(f bot.Form, meta string) slack.ModalViewRequest {
	v := slack.ModalViewRequest{Type: slack.VTModal, Title: plain(bot.Truncate(f.Title, maxTitle)),
		Submit: plain("Submit"), Close: plain("Cancel"), CallbackID: f.ActionID, PrivateMetadata: bot.Truncate(meta, maxMeta)}
	var blocks []slack.Block
	for _, in := range f.Inputs {
		var hint *slack.TextBlockObject
		if in.Hint != "" {
			hint = plain(bot.Truncate(in.Hint, maxHint))
		}
		if in.ID == bot.FieldPatch {
			var lines []string
			for _, l := range strings.Split(in.Value, "\n") {
				if l = strings.TrimSpace(l); l != "" {
					lines = append(lines, l)
				}
			}
			n := max(patchInputs, len(lines))
			for i := range n {
				el := slack.NewPlainTextInputBlockElement(plain("term=value"), valueActions)
				if i < len(lines) {
					el = el.WithInitialValue(bot.Truncate(lines[i], maxInitial))
				}
				label := fmt.Sprintf("change %d", i+1)
				if i == 0 {
					label = bot.Truncate(in.Label, maxLabel)
				}
				b := slack.NewInputBlock(patchBlock(i), plain(label), nil, el).WithOptional(i > 0)
				if i == n-1 {
					b.Hint = hint
				}
				blocks = append(blocks, b)
			}
			continue
		}
		el := slack.NewPlainTextInputBlockElement(nil, valueActions).WithMultiline(in.Multiline)
		if in.Value != "" {
			el = el.WithInitialValue(bot.Truncate(in.Value, maxInitial))
		}
		blocks = append(blocks, slack.NewInputBlock(in.ID, plain(bot.Truncate(in.Label, maxLabel)), hint, el))
	}
	v.Blocks = slack.Blocks{BlockSet: blocks}
	return v
}

// FormValues reads a submitted modal back into the form's values: the patch lines joined
// one per line, every other input by its ID.
func FormValues(v slack.View) map[string]string {
	out := map[string]string{}
	if v.State == nil {
		return out
	}
	var patch []string
	ids := make([]string, 0, len(v.State.Values))
	for id := range v.State.Values {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		return patchIndex(ids[i]) < patchIndex(ids[j]) || patchIndex(ids[i]) == patchIndex(ids[j]) && ids[i] < ids[j]
	})
	for _, id := range ids {
		val := strings.TrimSpace(v.State.Values[id][valueActions].Value)
		if patchIndex(id) >= 0 {
			if val != "" {
				patch = append(patch, val)
			}
			continue
		}
		out[id] = val
	}
	if len(patch) > 0 || hasPatch(v) {
		out[bot.FieldPatch] = strings.Join(patch, "\n")
	}
	return out
}

func hasPatch(v slack.View) bool {
	for id := range v.State.Values {
		if patchIndex(id) >= 0 {
			return true
		}
	}
	return false
}

// patchIndex is i for the block ID patch_i, else -1.
func patchIndex(id string) int {
	rest, ok := strings.CutPrefix(id, bot.FieldPatch+"_")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// FieldErrors spreads the handler's refusal over the modal's inputs (bot.FieldErrors), so
// a person sees the error beside the value that caused it.
func FieldErrors(v slack.View, text string) map[string]string {
	var ids, values []string
	if v.State != nil {
		for id := range v.State.Values {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool {
			return patchIndex(ids[i]) < patchIndex(ids[j]) || patchIndex(ids[i]) == patchIndex(ids[j]) && ids[i] < ids[j]
		})
		for _, id := range ids {
			val := ""
			if patchIndex(id) >= 0 {
				val = v.State.Values[id][valueActions].Value
			}
			values = append(values, val)
		}
	}
	if len(ids) == 0 {
		ids = []string{bot.FieldPatch}
	}
	out := map[string]string{}
	for i, msg := range bot.FieldErrors(text, values) {
		out[ids[i]] = bot.Truncate(msg, 1000)
	}
	return out
}

func actor(id, name string) session.Actor {
	return session.Actor{Platform: Platform, ID: id, Name: name}
}

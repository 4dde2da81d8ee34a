package bot

import (
	"fmt"
	"strings"

	"tunebot/session"
)

// EditedChange says in one line the change that runs after a person's edit of p, as the
// answer to edit shows it: "pose 1 → 1.2 (×1.20), params.foot_gait.period 0.6 → 0.5 (×0.83)".
// "" when p was not edited.
func EditedChange(p session.Proposal, space *session.Space) string {
	if p.Decision == nil || p.Decision.Edited == nil {
		return ""
	}
	ch := space.Diff(p.Base, session.Merge(p.Base, *p.Decision.Edited))
	if len(ch) == 0 {
		return "it runs the base unchanged"
	}
	parts := make([]string, len(ch))
	for i, c := range ch {
		parts[i] = fmt.Sprintf("%s %s → %s (%s)", c.Label(), Num(c.Old), Num(c.New), Factor(c))
	}
	return "it runs: " + strings.Join(parts, ", ")
}

// withEdit puts the change that runs first in a why card of an edited proposal: the
// proposer's reasons that follow are for its patch before the edit.
func withEdit(c Card, p session.Proposal, space *session.Space) Card {
	if p.Decision == nil || p.Decision.Edited == nil {
		return c
	}
	ch := space.Diff(p.Base, session.Merge(p.Base, *p.Decision.Edited))
	edited := []Block{
		Text(fmt.Sprintf("edited by %s before it ran; the change that runs:", p.Decision.By)),
		{Kind: BlockTable, Table: DiffTable("the change that runs (as edited)", ch)},
		{Kind: BlockTable, Table: DiffTable("the change proposed (before the edit)", space.Diff(p.Base, session.Merge(p.Base, p.Patch)))},
		Text("the proposer's reasons, for its patch before the edit:"),
	}
	blocks := append([]Block{}, c.Blocks[:1]...) // the header
	blocks = append(blocks, edited...)
	c.Blocks = append(blocks, c.Blocks[1:]...)
	return c
}

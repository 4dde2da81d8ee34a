package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"tunebot/session"
)

// consoleUI is the terminal front end of tune and demo: it prints events and reads the
// thread-reply verbs from stdin.
type consoleUI struct {
	e   *env
	dir string
	mu  sync.Mutex
	eng *session.Engine
}

func newConsoleUI(e *env, dir string) *consoleUI { return &consoleUI{e: e, dir: dir} }

func (c *consoleUI) attach(eng *session.Engine) {
	c.mu.Lock()
	c.eng = eng
	c.mu.Unlock()
}

// Notify prints one line per event.
func (c *consoleUI) Notify(ctx context.Context, ev session.Event) {
	if ev.Kind == session.EventTrialProgress {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.e.stdout, "[%s] %s\n", ev.Time.Format("15:04:05"), ev.Text)
	if ev.Kind == session.EventProposalReady && ev.Proposal != nil && c.eng != nil {
		p := ev.Proposal
		for _, ch := range c.eng.Space().Diff(p.Base, session.Merge(p.Base, p.Patch)) {
			fmt.Fprintf(c.e.stdout, "    %-34s %12g → %-12g\n", ch.Name, ch.Old, ch.New)
		}
		fmt.Fprintf(c.e.stdout, "    rationale: %s\n    approve | reject <feedback> | edit term=value ... | pause | cancel\n", p.Rationale)
	}
}

func (c *consoleUI) readCommands(ctx context.Context, id string, in io.Reader) {
	sc := bufio.NewScanner(in)
	me := session.Actor{Platform: "console", ID: "console", Name: "you"}
	for sc.Scan() {
		if ctx.Err() != nil {
			return
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		var err error
		switch verb {
		case "approve":
			_, err = c.eng.Decide(ctx, session.DecideRequest{SessionID: id, Action: session.ActionApprove, By: me})
		case "reject":
			_, err = c.eng.Decide(ctx, session.DecideRequest{SessionID: id, Action: session.ActionReject, Feedback: strings.TrimSpace(rest), By: me})
		case "edit":
			err = c.edit(ctx, id, rest, me)
		case "pause":
			_, err = c.eng.Pause(ctx, id, me)
		case "resume":
			_, err = c.eng.Resume(ctx, id, me)
		case "cancel":
			_, err = c.eng.Cancel(ctx, id, me)
		default:
			err = fmt.Errorf("unknown command %q: approve, reject <feedback>, edit term=value ..., pause, resume, cancel", verb)
		}
		if err != nil {
			fmt.Fprintln(c.e.stdout, "  !", err)
		}
	}
}

func (c *consoleUI) edit(ctx context.Context, id, rest string, me session.Actor) error {
	ps, err := c.eng.Store().Proposals(ctx, id)
	if err != nil {
		return err
	}
	var pending *session.Proposal
	for i := range ps {
		if ps[i].State == session.ProposalPending {
			pending = &ps[i]
		}
	}
	if pending == nil {
		return fmt.Errorf("no proposal waits for a decision")
	}
	patch := pending.Patch.Clone()
	for _, kv := range strings.Fields(rest) {
		k, v, ok := strings.Cut(kv, "=")
		f, perr := strconv.ParseFloat(v, 64)
		if !ok || perr != nil {
			return fmt.Errorf("%q is not term=number", kv)
		}
		if _, isTerm := c.eng.Space().Term(k); isTerm {
			patch.Weights[k] = f
		} else {
			patch.Params[k] = f
		}
	}
	_, err = c.eng.Decide(ctx, session.DecideRequest{SessionID: id, Action: session.ActionEdit, Edit: &patch, By: me})
	return err
}

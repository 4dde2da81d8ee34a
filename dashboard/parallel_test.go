package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"tunebot/session"
)

// addParallel gives the fixture's session what parallel trials bring (issue 14): trials
// running on local GPUs and as Slurm jobs, and proposals 4 and 5 waiting beside 3.
func addParallel(t *testing.T, f *fixture) []session.Proposal {
	t.Helper()
	ctx := context.Background()
	for _, tr := range []session.Trial{
		{Number: 3, Iterations: 300, Progress: 60, State: session.TrialTraining, Source: "advisor", Proc: &session.Proc{Job: "train", GPUs: []int{1}}},
		{Number: 4, Iterations: 300, State: session.TrialTraining, Source: "advisor", Proc: &session.Proc{Job: "train", SlurmJob: "5150", JobState: "PENDING", JobReason: "Resources"}},
		{Number: 2, Rung: 1, Iterations: 900, StartIter: 300, Progress: 900, State: session.TrialEvaluating, Source: "edit", Proc: &session.Proc{Job: "evaluate", SlurmJob: "5149", JobState: "RUNNING", Node: "node2"}},
	} {
		tr.SessionID = sid
		if err := f.db.PutTrial(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	out := []session.Proposal{f.prop}
	for _, seq := range []int{4, 5} {
		p := f.prop
		p.ID, p.Seq, p.Number = fmt.Sprintf("1a2b3c4d-p%02d", seq), seq, seq+1
		if err := f.db.PutProposal(ctx, p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestSessionViewShowsRunningTrialsAndEveryPendingProposal: the session page's data has
// each running trial on its own line, as chat shows it, and every waiting proposal; the
// page's approve of one proposal decides that one only.
func TestSessionViewShowsRunningTrialsAndEveryPendingProposal(t *testing.T) {
	f := newFixture(t)
	props := addParallel(t, f)
	c := f.signIn(t, alice)
	v := decode(t, c.get("/api/sessions/"+sid))
	want := []string{
		"trial 2 @ rung 1 · evaluating · Slurm job 5149 RUNNING on node2",
		"trial 3 @ rung 0 · training 60/300 (20%) · GPU 1",
		"trial 4 @ rung 0 · training 0/300 · Slurm job 5150 PENDING (Resources)",
	}
	if got := fmt.Sprint(v["running"]); got != fmt.Sprint(want) {
		t.Errorf("running %s\nwant    %s", got, want)
	}
	pending := 0
	for _, p := range v["proposals"].([]any) {
		if p.(map[string]any)["state"] == "pending" {
			pending++
		}
	}
	if pending != 3 {
		t.Errorf("%d pending proposals in the view, want 3", pending)
	}
	code, r := c.act("/api/sessions/"+sid+"/proposals/"+props[1].ID+"/approve", "")
	if code != http.StatusOK || r["ok"] != true {
		t.Fatalf("approve proposal 4: %d %v", code, r)
	}
	ps, err := f.db.Proposals(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if (p.State == session.ProposalApproved) != (p.Seq == 4) {
			t.Errorf("proposal %d is %s", p.Seq, p.State)
		}
	}

	// an ended session runs nothing: no running lines, even if a trial was left as it was
	if _, err := f.db.UpdateSession(context.Background(), sid, func(s *session.Session) error {
		s.State = session.StateCancelled
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	v = decode(t, c.get("/api/sessions/"+sid))
	if got, ok := v["running"].([]any); !ok || len(got) != 0 {
		t.Errorf("running of a cancelled session: %v", v["running"])
	}
}

// TestSessionPageInChromiumWithParallelTrials drives the session page in a real headless
// Chromium: the running trials each on a line, three pending proposals each in its own card
// with its own buttons; approving one from its card decides that one, and what a person
// typed in another card survives the page's refresh.
func TestSessionPageInChromiumWithParallelTrials(t *testing.T) {
	f := newFixture(t)
	addParallel(t, f) // the session stays paused: the engine starts nothing, the trials' jobs run on
	b := signedInBrowser(t, f, alice, "the session page")
	do := b.do
	b.open("/sessions/" + sid)
	do("three decision cards", `document.querySelectorAll("#decide .card.pending").length === 3`)
	running, err := b.String(`[...document.querySelectorAll("#running li")].map((li) => li.textContent).join("\n")`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "trial 2 @ rung 1 · evaluating · Slurm job 5149 RUNNING on node2\ntrial 3 @ rung 0 · training 60/300 (20%) · GPU 1\ntrial 4 @ rung 0 · training 0/300 · Slurm job 5150 PENDING (Resources)"; running != want {
		t.Errorf("running lines on the page:\n%s\nwant\n%s", running, want)
	}
	ids, err := b.String(`[...document.querySelectorAll("#decide button")].map((x) => x.id).join(" ")`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "approve-3 reject-3 edit-3 approve-4 reject-4 edit-4 approve-5 reject-5 edit-5"; ids != want {
		t.Errorf("decision buttons %q, want %q", ids, want)
	}
	if _, err := b.Eval(`document.querySelector("#feedback-5").value = "typed before the refresh"; document.querySelector("#approve-4").click()`); err != nil {
		t.Fatal(err)
	}
	do("the approval's answer", `(document.querySelector("#decide-msg-4")||{}).textContent.includes("proposal 4 approved by alice")`)
	do("two cards left after a refresh", `document.querySelectorAll("#decide .card.pending").length === 2 && !document.querySelector("#approve-4")`)
	if got, _ := b.String(`document.querySelector("#feedback-5").value`); got != "typed before the refresh" {
		t.Errorf("the feedback typed in proposal 5's card is %q after the refresh", got)
	}
	ps, err := f.db.Proposals(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if (p.State == session.ProposalApproved) != (p.Seq == 4) {
			t.Errorf("proposal %d is %s", p.Seq, p.State)
		}
	}
}

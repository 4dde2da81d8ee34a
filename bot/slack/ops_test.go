package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
	"tunebot/apply/applytest"

	"tunebot/apply"
	"tunebot/bot"
	"tunebot/bot/bottest"
	slackbot "tunebot/bot/slack"
	"tunebot/bot/slack/slacktest"
	"tunebot/preset"
	"tunebot/schedule"
	"tunebot/session"
	"tunebot/store"
)

type noStarter struct{}

func (noStarter) StartScheduled(context.Context, bot.ScheduleEntry) (string, error) { return "", nil }

// opsRig is the adapter over Socket Mode to the fake Slack, with a handler on a real store,
// a real Applier on a temporary trainer checkout and a real Scheduler. UALICE may do
// anything, UBOB may apply, UEVE may only read.
type opsRig struct {
	fake        *slacktest.Server
	db          *store.DB
	ctx         context.Context
	repo        string
	sessionsDir string
	p1          session.Preset
}

func newOpsRig(t *testing.T) *opsRig {
	t.Helper()
	r := &opsRig{sessionsDir: t.TempDir()}
	sp := session.DefaultSpace()
	r.p1 = session.Preset{Name: "auto-tune-0123abcd", SessionID: "0123abcdef", Trial: session.TrialRef{Number: 5, Rung: 2},
		Config: sp.Defaults(), Score: 0.214, Task: "Unitree-Go2-Flat", CreatedAt: time.Now().UTC()}
	r.p1.Config.Weights["foot_slip"] = -0.5
	r.repo = applytest.Repo(t)
	sch, err := schedule.New(schedule.Options{Store: schedule.NewMemStore(), Starter: noStarter{}})
	if err != nil {
		t.Fatal(err)
	}
	rg := newRigWith(t, slackbot.ModeSocket, func(db *store.DB, _ *slackbot.Adapter) bot.HandlerConfig {
		if err := db.SavePreset(context.Background(), r.p1); err != nil {
			t.Fatal(err)
		}
		ap, err := apply.New(applytest.Config(r.repo, "true"), sp, db, nil)
		if err != nil {
			t.Fatal(err)
		}
		return bot.HandlerConfig{Store: db, Space: sp, SessionsDir: r.sessionsDir, PolicyLimit: 1024, Applier: ap, Scheduler: sch, Logger: testLogger(),
			Allow: bot.AllowList{
				{Platform: slackbot.Platform, Users: []string{"UALICE"}},
				{Platform: slackbot.Platform, Users: []string{"UBOB"}, Permissions: []bot.Permission{bot.PermApply}},
			}}
	})
	r.fake, r.db, r.ctx = rg.fake, rg.db, rg.ctx
	return r
}

// send sends an envelope and returns the response_url of its payload.
func (r *opsRig) send(t *testing.T, typ string, payload map[string]any) string {
	t.Helper()
	if _, err := r.fake.Send(typ, payload); err != nil {
		t.Fatal(err)
	}
	u, _ := payload["response_url"].(string)
	return u
}

// response waits for an answer through the response_url u whose text or blocks contain
// want.
func (r *opsRig) response(t *testing.T, u, want string) slacktest.Response {
	t.Helper()
	var got slacktest.Response
	r.wait(t, "a response with "+want, func(st *slacktest.State) bool {
		for _, x := range st.Responses {
			if strings.HasSuffix(u, x.URL) && strings.Contains(x.Text+x.Blocks, want) {
				got = x
				return true
			}
		}
		return false
	})
	return got
}

// upload waits for a shared file named name.
func (r *opsRig) upload(t *testing.T, name string) slacktest.Upload {
	t.Helper()
	var got slacktest.Upload
	r.wait(t, "an upload of "+name, func(st *slacktest.State) bool {
		for _, u := range st.Uploads {
			if u.Name == name {
				got = u
				return true
			}
		}
		return false
	})
	return got
}

func (r *opsRig) wait(t *testing.T, what string, cond func(*slacktest.State) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 15*time.Second) // a bound for a hang, not a measurement
	defer cancel()
	if err := r.fake.Wait(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v; fake has %+v", what, err, r.fake.Snapshot())
	}
}

// buttons maps the labels of the buttons in a message's blocks to their action IDs.
func buttons(t *testing.T, blocks string) map[string]string {
	t.Helper()
	var bs []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Text     struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(blocks), &bs); err != nil {
		t.Fatalf("blocks %s: %v", blocks, err)
	}
	out := map[string]string{}
	for _, b := range bs {
		for _, e := range b.Elements {
			if b.Type == "actions" && e.Type == "button" {
				out[e.Text.Text] = e.ActionID
			}
		}
	}
	return out
}

func TestExportAndPolicyAreFiles(t *testing.T) {
	r := newOpsRig(t)

	u := r.send(t, "slash_commands", r.fake.Slash("UEVE", "CTUNE", "export "+r.p1.Name))
	res := r.response(t, u, "the file --reward-config takes")
	if res.ResponseType != "in_channel" || !strings.Contains(res.Blocks, "file below: "+r.p1.Name+".json") {
		t.Errorf("export answer %+v", res)
	}
	up := r.upload(t, r.p1.Name+".json")
	if want := preset.Export(r.p1); !bytes.Equal(up.Data, want) || up.Size != len(want) || up.Channel != "CTUNE" {
		t.Errorf("export upload to %s of %d bytes:\n%s\nwant the bytes of preset.Export:\n%s", up.Channel, up.Size, up.Data, want)
	}

	onnx := []byte("\x08\x07onnx-bytes")
	policy := bottest.PolicyTrial(t, r.db, r.sessionsDir, r.p1, onnx)
	r.send(t, "slash_commands", r.fake.Slash("UEVE", "CTUNE", "policy "+r.p1.Name))
	if up := r.upload(t, r.p1.Name+"-policy.onnx"); !bytes.Equal(up.Data, onnx) || up.Channel != "CTUNE" {
		t.Errorf("policy upload %+v", up)
	}

	if err := os.WriteFile(policy, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	u = r.send(t, "slash_commands", r.fake.Slash("UEVE", "CTUNE", "policy "+r.p1.Name))
	res = r.response(t, u, "upload limit")
	if res.ResponseType != "ephemeral" || !strings.Contains(res.Text, policy) {
		t.Errorf("an oversized policy: %+v", res)
	}
	if n := len(r.fake.Snapshot().Uploads); n != 2 {
		t.Errorf("%d uploads, want 2 (the oversized policy is not uploaded)", n)
	}
}

func TestApplyConfirmOverSlack(t *testing.T) {
	r := newOpsRig(t)
	u := r.send(t, "slash_commands", r.fake.Slash("UALICE", "CTUNE", "apply "+r.p1.Name))
	card := r.response(t, u, "foot_slip: -0.25 → -0.5")
	if card.ResponseType != "ephemeral" {
		t.Errorf("the confirm card is %s, want ephemeral", card.ResponseType)
	}
	ids := buttons(t, card.Blocks)
	confirm := ids["Confirm apply"]
	if _, _, _, err := bot.ParseConfirmID(confirm); err != nil || ids["Cancel"] == "" {
		t.Fatalf("confirm card buttons %v", ids)
	}
	// The card is ephemeral: Slack's click names its channel but no message of the channel.
	shown := &slacktest.Message{Channel: "CTUNE", TS: "1700000000.000001"}

	for _, tc := range []struct{ user, want string }{
		{"UBOB", "only the person who asked"}, // may apply, but did not ask
		{"UEVE", "not allowed"},
	} {
		u := r.send(t, "interactive", r.fake.Click(tc.user, shown, confirm))
		if res := r.response(t, u, tc.want); res.ResponseType != "ephemeral" {
			t.Errorf("%s's refusal is %s", tc.user, res.ResponseType)
		}
	}
	if got := applytest.Git(t, r.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads"); got != "main" {
		t.Fatalf("a refused click changed the checkout: %q", got)
	}
	u = r.send(t, "interactive", r.fake.Click("UALICE", shown, confirm))
	if res := r.response(t, u, "applied by"); res.ResponseType != "in_channel" {
		t.Errorf("the applied notice is %s, want in_channel", res.ResponseType)
	}
	if got := applytest.Git(t, r.repo, "show", "tunebot/"+r.p1.Name+":tasks/cfg.py"); !strings.Contains(got, `["foot_slip"].weight = -0.5`) {
		t.Errorf("the applied branch's file:\n%s", got)
	}
	u = r.send(t, "interactive", r.fake.Click("UALICE", shown, confirm))
	r.response(t, u, "unknown or has expired")
}

func TestScheduleOverSlack(t *testing.T) {
	r := newOpsRig(t)
	u := r.send(t, "slash_commands", r.fake.Slash("UALICE", "CTUNE", `schedule add “0 2 * * *” if_busy=wait mode=approval trials=8`))
	res := r.response(t, u, "added by")
	if res.ResponseType != "in_channel" || !strings.Contains(res.Text, "mode=approval trials=8") || !strings.Contains(res.Text, "busy: wait") {
		t.Fatalf("schedule added: %+v", res)
	}
	id := strings.Fields(strings.TrimPrefix(res.Text, "schedule "))[0]

	u = r.send(t, "slash_commands", r.fake.Slash("UEVE", "CTUNE", "schedule list"))
	if res := r.response(t, u, id); res.ResponseType != "ephemeral" || !strings.Contains(res.Blocks, "0 2 * * *") {
		t.Errorf("schedule list: %+v", res)
	}
	u = r.send(t, "slash_commands", r.fake.Slash("UEVE", "CTUNE", "schedule remove "+id))
	r.response(t, u, "not allowed")
	u = r.send(t, "slash_commands", r.fake.Slash("UALICE", "CTUNE", "schedule remove "+id))
	r.response(t, u, "schedule "+id+" removed by")
}

// TestImportOverSlack pastes an exported preset into /tune import, as a person copies the
// file into a code block, and reads it back with preset show.
func TestImportOverSlack(t *testing.T) {
	r := newOpsRig(t)
	u := r.send(t, "slash_commands", r.fake.Slash("UALICE", "CTUNE", "import mine ```"+string(preset.Export(r.p1))+"```"))
	if res := r.response(t, u, "preset mine imported by"); res.ResponseType != "in_channel" {
		t.Errorf("import answer %+v", res)
	}
	u = r.send(t, "slash_commands", r.fake.Slash("UEVE", "CTUNE", "preset show mine"))
	if res := r.response(t, u, "foot_slip"); res.ResponseType != "ephemeral" {
		t.Errorf("preset show %+v", res)
	}
}

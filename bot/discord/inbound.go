package discord

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/bwmarrin/discordgo"

	"tunebot/bot"
	"tunebot/session"
)

// Commands is the guild's /tune command: one subcommand per verb of the grammar (preset and
// schedule are groups of subcommands), with typed options (preset names autocompleted from
// the store). It is the same list every time, so registering it with a bulk overwrite at
// every start is idempotent: Discord keeps one /tune, never a second copy.
func Commands() []*discordgo.ApplicationCommand {
	minTrials, minOne, zero := 4.0, 1.0, 0.0
	mode := str("mode", "automatic, or approval: every proposal waits for a person")
	mode.Choices = []*discordgo.ApplicationCommandOptionChoice{{Name: "automatic", Value: "automatic"}, {Name: "approval", Value: "approval"}}
	ifBusy := str("if_busy", "what a scheduled start does when another session holds the GPU (default: configured)")
	fromStart := str("start", "with from: start from its best configuration (default) or the defaults")
	fromStart.Choices = []*discordgo.ApplicationCommandOptionChoice{{Name: session.FromBest, Value: session.FromBest}, {Name: session.FromDefaults, Value: session.FromDefaults}}
	ifBusy.Choices = []*discordgo.ApplicationCommandOptionChoice{{Name: "skip", Value: "skip"}, {Name: "wait", Value: "wait"}}
	jsonOpt := str("json", "the preset's JSON pasted: the text of the file /tune export gives")
	jsonOpt.MaxLength = 6000
	fileOpt := &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionAttachment, Name: "file", Description: "the .json file /tune export gave"}
	return []*discordgo.ApplicationCommand{{
		Name: "tune", Description: "tunebot: tune the robot's reward weights",
		Options: []*discordgo.ApplicationCommandOption{
			sub("start", "start a tuning session",
				mode, integer("trials", "trials including the baseline (4–20)", &minTrials, 20), presetOpt("a saved preset to start from", false),
				boolean("fallback", "let the numeric sampler propose when the advisor cannot"),
				str("rungs", "iterations per rung, comma separated: 300,900,2000"),
				str("gpus", "GPU ids, comma separated: 0,1"),
				integer("seed", "training seed", &zero, math.MaxInt32),
				integer("patience", "stop after this many trials without improvement (1–20)", &minOne, 20),
				str("name", "run name"),
				integer("num_envs", "parallel environments (1–16384)", &minOne, 16384),
				integer("eval_steps", "evaluation steps (10–100000)", &minOne, 100000),
				boolean("control", "promote the baseline along every rung to compare at equal training (default true)"),
				str("from", "an earlier session on the same task to build on: its id, or the start of it"),
				fromStart),
			sub("status", "the session's state"),
			sub("pause", "pause after the current job"),
			sub("resume", "resume a paused or interrupted session"),
			sub("cancel", "cancel the session and stop its job"),
			sub("best", "the best trial so far"),
			sub("presets", "list saved presets"),
			group("preset", "saved presets",
				sub("show", "a preset's values against the defaults", presetOpt("the preset to show", true)),
				sub("list", "list saved presets")),
			sub("export", "a preset as the JSON file --reward-config takes", presetOpt("the preset to export", true)),
			// json and file are both optional (Discord cannot say "one of"): CommandText
			// insists on exactly one.
			sub("import", "save a preset from its exported file or pasted JSON (needs start)",
				required(str("name", "the new preset's name: letters, digits, _ . -")), jsonOpt, fileOpt),
			sub("policy", "the policy.onnx of a preset's trial", presetOpt("the preset whose policy to upload", true)),
			sub("apply", "apply a preset to the trainer checkout: shows the diff, then asks to confirm", presetOpt("the preset to apply", true)),
			sub("rollback", "revert the last apply, after a confirm"),
			group("schedule", "scheduled starts",
				sub("add", "start sessions on a cron schedule (needs start)",
					required(str("cron", "five fields (minute hour day month weekday) or @daily, @every 2h …")),
					str("args", "start settings as /tune start takes them: mode=approval trials=12"), ifBusy),
				sub("list", "the scheduled starts"),
				sub("remove", "remove a scheduled start (needs start)", required(str("id", "the id schedule list shows")))),
			sub("chart", "charts of a trial", required(str("trial", "trial number, optionally @rung: 3 or 3@1")), str("tags", "training-curve tags, space separated")),
			sub("clip", "a trial's clip: its policy walking", required(str("trial", "trial number, optionally @rung: 3 or 3@1"))),
			sub("why", "a proposal's whole evidence (its card shows the three strongest pieces)", integer("proposal", "the proposal's number (default: the newest)", &minOne, 9999)),
			sub("agent", "test the advisor's connection"),
			sub("dashboard", "a private one-time sign-in link to the monitoring page"),
			sub("help", "what tunebot understands"),
		},
	}}
}

// quotes are the characters that may close a quoted cron spec in the grammar.
const quotes = "\"'\u201c\u201d\u2018\u2019"

// subcommand finds the subcommand a /tune invocation runs: its words ("export", "schedule
// add") and its option; ok is false for a shape /tune does not have.
func subcommand(d discordgo.ApplicationCommandInteractionData) (words []string, sub *discordgo.ApplicationCommandInteractionDataOption, ok bool) {
	if len(d.Options) != 1 {
		return nil, nil, false
	}
	sub = d.Options[0]
	words = []string{sub.Name}
	if sub.Type == discordgo.ApplicationCommandOptionSubCommandGroup {
		if len(sub.Options) != 1 || sub.Options[0].Type != discordgo.ApplicationCommandOptionSubCommand {
			return nil, nil, false
		}
		words = append(words, sub.Options[0].Name)
		sub = sub.Options[0]
	} else if sub.Type != discordgo.ApplicationCommandOptionSubCommand {
		return nil, nil, false
	}
	return words, sub, true
}

// optionValue is the trimmed value of the option name of sub, "" when it is not given.
func optionValue(sub *discordgo.ApplicationCommandInteractionDataOption, name string) string {
	for _, o := range sub.Options {
		if o.Name == name {
			return strings.TrimSpace(fmt.Sprint(o.Value))
		}
	}
	return ""
}

// CommandText turns a /tune invocation into the text bot.ParseCommand reads, so Discord's
// typed options and a typed command line go through one grammar. It reads no network: an
// import whose JSON is an uploaded file (the file option) gives "import NAME", and the
// caller appends the file's text, which CommandFile finds, where the grammar expects the
// JSON. An import with both json and file, or neither, is an error that says so.
func CommandText(d discordgo.ApplicationCommandInteractionData) (string, error) {
	words, sub, ok := subcommand(d)
	if !ok {
		return "help", nil
	}
	opt := func(name string) string { return optionValue(sub, name) }
	switch strings.Join(words, " ") {
	case "export", "policy", "apply", "preset show":
		words = append(words, opt("preset"))
	case "schedule remove":
		words = append(words, opt("id"))
	case "import":
		js, file := opt("json"), opt("file")
		switch {
		case js != "" && file != "":
			return "", session.Userf(nil, "import takes the preset from json or from file, not both: give one of them")
		case js == "" && file == "":
			return "", session.Userf(nil, "import needs the preset: attach the .json file /tune export gave as file, or paste its JSON into json")
		}
		// The JSON keeps its spaces and lines: the grammar takes everything after the name.
		words = append(words, opt("name"), js)
	case "schedule add":
		spec := opt("cron")
		if strings.ContainsAny(spec, quotes) {
			return "", session.Userf(nil, "cron: %q must not contain quotes", bot.Truncate(spec, 40))
		}
		words = append(words, `"`+spec+`"`)
		if v := opt("if_busy"); v != "" {
			words = append(words, "if_busy="+v)
		}
		words = append(words, opt("args"))
	case "chart":
		words = append(words, opt("trial"))
		words = append(words, strings.Fields(opt("tags"))...)
	case "clip":
		words = append(words, opt("trial"))
	case "why":
		words = append(words, opt("proposal"))
	default:
		for _, o := range sub.Options {
			v := ""
			switch x := o.Value.(type) {
			case float64: // JSON numbers: integer options arrive as float64
				v = fmt.Sprintf("%d", int64(x))
			case bool:
				v = fmt.Sprint(x)
			default:
				v = fmt.Sprint(x)
			}
			if strings.IndexFunc(v, unicode.IsSpace) >= 0 || v == "" {
				return "", session.Userf(nil, "%s: %q must be one word without spaces", o.Name, bot.Truncate(v, 40))
			}
			words = append(words, o.Name+"="+v)
		}
	}
	return strings.TrimSpace(strings.Join(words, " ")), nil
}

// Run registers /tune in the guild, connects to the gateway and serves interactions until
// ctx ends; then it disconnects and waits (bounded) for the answers in flight.
func (a *Adapter) Run(ctx context.Context, h Handler) error {
	if !a.running.CompareAndSwap(false, true) {
		return fmt.Errorf("discord adapter already running")
	}
	rctx := context.WithoutCancel(ctx) // answers in flight finish after ctx ends
	a.dg.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) {
		a.log.Info("connected to the Discord gateway", "user", r.User.Username, "intents", int(Intents(a.cfg.ThreadReplies)))
	})
	a.dg.AddHandler(func(_ *discordgo.Session, _ *discordgo.Resumed) {
		a.log.Info("resumed the Discord gateway session")
	})
	a.dg.AddHandler(func(_ *discordgo.Session, ic *discordgo.InteractionCreate) {
		a.flight.Add(1)
		defer a.flight.Done()
		a.onInteraction(rctx, h, ic.Interaction)
	})
	if a.cfg.ThreadReplies {
		a.dg.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) {
			a.flight.Add(1)
			defer a.flight.Done()
			a.onMessage(rctx, h, m.Message)
		})
	}
	for attempt := 0; ; attempt++ {
		err := a.connect(ctx)
		if err == nil {
			break
		}
		wait := bot.Backoff(attempt, 5*time.Minute)
		a.log.Error("connecting to Discord; retrying", "err", err, "in", wait)
		if !bot.Sleep(ctx, wait) {
			return nil
		}
	}
	<-ctx.Done()
	a.dg.ShouldReconnectOnError = false
	if err := a.dg.Close(); err != nil {
		a.log.Warn("closing the Discord gateway", "err", err)
	}
	if !bot.Drain(&a.flight) {
		a.log.Warn("Discord answers still in flight at shutdown")
	}
	return nil
}

func (a *Adapter) connect(ctx context.Context) error {
	_, p, err := call(ctx, func(o ...discordgo.RequestOption) ([]*discordgo.ApplicationCommand, error) {
		return a.dg.ApplicationCommandBulkOverwrite(a.cfg.ApplicationID, a.cfg.GuildID, Commands(), o...)
	})
	if err != nil {
		return fmt.Errorf("registering /tune in guild %s: %w", a.cfg.GuildID, a.classify(err, p, "registering /tune"))
	}
	if err := a.dg.Open(); err != nil {
		return fmt.Errorf("opening the Discord gateway: %w", err)
	}
	return nil
}

// answerMode is how a reply reaches people.
type answerMode int

const (
	viaOriginal answerMode = iota // a deferred slash command: edit the (ephemeral) original response
	viaFollowUp                   // a deferred click or form: follow-up messages
	viaChannel                    // no usable token (a thread reply, a stale interaction): plain messages
)

// inflow carries the state of one interaction's answers.
type inflow struct {
	i       *discordgo.Interaction
	channel string                      // where public and fallback messages go
	user    string                      // who to mention in a fallback message
	ref     *discordgo.MessageReference // the message a thread reply answers
	mode    answerMode
}

func displayName(m *discordgo.Member, u *discordgo.User) (string, string) {
	if m != nil && m.User != nil {
		u = m.User
	}
	if u == nil {
		return "", ""
	}
	name := u.Username
	if u.GlobalName != "" {
		name = u.GlobalName
	}
	if m != nil && m.Nick != "" {
		name = m.Nick
	}
	return u.ID, name
}

func (a *Adapter) base(ctx context.Context, channel, guild string, m *discordgo.Member, u *discordgo.User) bot.Interaction {
	id, name := displayName(m, u)
	in := bot.Interaction{Platform: Platform, User: session.Actor{Platform: Platform, ID: id, Name: name}, Channel: channel}
	if m != nil {
		in.Roles = m.Roles
	}
	if sid, ok, err := a.refs.Get(ctx, threadKey(channel)); err != nil {
		a.log.Error("looking up a thread's session", "err", err)
	} else if ok {
		in.Channel, in.Thread, in.SessionID = a.cfg.ChannelID, channel, sid
	}
	return in
}

func (a *Adapter) onInteraction(ctx context.Context, h Handler, i *discordgo.Interaction) {
	log := a.log.With("interaction", i.ID, "type", int(i.Type))
	f := &inflow{i: i, channel: i.ChannelID}
	if i.GuildID != a.cfg.GuildID {
		f.mode = viaFollowUp
		a.respond(ctx, f, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: "tunebot answers in its own server only", Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: allowed(nil)}})
		return
	}
	in := a.base(ctx, i.ChannelID, i.GuildID, i.Member, i.User)
	f.user = in.User.ID
	switch i.Type {
	case discordgo.InteractionApplicationCommandAutocomplete:
		a.autocomplete(ctx, i)
	case discordgo.InteractionApplicationCommand:
		d := i.ApplicationCommandData()
		text, err := CommandText(d)
		if err != nil {
			f.mode = viaFollowUp
			a.respond(ctx, f, ephemeral(err.Error()))
			return
		}
		f.mode = viaOriginal
		// Deferred and ephemeral: most answers are for the asker only (errors, status);
		// a public result is posted in the channel instead.
		a.respond(ctx, f, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral}})
		text, ok := a.withFile(ctx, h, f, in, d, text)
		if !ok {
			return
		}
		in.Kind, in.Text = bot.KindCommand, text
		a.handle(ctx, h, f, in)
	case discordgo.InteractionMessageComponent:
		in.Kind, in.ActionID = bot.KindAction, i.MessageComponentData().CustomID
		verb, _, _, _ := bot.ParseActionID(in.ActionID)
		if verb == bot.ButtonReject || verb == bot.ButtonEdit || verb == bot.ButtonPreferNote {
			// A modal can only be the first answer, so the handler answers first (it checks
			// the allow-list and reads the proposal, well within Discord's 3 seconds).
			f.mode = viaFollowUp
			a.handleFirst(ctx, h, f, in)
			return
		}
		f.mode = viaFollowUp
		a.respond(ctx, f, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
		a.handle(ctx, h, f, in)
	case discordgo.InteractionModalSubmit:
		d := i.ModalSubmitData()
		in.Kind, in.ActionID, in.Values = bot.KindSubmit, d.CustomID, formValues(d)
		f.mode = viaFollowUp
		a.respond(ctx, f, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
		a.handle(ctx, h, f, in)
	default:
		log.Debug("ignoring an interaction type")
	}
}

func ephemeral(text string) *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: bot.Truncate(text, MaxContent), Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: allowed(nil)}}
}

// respond sends the first answer; when Discord no longer knows the interaction (too late,
// or replayed after a reconnect), later answers go to the channel as fresh messages.
func (a *Adapter) respond(ctx context.Context, f *inflow, r *discordgo.InteractionResponse) bool {
	err := a.dg.InteractionRespond(f.i, r, discordgo.WithContext(ctx))
	if err == nil {
		return true
	}
	if stale(err) {
		a.log.Info("interaction expired before tunebot answered; answering with a fresh message", "interaction", f.i.ID)
	} else {
		a.log.Warn("answering an interaction; falling back to a fresh message", "interaction", f.i.ID, "err", err)
	}
	f.mode = viaChannel
	return false
}

// handle runs the handler and delivers its reply, then its follow-up when the work took
// longer than the acknowledgement, in that order.
func (a *Adapter) handle(ctx context.Context, h Handler, f *inflow, in bot.Interaction) {
	// The handler holds the follow-up until sent: f is used by one of the two at a time.
	r, sent := h.Handle(ctx, in, func(r bot.Reply) { a.answer(ctx, f, r) })
	defer sent()
	a.answer(ctx, f, r)
}

// handleFirst is handle for a click whose answer may be a modal.
func (a *Adapter) handleFirst(ctx context.Context, h Handler, f *inflow, in bot.Interaction) {
	r, sent := h.Handle(ctx, in, func(r bot.Reply) { a.answer(ctx, f, r) })
	defer sent()
	if r.Form != nil {
		if a.respond(ctx, f, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal, Data: modal(*r.Form)}) {
			return
		}
		a.answer(ctx, f, bot.Reply{Private: true, Text: "the form could not open because Discord's interaction expired; click the button again, or reply in this thread: reject N <feedback> · edit N term=value … (N: the proposal's number)"})
		return
	}
	parts := a.replyParts(r, f)
	if len(parts) == 0 {
		parts = []Part{{Content: "done"}}
	}
	p := parts[0]
	if a.respond(ctx, f, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: p.Content, Embeds: p.Embeds, Files: files(p.Files),
			Flags: flagsFor(r.Private), AllowedMentions: allowed(p.Mentions)}}) {
		for _, p := range parts[1:] {
			a.send(ctx, f, p, r)
		}
		return
	}
	a.answer(ctx, f, r)
}

func flagsFor(private bool) discordgo.MessageFlags {
	if private {
		return discordgo.MessageFlagsEphemeral
	}
	return 0
}

// replyParts renders a reply as messages; a form that cannot open here becomes the text
// that says how else to do it.
func (a *Adapter) replyParts(r bot.Reply, f *inflow) []Part {
	var parts []Part
	text := r.Text
	if r.Form != nil && text == "" {
		text = "that needs a form: use the proposal's Reject or Edit button, or reply in its thread: reject N <feedback> · edit N term=value … (N: the proposal's number)"
	}
	if text != "" {
		if len([]rune(text)) <= MaxContent {
			parts = append(parts, Part{Content: text})
		} else {
			parts = append(parts, Render(bot.Card{Kind: "notice", Blocks: []bot.Block{bot.Text(text)}}, RenderOptions{MaxUpload: a.cfg.MaxUpload})...)
		}
	}
	if r.Card != nil {
		c := *r.Card
		c.Mentions = nil
		parts = append(parts, Render(c, RenderOptions{MaxUpload: a.cfg.MaxUpload})...)
	}
	return parts
}

// answer delivers r according to f's mode, falling back to fresh channel messages when
// the interaction token no longer works.
func (a *Adapter) answer(ctx context.Context, f *inflow, r bot.Reply) {
	parts := a.replyParts(r, f)
	if len(parts) == 0 {
		return
	}
	if f.mode == viaOriginal && r.Private {
		p := parts[0]
		comps := p.Components
		if comps == nil {
			comps = []discordgo.MessageComponent{}
		}
		_, err := a.dg.InteractionResponseEdit(f.i, &discordgo.WebhookEdit{Content: &p.Content, Embeds: &p.Embeds, Components: &comps,
			Files: files(p.Files), AllowedMentions: allowed(p.Mentions)}, discordgo.WithContext(ctx))
		if err == nil {
			for _, p := range parts[1:] {
				a.send(ctx, f, p, r)
			}
			return
		}
		a.staleOrLog(f, err)
	}
	if f.mode == viaOriginal && !r.Private {
		// The deferred answer was ephemeral; a public result belongs in the channel.
		sent := true
		for _, p := range parts {
			if _, err := a.post(ctx, f.channel, p, nil); err != nil {
				a.log.Error("posting a command's result", "err", err)
				sent = false
				break
			}
		}
		if sent {
			if err := a.dg.InteractionResponseDelete(f.i, discordgo.WithContext(ctx)); err != nil && !stale(err) {
				a.log.Warn("removing the deferred answer", "err", err)
			}
			return
		}
		f.mode = viaFollowUp
	}
	for _, p := range parts {
		a.send(ctx, f, p, r)
	}
}

func (a *Adapter) staleOrLog(f *inflow, err error) {
	if stale(err) {
		a.log.Info("interaction token expired; answering with a fresh message", "interaction", f.i.ID)
	} else {
		a.log.Warn("answering through the interaction; falling back to a fresh message", "interaction", f.i.ID, "err", err)
	}
	f.mode = viaChannel
}

// send delivers one part of r: privately as an ephemeral follow-up, publicly as a message
// in the channel, or (no usable token) as a message in the channel that mentions the person;
// a sensitive one then goes by direct message instead (sendDirect).
func (a *Adapter) send(ctx context.Context, f *inflow, p Part, r bot.Reply) {
	private := r.Private || r.Sensitive
	if f.mode != viaChannel && private && f.i != nil {
		_, err := a.dg.FollowupMessageCreate(f.i, true, &discordgo.WebhookParams{Content: p.Content, Embeds: p.Embeds, Components: p.Components,
			Files: files(p.Files), Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: allowed(p.Mentions)}, discordgo.WithContext(ctx))
		if err == nil {
			return
		}
		a.staleOrLog(f, err)
	}
	if r.Sensitive {
		a.sendDirect(ctx, f, p)
		return
	}
	if private && len(p.Files) > 0 {
		// Without the interaction nothing is private any more: a file meant for one person
		// is not posted for the channel to download. Say so instead of dropping it quietly.
		var names []string
		for _, a := range p.Files {
			names = append(names, a.Name)
		}
		p.Files = nil
		p.Content = bot.Truncate(strings.TrimSpace(p.Content+" ⚠ not attached here, since this answer was for you only and Discord's interaction expired: "+
			strings.Join(names, ", ")+"; ask again"), MaxContent-30)
	}
	if private && f.user != "" && snowflake.MatchString(f.user) {
		p.Content = bot.Truncate("<@"+f.user+"> "+p.Content, MaxContent)
		p.Mentions = append(p.Mentions, f.user)
	}
	if _, err := a.post(ctx, f.channel, p, f.ref); err != nil {
		a.log.Error("answering in the channel", "channel", f.channel, "err", err)
	}
}

// sendDirect delivers a sensitive part (a sign-in link) when the interaction can no longer
// show it to the person alone: in their direct messages with tunebot, with a pointer in the
// channel that says where it went; when Discord refuses the direct message (they accept none
// from the server's members), the channel hears only that it could not be given and to ask
// again. The part itself never reaches the channel.
func (a *Adapter) sendDirect(ctx context.Context, f *inflow, p Part) {
	note := "your answer was for you only, and Discord no longer took it as a private answer (the interaction had expired or failed)"
	if f.user == "" || !snowflake.MatchString(f.user) {
		a.log.Warn("a private answer with a credential was dropped: the interaction expired and its user is unknown")
		return
	}
	dm, err := a.openDM(ctx, f.user)
	if err == nil {
		p.Mentions = nil
		_, err = a.post(ctx, dm, p, nil)
	}
	if err != nil {
		a.log.Warn("sending a private answer by direct message", "err", err)
		note += "; a direct message to you failed too (Discord refuses them when you accept none from this server's members), so nothing was sent: ask again"
	} else {
		note += ", so it is in your direct messages with tunebot"
	}
	if _, err := a.post(ctx, f.channel, Part{Content: bot.Truncate("<@"+f.user+"> "+note, MaxContent), Mentions: []string{f.user}}, f.ref); err != nil {
		a.log.Error("answering in the channel", "channel", f.channel, "err", err)
	}
}

// openDM returns the direct message channel between tunebot and user.
func (a *Adapter) openDM(ctx context.Context, user string) (string, error) {
	ch, p, err := call(ctx, func(o ...discordgo.RequestOption) (*discordgo.Channel, error) {
		return a.dg.UserChannelCreate(user, o...)
	})
	if err != nil {
		return "", a.classify(err, p, "opening a direct message")
	}
	return ch.ID, nil
}

// modal renders a form. Discord allows five text inputs: a patch form becomes one short
// input per term=value line (at most four), so each value is edited on its own.
func modal(form bot.Form) *discordgo.InteractionResponseData {
	d := &discordgo.InteractionResponseData{CustomID: form.ActionID, Title: bot.Truncate(form.Title, 45)}
	var rows []discordgo.MessageComponent
	for _, in := range form.Inputs {
		lines := strings.Split(strings.TrimSpace(in.Value), "\n")
		if in.ID == bot.FieldPatch && len(lines) <= 4 && len(form.Inputs) == 1 {
			for k := 0; k < 4; k++ {
				v := ""
				if k < len(lines) {
					v = strings.TrimSpace(lines[k])
				}
				label := fmt.Sprintf("change %d: term=value", k+1)
				if k == 0 {
					label = "change 1: term=value (0 switches it off)"
				}
				rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.TextInput{
					CustomID: fmt.Sprintf("%s.%d", bot.FieldPatch, k+1), Label: bot.Truncate(label, 45), Style: discordgo.TextInputShort,
					Value: v, Placeholder: bot.Truncate(in.Hint, 100), Required: k == 0, MaxLength: 100}}})
			}
			continue
		}
		if len(rows) == 5 {
			break
		}
		style := discordgo.TextInputShort
		if in.Multiline {
			style = discordgo.TextInputParagraph
		}
		rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.TextInput{
			CustomID: in.ID, Label: bot.Truncate(in.Label, 45), Style: style, Value: bot.Truncate(in.Value, 4000), Placeholder: bot.Truncate(in.Hint, 100),
			Required: true, MaxLength: 4000}}})
	}
	d.Components = rows
	return d
}

// formValues reads a modal submission back into the form's fields; the per-line inputs
// of a patch form are joined into the one field the handler reads.
func formValues(d discordgo.ModalSubmitInteractionData) map[string]string {
	out := map[string]string{}
	var patch []string
	for _, c := range d.Components {
		row, ok := c.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		for _, x := range row.Components {
			ti, ok := x.(*discordgo.TextInput)
			if !ok {
				continue
			}
			if strings.HasPrefix(ti.CustomID, bot.FieldPatch+".") {
				if v := strings.TrimSpace(ti.Value); v != "" {
					patch = append(patch, v)
				}
				continue
			}
			out[ti.CustomID] = ti.Value
		}
	}
	if len(patch) > 0 {
		out[bot.FieldPatch] = strings.Join(patch, "\n")
	}
	return out
}

func (a *Adapter) autocomplete(ctx context.Context, i *discordgo.Interaction) {
	typed := ""
	d := i.ApplicationCommandData()
	// The focused option sits under the subcommand, or under a group's subcommand
	// (/tune preset show).
	var walk func([]*discordgo.ApplicationCommandInteractionDataOption)
	walk = func(os []*discordgo.ApplicationCommandInteractionDataOption) {
		for _, o := range os {
			if o.Focused {
				typed = strings.ToLower(fmt.Sprint(o.Value))
			}
			walk(o.Options)
		}
	}
	walk(d.Options)
	ps, err := a.cfg.Store.Presets(ctx)
	if err != nil {
		a.log.Error("listing presets for autocomplete", "err", err)
	}
	sort.Slice(ps, func(x, y int) bool { return ps[x].CreatedAt.After(ps[y].CreatedAt) })
	choices := []*discordgo.ApplicationCommandOptionChoice{}
	for _, p := range ps {
		if len(choices) == 25 {
			break
		}
		if strings.Contains(strings.ToLower(p.Name), typed) {
			choices = append(choices, &discordgo.ApplicationCommandOptionChoice{Name: bot.Truncate(p.Name, 100), Value: p.Name})
		}
	}
	err = a.dg.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionApplicationCommandAutocompleteResult,
		Data: &discordgo.InteractionResponseData{Choices: choices}}, discordgo.WithContext(ctx))
	if err != nil {
		a.log.Debug("answering autocomplete", "err", err)
	}
}

// onMessage reads a reply typed in a session thread (thread_replies only).
func (a *Adapter) onMessage(ctx context.Context, h Handler, m *discordgo.Message) {
	if m.Author == nil || m.Author.Bot || m.WebhookID != "" || m.GuildID != a.cfg.GuildID {
		return
	}
	if _, ok, err := a.refs.Get(ctx, threadKey(m.ChannelID)); err != nil || !ok {
		return // not a session thread
	}
	in := a.base(ctx, m.ChannelID, m.GuildID, m.Member, m.Author)
	in.Kind, in.Text = bot.KindReply, m.Content
	f := &inflow{channel: m.ChannelID, user: in.User.ID, mode: viaChannel,
		ref: &discordgo.MessageReference{MessageID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID, FailIfNotExists: new(bool)}}
	a.handle(ctx, h, f, in)
}

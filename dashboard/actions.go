package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"tunebot/bot"
	"tunebot/preset"
	"tunebot/session"
)

// outcome is an action's answer: the handler's text, and for a refused edit the problems
// by line of the form, as the chat modal shows them.
type outcome struct {
	OK     bool           `json:"ok"`
	Text   string         `json:"text"`
	Fields map[int]string `json:"fields,omitempty"`
}

type actFunc func(ctx context.Context, in bot.Interaction, body map[string]string, r *http.Request) (outcome, error)

// maxActionBody caps an action's JSON body (feedback and edits are short).
const maxActionBody = 16 << 10

// verbOf names the command a page action is, whose permission it needs.
type verbOf func(r *http.Request) bot.Verb

// pathVerb is the verb the route's {verb} names (approve, pause, ...).
func pathVerb(r *http.Request) bot.Verb { return bot.Verb(r.PathValue("verb")) }

// fixedVerb is a route's one verb.
func fixedVerb(v bot.Verb) verbOf { return func(*http.Request) bot.Verb { return v } }

// act guards a state-changing request: a valid cookie, an Origin of the page itself, the
// allow-list's permission for the verb and a JSON body (which a cross-site form cannot
// send). The permission comes before anything that depends on the session or the body, so
// someone who may not act learns neither whether a session exists nor what a body needs.
func (s *Server) act(verb verbOf, f actFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.sameOrigin(r) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "refused: the request did not come from the monitoring page (Origin " + bot.Truncate(r.Header.Get("Origin"), 80) + ")"})
			return
		}
		who, ok := s.auth.identity(r)
		if !ok {
			writeJSON(w, http.StatusUnauthorized, signInHint)
			return
		}
		// Before anything is read or audited: a flood costs a token each and nothing more.
		if wait := s.acts.Take(who.Platform+"/"+who.ID, s.opt.Now()); wait > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(int((wait+time.Second-1)/time.Second)))
			writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": s.acts.SlowDown("page actions", wait)})
			return
		}
		in := s.person(r.Context(), who)
		if out, ok := s.may(r.Context(), in, s.knownID(r.Context(), r.PathValue("id")), verb(r)); !ok {
			s.log.Info("monitoring page action refused", "platform", who.Platform, "user", who.ID, "path", r.URL.Path)
			writeJSON(w, http.StatusForbidden, out)
			return
		}
		body, ok := readActionBody(w, r)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
		defer cancel()
		// An id no session has goes to the handler as typed, which says so.
		if err := s.resolveID(ctx, r); err != nil && !isNotFound(err) {
			s.fail(w, err)
			return
		}
		out, err := f(ctx, in, body, r)
		if err != nil {
			s.fail(w, err)
			return
		}
		status := http.StatusOK
		if !out.OK {
			status = http.StatusConflict
			if strings.Contains(out.Text, "not allowed") {
				status = http.StatusForbidden
			}
		}
		s.log.Info("monitoring page action", "platform", who.Platform, "user", who.ID, "path", r.URL.Path, "ok", out.OK)
		writeJSON(w, status, out)
	}
}

// readActionBody reads an action's JSON object of strings (none is an empty one); when it
// cannot, it has answered why.
func readActionBody(w http.ResponseWriter, r *http.Request) (map[string]string, bool) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "actions take a JSON body (Content-Type: application/json)"})
		return nil, false
	}
	body := map[string]string{}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxActionBody))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("the request is larger than %d bytes", maxActionBody)})
		return nil, false
	}
	if len(strings.TrimSpace(string(raw))) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the body must be a JSON object of strings: " + err.Error()})
			return nil, false
		}
	}
	return body, true
}

// done reads a handler's reply: a public reply is a change made and announced; a private
// one is a refusal or an error, meant for the person only.
func done(r bot.Reply) outcome {
	return outcome{OK: !r.Private, Text: replyText(r)}
}

func replyText(r bot.Reply) string {
	if r.Text != "" {
		return r.Text
	}
	if r.Card != nil {
		return r.Card.Title
	}
	return ""
}

func (s *Server) decide(ctx context.Context, in bot.Interaction, body map[string]string, r *http.Request) (outcome, error) {
	sid, pid := r.PathValue("id"), r.PathValue("pid")
	if len(sid) > 100 || len(pid) > 100 {
		return outcome{}, badRequest("session or proposal id is too long")
	}
	switch verb := r.PathValue("verb"); verb {
	case bot.ButtonApprove:
		in.Kind, in.ActionID = bot.KindAction, bot.ActionID(bot.ButtonApprove, sid, pid)
		return done(s.opt.Actions.Do(ctx, in)), nil
	case bot.ButtonReject:
		if strings.TrimSpace(body["feedback"]) == "" {
			return outcome{Text: "reject needs a reason: what should change? (" + bot.RejectHint + ")", Fields: map[int]string{0: "say what should change"}}, nil
		}
		in.Kind, in.ActionID, in.Values = bot.KindSubmit, bot.ActionID(bot.ButtonReject, sid, pid), map[string]string{bot.FieldFeedback: body["feedback"]}
		return done(s.opt.Actions.Do(ctx, in)), nil
	case bot.ButtonEdit:
		// The form's lines are the whole patch, as in the chat modal.
		lines := strings.Split(strings.ReplaceAll(body["patch"], "\r\n", "\n"), "\n")
		in.Kind, in.ActionID, in.Values = bot.KindSubmit, bot.ActionID(bot.ButtonEdit, sid, pid), map[string]string{bot.FieldPatch: body["patch"]}
		out := done(s.opt.Actions.Do(ctx, in))
		if !out.OK {
			out.Fields = bot.FieldErrors(out.Text, lines)
		}
		return out, nil
	default:
		return outcome{}, notFound("unknown decision %q (approve, reject or edit)", bot.Truncate(verb, 20))
	}
}

// prefer answers the A/B card that waits (answer a, b or tie, with an optional note) as the
// typed reply in the session's thread would: the same handler, allow-list, audit and one
// decision per pair.
func (s *Server) prefer(ctx context.Context, in bot.Interaction, body map[string]string, r *http.Request) (outcome, error) {
	if len(r.PathValue("id")) > 100 {
		return outcome{}, badRequest("session id is too long")
	}
	ss, err := s.lookup(ctx, r.PathValue("id"))
	if err != nil {
		return outcome{}, err
	}
	card, ok := ss.OpenCard()
	if seq, _ := strconv.Atoi(body["card"]); !ok || seq != card.Seq {
		// Answered meanwhile (or expired): the engine names who answered first.
		for _, p := range ss.Preferences {
			if strconv.Itoa(p.Seq) == body["card"] {
				card, ok = p, true
			}
		}
		if !ok {
			return outcome{Text: "that A/B card does not exist"}, nil
		}
	}
	note := strings.TrimSpace(strings.ReplaceAll(body["note"], "\n", " "))
	var text string
	switch body["answer"] {
	case session.AnswerA:
		text = fmt.Sprintf("prefer %d over %d %s", card.A, card.B, note)
	case session.AnswerB:
		text = fmt.Sprintf("prefer %d over %d %s", card.B, card.A, note)
	case session.AnswerTie:
		text = "prefer neither " + note
	default:
		return outcome{}, badRequest("answer must be a, b or tie")
	}
	in.Kind, in.Text, in.SessionID = bot.KindReply, strings.TrimSpace(text), ss.ID
	return done(s.opt.Actions.Do(ctx, in)), nil
}

// knownID is the session typed names, for the audit of a refusal, or "" when it names none
// (or several): the answer is the same either way, and no audit index is made for an id
// that someone who may not act made up.
func (s *Server) knownID(ctx context.Context, typed string) string {
	if typed == "" {
		return ""
	}
	id, err := session.ResolveID(ctx, s.opt.Store, typed)
	if err != nil {
		return ""
	}
	return id
}

// may checks the permission verb needs in session sid ("" for none) as chat does
// (Actions.Refuse); when it is missing, the refusal. A verb no route knows needs none here:
// its handler answers 404 before it looks at the session.
func (s *Server) may(ctx context.Context, in bot.Interaction, sid string, verb bot.Verb) (outcome, bool) {
	in.SessionID = sid
	r, ok := s.opt.Actions.Refuse(ctx, in, bot.Command{Verb: verb})
	return done(r), ok
}

// review is go, promote N or drop N on the promotion plan that waits.
func (s *Server) review(ctx context.Context, in bot.Interaction, body map[string]string, r *http.Request) (outcome, error) {
	ss, err := s.lookup(ctx, r.PathValue("id"))
	if err != nil {
		return outcome{}, err
	}
	text := body["action"]
	switch text {
	case session.ReviewGo:
	case session.ReviewPromote, session.ReviewDrop:
		n, err := strconv.Atoi(strings.TrimSpace(body["trial"]))
		if err != nil || n < 0 {
			return outcome{Text: "give the number of a trial to " + text, Fields: map[int]string{0: "a trial's number"}}, nil
		}
		text = fmt.Sprintf("%s %d", text, n)
	default:
		return outcome{}, badRequest("action must be go, promote or drop")
	}
	in.Kind, in.Text, in.SessionID = bot.KindReply, text, ss.ID
	return done(s.opt.Actions.Do(ctx, in)), nil
}

// control is pause, resume and cancel of one session.
func (s *Server) control(ctx context.Context, in bot.Interaction, _ map[string]string, r *http.Request) (outcome, error) {
	verb := r.PathValue("verb")
	switch verb {
	case string(bot.VerbPause), string(bot.VerbResume), string(bot.VerbCancel):
	default:
		return outcome{}, notFound("unknown action %q (pause, resume or cancel)", bot.Truncate(verb, 20))
	}
	if _, err := s.lookup(ctx, r.PathValue("id")); err != nil {
		return outcome{}, err
	}
	in.Kind, in.Text, in.SessionID = bot.KindCommand, verb, r.PathValue("id")
	return done(s.opt.Actions.Do(ctx, in)), nil
}

// start is /tune start with the same arguments ("mode=approval trials=8").
func (s *Server) start(ctx context.Context, in bot.Interaction, body map[string]string, _ *http.Request) (outcome, error) {
	args := strings.TrimSpace(body["args"])
	if strings.ContainsAny(args, "\n\r") {
		return outcome{Text: "start arguments go on one line: key=value …"}, nil
	}
	in.Kind, in.Text = bot.KindCommand, strings.TrimSpace("start "+args)
	return done(s.opt.Actions.Do(ctx, in)), nil
}

// agent is the advisor's connection test; its answer is private either way.
func (s *Server) agent(ctx context.Context, in bot.Interaction, _ map[string]string, _ *http.Request) (outcome, error) {
	in.Kind, in.Text = bot.KindCommand, string(bot.VerbAgent)
	r := s.opt.Actions.Do(ctx, in)
	return outcome{OK: strings.HasPrefix(r.Text, "advisor connection works"), Text: replyText(r)}, nil
}

type presetView struct {
	Name      string   `json:"name"`
	Task      string   `json:"task"`
	SessionID string   `json:"session_id,omitempty"`
	Trial     string   `json:"trial,omitempty"`
	Score     float64  `json:"score"`
	ScoreStd  float64  `json:"score_std"`
	Imported  bool     `json:"imported"`
	Approvers []string `json:"approvers,omitempty"`
	Created   string   `json:"created"`

	// Trainer is the kind of trainer that made it (session.TrainerSim, ...), "" when not
	// recorded; TrainerText says it in words.
	Trainer     string `json:"trainer"`
	TrainerText string `json:"trainer_text"`

	// Gain is the preset's one comparable figure as every preset list shows it
	// (preset.GainText), under the heading gain_heading of the answer; GainDetail says where
	// the defaults were measured, or why the figure is unknown; BuiltOn is what its session
	// started from (preset.BuiltOnText).
	Gain       string `json:"gain"`
	GainDetail string `json:"gain_detail"`
	BuiltOn    string `json:"built_on"`
}

func presetOf(p session.Preset) presetView {
	v := presetView{Name: p.Name, Task: p.Task, SessionID: p.SessionID, Score: p.Score, ScoreStd: p.ScoreStd,
		Imported: preset.Imported(p), Approvers: p.Approvers, Created: stamp(p.CreatedAt), Trainer: p.Trainer, TrainerText: session.TrainerText(p.Trainer),
		Gain: preset.GainText(p), GainDetail: preset.GainDetail(p), BuiltOn: preset.BuiltOnText(p)}
	if !v.Imported {
		v.Trial = p.Trial.String()
	}
	return v
}

func (s *Server) presets(ctx context.Context, _ bot.Interaction, _ *http.Request) (any, error) {
	ps, err := s.opt.Store.Presets(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing presets: %w", err)
	}
	out := make([]presetView, 0, len(ps))
	for _, p := range preset.ByGain(ps) {
		out = append(out, presetOf(p))
	}
	return map[string]any{"presets": out, "gain_heading": preset.GainHeading, "score_note": bot.PresetGainNote}, nil
}

func (s *Server) presetView(ctx context.Context, _ bot.Interaction, r *http.Request) (any, error) {
	name := r.PathValue("name")
	if err := preset.CheckName(name); err != nil {
		return nil, badRequest("%s", err.Error())
	}
	p, err := s.opt.Store.Preset(ctx, name)
	if errors.Is(err, session.ErrNotFound) {
		return nil, notFound("no preset named %q", bot.Truncate(name, 40))
	}
	if err != nil {
		return nil, fmt.Errorf("reading preset: %w", err)
	}
	space := s.spaceOf(p.Task)
	return map[string]any{"preset": presetOf(p), "gain_heading": preset.GainHeading, "config": p.Config, "metrics": p.Metrics,
		"diff": changes(space.Diff(space.Defaults(), p.Config))}, nil
}

type downloadFunc func(ctx context.Context, in bot.Interaction, r *http.Request) (bot.Reply, error)

// download serves the file a chat command would attach (export, policy), to a signed-in
// person allowed to read: the same code finds and checks it (and counts it against the
// person's chat read limit, as the command would).
func (s *Server) download(f downloadFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in, ok := s.reader(w, r)
		if !ok {
			return
		}
		name := r.PathValue("name")
		if err := preset.CheckName(name); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		rep, err := f(r.Context(), in, r)
		if err != nil {
			s.fail(w, err)
			return
		}
		if rep.Card != nil {
			for _, b := range rep.Card.Blocks {
				for _, a := range b.Attachments {
					w.Header().Set("Content-Type", a.ContentType)
					w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Name}))
					w.Header().Set("Cache-Control", "no-store")
					_, _ = w.Write(a.Data)
					return
				}
			}
		}
		status := http.StatusNotFound
		if !strings.HasPrefix(rep.Text, "no preset") {
			status = http.StatusConflict
		}
		writeJSON(w, status, map[string]string{"error": replyText(rep)})
	}
}

func (s *Server) exportPreset(ctx context.Context, in bot.Interaction, r *http.Request) (bot.Reply, error) {
	in.Kind, in.Text = bot.KindCommand, "export "+r.PathValue("name")
	return s.opt.Actions.Do(ctx, in), nil
}

func (s *Server) policy(ctx context.Context, in bot.Interaction, r *http.Request) (bot.Reply, error) {
	in.Kind, in.Text = bot.KindCommand, "policy "+r.PathValue("name")
	return s.opt.Actions.Do(ctx, in), nil
}

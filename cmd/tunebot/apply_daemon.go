package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	"tunebot/apply"
	"tunebot/config"
	"tunebot/httpd"
	"tunebot/session"
)

// applyPath is the tunebot apply command's route on the daemon's socket: while the daemon
// holds the store, apply diff, apply and rollback run in the daemon, with its apply: section.
const applyPath = "/apply"

// applyAnswerLimit bounds the daemon's answer to an apply: its output, tests' included.
const applyAnswerLimit = 1 << 20

// applyAnswer is what the command prints for an applyRequest, and its exit code.
type applyAnswer struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Code   int    `json:"code"`
	// Repo is the checkout the daemon's apply: section changes, "" when it has none.
	Repo string `json:"repo"`
}

// applyViaDaemon asks the daemon holding cfg's store to run req, and prints its answer as
// the command would have printed it itself, after a line that says whose apply: section it
// ran with (cfgPath is the command's --config, which the daemon does not read).
func applyViaDaemon(ctx context.Context, e *env, cfg config.Config, cfgPath string, req applyRequest) int {
	token, err := daemonToken(cfg, "apply presets")
	if err != nil {
		fmt.Fprintln(e.stderr, "apply:", err)
		return 1
	}
	body, err := json.Marshal(req)
	if err != nil {
		fmt.Fprintln(e.stderr, "apply:", err)
		return 1
	}
	// No time limit here: the daemon bounds the tests with its apply.test_timeout, and
	// Ctrl-C ends ctx.
	resp, err := httpd.Call(ctx, socketPath(cfg), http.MethodPost, applyPath, token, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(e.stderr, "apply: a running tunebot holds the data file, and asking it failed: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	var ans applyAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, applyAnswerLimit)).Decode(&ans); err != nil {
		fmt.Fprintf(e.stderr, "apply: reading the answer of the daemon on %s: %v\n", socketPath(cfg), err)
		return 1
	}
	if ans.Repo != "" {
		fmt.Fprint(e.stdout, daemonApplyNote(cfgPath, cfg.Apply.Repo, ans.Repo))
	}
	fmt.Fprint(e.stdout, ans.Stdout)
	fmt.Fprint(e.stderr, ans.Stderr)
	return ans.Code
}

// daemonApplyNote says that the daemon applies with its own apply: section, to the checkout
// repo, and not with the command's config (cfgPath, whose apply.repo is mine); and, plainly,
// when that config names another checkout, which the command then leaves as it is.
func daemonApplyNote(cfgPath, mine, repo string) string {
	whose := "the command's config is not read"
	if cfgPath != "" {
		whose = "not " + cfgPath + "'s"
	}
	note := fmt.Sprintf("a running tunebot holds the data file: applying with its apply: section (repo %s), %s\n", repo, whose)
	if mine != "" && filepath.Clean(mine) != filepath.Clean(repo) {
		name := cfgPath
		if name == "" {
			name = "the command's config"
		}
		note += fmt.Sprintf("%s names another checkout (apply.repo %s), which is left as it is\n", name, mine)
	}
	return note
}

// applyRoute serves tunebot apply on the daemon's socket with the token: the daemon's own
// apply: section, the checkout gate chat's /tune apply takes, and the socket's caller
// (socketCaller) recorded as who applied, never a name the request carries.
func (d *daemon) applyRoute(l *httpd.Local, token string) {
	l.Handle("POST "+applyPath, httpd.WithToken(token, "an apply", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req applyRequest
		if !decodeSocketRequest(w, r, "an apply request", &req) {
			return
		}
		if n := len(req.Operands); n == 0 || n > 2 || (req.Operands[0] == "diff") != (n == 2) {
			http.Error(w, "not an apply request: give diff PRESET, PRESET or rollback", http.StatusBadRequest)
			return
		}
		var stdout, stderr bytes.Buffer
		code := d.applyForCommand(r.Context(), &stdout, &stderr, req, socketCaller(r))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(applyAnswer{Stdout: stdout.String(), Stderr: stderr.String(), Code: code, Repo: d.cfg.Apply.Repo})
	})))
}

// applyForCommand runs req for the tunebot command as applyOp does without a daemon. A
// change to the checkout (--yes) waits for no other: it takes the gate chat's applies and
// session starts take, and is refused while a session uses the checkout.
func (d *daemon) applyForCommand(ctx context.Context, stdout, stderr io.Writer, req applyRequest, by session.Actor) int {
	if d.cfg.Apply.Repo == "" {
		fmt.Fprintln(stderr, "apply is not configured in the running tunebot: its config has no apply: section (the command's --config is not read while it runs); set apply.repo (and its edits and test command) in the config it runs with and restart it, see config.example.yaml")
		return 1
	}
	if req.Yes && req.Operands[0] != "diff" {
		if !d.gate.BeginApply() {
			fmt.Fprintln(stderr, "apply: an apply or rollback is already running; wait for its result")
			return 1
		}
		defer d.gate.EndApply()
		s, active, err := session.ActiveSession(ctx, d.app.db)
		if err != nil {
			fmt.Fprintln(stderr, "apply: reading the active session:", err)
			return 1
		}
		if active {
			fmt.Fprintf(stderr, "apply: session %s is %s and uses the trainer checkout; apply or roll back after it ends (or cancel it)\n", session.Short(s.ID), s.State)
			return 1
		}
	}
	// An applier of its own per request, from the daemon's apply: section: FromSim and
	// Partial are the command's, and chat's applier never has them set.
	ap, err := apply.New(d.cfg.Apply, d.cfg.SpaceOf(d.cfg.Apply.Task), d.app.actions, d.log)
	if err != nil {
		fmt.Fprintln(stderr, "apply:", err)
		return 1
	}
	ap.FromSim, ap.Partial, ap.Unconfirmed = req.FromSim, req.Partial, req.Unconfirmed
	return applyOp(ctx, stdout, stderr, ap, d.app.db, req, by)
}

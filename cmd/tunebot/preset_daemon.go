package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"tunebot/config"
	"tunebot/httpd"
	"tunebot/preset"
	"tunebot/session"
)

// The tunebot preset command's routes on the daemon's socket: while the daemon holds the
// store, list, show, export and import go through it, as backup and prune do.
const (
	presetsPath  = "/presets"
	presetsLimit = 1 << 20 // a preset list's answer; one preset is far smaller
)

// presetBook is what tunebot preset reads and writes: the store itself when no daemon holds
// it, the daemon's socket when one does.
type presetBook interface {
	list(ctx context.Context) ([]session.Preset, error)
	get(ctx context.Context, name string) (session.Preset, error)
	// importFile saves data as preset name of task (--task, "" for the default), approved by
	// the person at the terminal.
	importFile(ctx context.Context, name, task string, data []byte) (session.Preset, error)
}

// storeBook is the store opened by the command, with its config's tasks; by is the person
// at the terminal.
type storeBook struct {
	db  preset.Store
	cfg config.Config
	by  session.Actor
}

func (b storeBook) list(ctx context.Context) ([]session.Preset, error) { return b.db.Presets(ctx) }

func (b storeBook) get(ctx context.Context, name string) (session.Preset, error) {
	return getPreset(ctx, b.db, name)
}

func (b storeBook) importFile(ctx context.Context, name, task string, data []byte) (session.Preset, error) {
	task, space, err := b.cfg.TaskFor(task)
	if err != nil {
		return session.Preset{}, err
	}
	return preset.Import(ctx, b.db, space, task, name, data, b.by)
}

// daemonBook asks the running daemon on its socket, with its token.
type daemonBook struct {
	socket, token string
	client        *http.Client
}

func newDaemonBook(cfg config.Config) (daemonBook, error) {
	token, err := daemonToken(cfg, "use its presets")
	if err != nil {
		return daemonBook{}, err
	}
	return daemonBook{socket: socketPath(cfg), token: token, client: httpd.SocketClient(socketPath(cfg), time.Minute)}, nil
}

func (b daemonBook) list(ctx context.Context) ([]session.Preset, error) {
	var ps []session.Preset
	return ps, b.do(ctx, http.MethodGet, presetsPath, nil, &ps)
}

func (b daemonBook) get(ctx context.Context, name string) (session.Preset, error) {
	var p session.Preset
	return p, b.do(ctx, http.MethodGet, presetsPath+"/"+url.PathEscape(name), nil, &p)
}

func (b daemonBook) importFile(ctx context.Context, name, task string, data []byte) (session.Preset, error) {
	var p session.Preset
	path := presetsPath + "/" + url.PathEscape(name)
	if task != "" {
		path += "?" + url.Values{"task": {task}}.Encode()
	}
	return p, b.do(ctx, http.MethodPost, path, strings.NewReader(string(data)), &p)
}

// presetRefusal is the daemon's answer to a preset request it refused: the message a person
// reads, and a file's problems one by one (printed a line each, as without the daemon).
type presetRefusal struct {
	Error    string   `json:"error"`
	What     string   `json:"what,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

func (b daemonBook) do(ctx context.Context, method, path string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, httpd.SocketURL(path), body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("a running tunebot holds the data file, and asking it failed: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, presetsLimit))
	if err != nil {
		return fmt.Errorf("reading the daemon's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var r presetRefusal
		if json.Unmarshal(raw, &r) != nil || r.Error == "" {
			return fmt.Errorf("the daemon on %s refused: %s %s", b.socket, resp.Status, strings.TrimSpace(string(raw)))
		}
		if len(r.Problems) > 0 {
			return &session.InvalidError{What: r.What, Problems: r.Problems}
		}
		return session.Userf(nil, "%s", r.Error)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("reading the daemon's answer: %w", err)
	}
	return nil
}

// presetRoutes serves the preset command on the daemon's socket: each with the token, an
// import recorded as approved by the socket's caller (socketCaller), never a name the
// request carries.
func (d *daemon) presetRoutes(l *httpd.Local, token string) {
	l.Handle("GET "+presetsPath, httpd.WithToken(token, "the presets", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps, err := d.app.db.Presets(r.Context())
		answerPreset(w, ps, err, d)
	})))
	l.Handle("GET "+presetsPath+"/{name}", httpd.WithToken(token, "a preset", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := getPreset(r.Context(), d.app.db, r.PathValue("name"))
		answerPreset(w, p, err, d)
	})))
	l.Handle("POST "+presetsPath+"/{name}", httpd.WithToken(token, "a preset import", d.presetImport()))
}

// presetImport imports the request's body as preset {name} of the task the query names (the
// daemon's config decides which tasks there are), read through the import's size limit: a
// larger file is refused as too large, before anything is parsed.
func (d *daemon) presetImport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, preset.MaxImportBytes))
		if tooBig := new(http.MaxBytesError); errors.As(err, &tooBig) {
			err = session.Userf(nil, "preset file is over %d bytes; a reward configuration is at most %d", preset.MaxImportBytes, preset.MaxImportBytes)
		}
		if err != nil {
			answerPreset(w, nil, err, d)
			return
		}
		task, space, err := d.cfg.TaskFor(r.URL.Query().Get("task"))
		if err != nil {
			answerPreset(w, nil, err, d)
			return
		}
		p, err := preset.Import(r.Context(), d.app.actions, space, task, r.PathValue("name"), data, socketCaller(r))
		answerPreset(w, p, err, d)
	})
}

// answerPreset writes v, or the refusal a person reads (an internal error only in the log).
func answerPreset(w http.ResponseWriter, v any, err error, d *daemon) {
	w.Header().Set("Content-Type", "application/json")
	var invalid *session.InvalidError
	switch {
	case err == nil:
		_ = json.NewEncoder(w).Encode(v)
		return
	case errors.As(err, &invalid):
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(presetRefusal{Error: err.Error(), What: invalid.What, Problems: invalid.Problems})
		return
	}
	msg, user := session.UserMessage(err)
	if !user {
		d.log.Error("the preset command through the socket", "err", err)
		msg = "that failed inside the daemon; the details are in its log"
	}
	status := http.StatusBadRequest
	if errors.Is(err, session.ErrNotFound) {
		status = http.StatusNotFound
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(presetRefusal{Error: msg})
}

package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"tunebot/apply"
	"tunebot/schedule"
	"tunebot/service"
	"tunebot/session"
	"tunebot/trainer"
)

// Config is tunebot's YAML configuration. Secrets are never fields here: they come from the
// environment only (DEEPSEEK_API_KEY, SLACK_*, DISCORD_BOT_TOKEN, NTFY_TOKEN).
type Config struct {
	DataDir string           `yaml:"data_dir"`
	Log     LogConfig        `yaml:"log"`
	Trainer TrainerConfig    `yaml:"trainer"`
	Session session.Settings `yaml:"session"`
	Space   *session.Space   `yaml:"reward_space"`
	Advisor AdvisorConfig    `yaml:"advisor"`
	Chat    ChatConfig       `yaml:"chat"`
	// Apply writes a preset into the trainer checkout as one reversible git commit.
	Apply apply.Config `yaml:"apply"`
	// Schedule starts sessions on cron specs and sends reminders and a daily digest.
	Schedule schedule.Config `yaml:"schedule"`
	// Service serves /healthz and /metrics on a local address.
	Service service.Config `yaml:"service"`
}

// LogConfig selects the log level and format.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// TrainerConfig holds the argv templates of DESIGN.md §4.
type TrainerConfig struct {
	Workdir     string        `yaml:"workdir"`
	Python      string        `yaml:"python"`
	Train       []string      `yaml:"train"`
	ResumeArgs  []string      `yaml:"resume_args"`
	Evaluate    []string      `yaml:"evaluate"`
	JobTimeout  time.Duration `yaml:"job_timeout"`
	EvalTimeout time.Duration `yaml:"eval_timeout"`
	Grace       time.Duration `yaml:"grace"`
	// SimSurfaceSeed picks the built-in sim trainer's response surface: 0 is the demo's,
	// other seeds draw one of a family (trainer/sim.Surface), for trying tunebot on a problem
	// it was not tuned on. It needs the sim trainer's templates.
	SimSurfaceSeed int64 `yaml:"sim_surface_seed"`
}

// templates returns the train and evaluate argv templates, with the sim surface seed
// passed to the built-in sim trainer when one is set.
func (t TrainerConfig) templates() (train, evaluate []string) {
	train, evaluate = t.Train, t.Evaluate
	if t.SimSurfaceSeed != 0 {
		seed := []string{"--surface-seed", strconv.FormatInt(t.SimSurfaceSeed, 10)}
		train = append(slices.Clone(train), seed...)
		evaluate = append(slices.Clone(evaluate), seed...)
	}
	return train, evaluate
}

// AdvisorConfig configures the DeepSeek advisor; the key is DEEPSEEK_API_KEY, never here.
type AdvisorConfig struct {
	BaseURL     string        `yaml:"base_url"`
	Model       string        `yaml:"model"`
	Timeout     time.Duration `yaml:"timeout"`
	Temperature float64       `yaml:"temperature"`
	// Hybrid decides how the advisor and the numeric sampler share proposals: "off" (advisor
	// only, sampler as fallback when enabled), "alternate", or "stall" (the sampler proposes
	// when the advisor's last StallAfter proposals did not improve).
	Hybrid     string `yaml:"hybrid"`
	StallAfter int    `yaml:"stall_after"`
}

// ChatConfig enables chat adapters and phone notifications. Tokens come from the
// environment only (SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_SIGNING_SECRET,
// DISCORD_BOT_TOKEN, NTFY_TOKEN, TUNEBOT_WEBHOOK_URL).
type ChatConfig struct {
	Slack   SlackConfig   `yaml:"slack"`
	Discord DiscordConfig `yaml:"discord"`
	Ntfy    NtfyConfig    `yaml:"ntfy"`
	Webhook WebhookConfig `yaml:"webhook"`
	// Expire is how long an undelivered chat message is kept before it is dropped.
	Expire time.Duration `yaml:"expire"`
}

// NtfyConfig pushes to an ntfy topic (token from NTFY_TOKEN, if the topic needs one).
type NtfyConfig struct {
	Server string `yaml:"server"` // e.g. https://ntfy.sh
	Topic  string `yaml:"topic"`
}

// WebhookConfig posts every phone-worthy event as JSON to TUNEBOT_WEBHOOK_URL; the URL
// lives in the environment because webhook URLs carry their secret in the path.
type WebhookConfig struct {
	Enabled bool `yaml:"enabled"`
}

// defaultConfig is the embedded configuration: the built-in sim trainer, so `make demo`
// needs no GPU and no file.
func defaultConfig() Config {
	return Config{
		DataDir: "./data",
		Log:     LogConfig{Level: "info", Format: "text"},
		Trainer: TrainerConfig{
			Workdir:     ".",
			Python:      "python3",
			Train:       slices.Clone(trainer.SimTrain),
			ResumeArgs:  slices.Clone(trainer.SimResume),
			Evaluate:    slices.Clone(trainer.SimEvaluate),
			JobTimeout:  12 * time.Hour,
			EvalTimeout: time.Hour,
			Grace:       10 * time.Second,
		},
		Session: session.DefaultSettings(),
		Advisor: AdvisorConfig{
			BaseURL: "https://api.deepseek.com", Model: "deepseek-v4-flash",
			Timeout: 3 * time.Minute, Temperature: 0.2, Hybrid: "off", StallAfter: 3,
		},
		Chat: ChatConfig{Slack: defaultSlackConfig(), Discord: defaultDiscordConfig(), Expire: 24 * time.Hour},
	}
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// loadConfig reads path over the embedded defaults ("" means the defaults alone). ${NAME}
// is replaced from the environment; unknown keys, bad values and unset variables are
// errors that name each field.
func loadConfig(path string, getenv func(string) string) (Config, error) {
	cfg := defaultConfig()
	if path == "" {
		return cfg, cfg.validate()
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return cfg, fmt.Errorf("config file %s does not exist", path)
		}
		return cfg, fmt.Errorf("reading config %s: %w", path, err)
	}
	// Unknown keys are looked for in the file as written, so their line numbers are right;
	// the values are then decoded from the parsed tree after ${NAME} expansion, which keeps
	// the tree's line numbers too, never expands a comment or a key, and never lets a
	// variable's value change the structure of the file.
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return cfg, fmt.Errorf("config %s: %s", path, yamlMessage(err))
	}
	// Every problem is named at once: unknown keys, unset variables, values of the wrong
	// type and values out of range.
	probs := unknownKeys(&root)
	invalid := func(err error) error {
		var ie *session.InvalidError
		switch {
		case errors.As(err, &ie):
			probs = append(probs, ie.Problems...)
		case err != nil:
			probs = append(probs, err.Error())
		}
		if len(probs) == 0 {
			return nil
		}
		return &session.InvalidError{What: "config " + path, Problems: probs}
	}
	var missing []string
	expandNode(&root, getenv, &missing)
	if len(missing) > 0 {
		return cfg, invalid(fmt.Errorf("environment variable(s) %s not set", strings.Join(missing, ", ")))
	}
	// Promote derives from trial_count unless given, so clear the default before decoding.
	cfg.Session.Promote = nil
	if len(root.Content) > 0 {
		if err := root.Decode(&cfg); err != nil {
			var te *yaml.TypeError
			if errors.As(err, &te) {
				return cfg, invalid(&session.InvalidError{Problems: te.Errors})
			}
			return cfg, invalid(err)
		}
	}
	if cfg.Trainer.Workdir != "" && !filepath.IsAbs(cfg.Trainer.Workdir) {
		cfg.Trainer.Workdir = filepath.Join(filepath.Dir(path), cfg.Trainer.Workdir)
	}
	if cfg.Apply.Repo != "" && !filepath.IsAbs(cfg.Apply.Repo) {
		cfg.Apply.Repo = filepath.Join(filepath.Dir(path), cfg.Apply.Repo)
	}
	if cfg.DataDir != "" && !filepath.IsAbs(cfg.DataDir) {
		cfg.DataDir = filepath.Join(filepath.Dir(path), cfg.DataDir)
	}
	return cfg, invalid(cfg.validate())
}

// unknownKeys reports every key of the parsed file that Config does not have, each with
// its line, its place in the file and, for a misspelling, the key that was meant.
func unknownKeys(root *yaml.Node) []string {
	var probs []string
	walkKeys(root, reflect.TypeFor[Config](), "", &probs)
	return probs
}

var yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// walkKeys checks the mapping keys of n against the yaml fields of t, recursively.
func walkKeys(n *yaml.Node, t reflect.Type, path string, probs *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			walkKeys(c, t, path, probs)
		}
		return
	}
	if reflect.PointerTo(t).Implements(yamlUnmarshaler) {
		return // it reads its own keys
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // a type error the decoder names
		}
		fields := yamlFields(t)
		names := slices.Sorted(maps.Keys(fields))
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" || k.Value == "<<" && k.Style == 0 {
				// A merge key (<<: *defaults) lends its mapping's keys to this one.
				for _, m := range mergedMaps(v) {
					walkKeys(m, t, path, probs)
				}
				continue
			}
			at := joinKey(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				hint := ""
				if best, ok := session.Closest(k.Value, names); ok {
					hint = " (did you mean " + joinKey(path, best) + "?)"
				}
				*probs = append(*probs, fmt.Sprintf("line %d: %s is not a setting%s", k.Line, at, hint))
				continue
			}
			walkKeys(v, ft, at, probs)
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				walkKeys(n.Content[i+1], t.Elem(), joinKey(path, n.Content[i].Value), probs)
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for j, c := range n.Content {
				walkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, j), probs)
			}
		}
	}
}

// mergedMaps returns the mappings a merge key's value names: one (an alias or a literal
// mapping) or a sequence of them.
func mergedMaps(v *yaml.Node) []*yaml.Node {
	for v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if v.Kind == yaml.SequenceNode {
		var out []*yaml.Node
		for _, c := range v.Content {
			out = append(out, mergedMaps(c)...)
		}
		return out
	}
	return []*yaml.Node{v}
}

// yamlFields maps the keys a struct takes in YAML to their types, as yaml.v3 reads them:
// the tag's name, else the lower-cased field name; inline structs lend theirs.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			maps.Copy(out, yamlFields(f.Type))
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func expandNode(n *yaml.Node, getenv func(string) string, missing *[]string) {
	if n.Kind == yaml.ScalarNode && envRef.MatchString(n.Value) {
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			name := envRef.FindStringSubmatch(m)[1]
			v := getenv(name)
			if v == "" {
				*missing = append(*missing, name)
			}
			return v
		})
		if n.Style == 0 {
			n.Tag = "" // a plain ${N} that became 12 is an int, as if 12 had been written
		}
	}
	for _, c := range n.Content {
		expandNode(c, getenv, missing)
	}
}

func yamlMessage(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return err.Error()
}

// space is the configured reward space, or the default one.
func (c Config) space() *session.Space {
	if c.Space != nil {
		return c.Space
	}
	return session.DefaultSpace()
}

// validate names every bad field at once.
func (c *Config) validate() error {
	var probs []string
	c.Session.Normalize()
	if c.DataDir == "" {
		probs = append(probs, "data_dir: must be set")
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		probs = append(probs, fmt.Sprintf("log.level: %q is not debug, info, warn or error", c.Log.Level))
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		probs = append(probs, fmt.Sprintf("log.format: %q is not text or json", c.Log.Format))
	}
	if len(c.Trainer.Train) == 0 {
		probs = append(probs, "trainer.train: must be a non-empty argv list")
	}
	if len(c.Trainer.Evaluate) == 0 {
		probs = append(probs, "trainer.evaluate: must be a non-empty argv list")
	}
	if c.Trainer.SimSurfaceSeed < 0 {
		probs = append(probs, fmt.Sprintf("trainer.sim_surface_seed: %d must not be negative", c.Trainer.SimSurfaceSeed))
	} else if c.Trainer.SimSurfaceSeed != 0 && !isSimTrainer(c.Trainer) {
		probs = append(probs, "trainer.sim_surface_seed: only the built-in sim trainer (sim-train) has response surfaces")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"trainer.job_timeout", c.Trainer.JobTimeout}, {"trainer.eval_timeout", c.Trainer.EvalTimeout}, {"trainer.grace", c.Trainer.Grace}, {"advisor.timeout", c.Advisor.Timeout}} {
		if d.v < 0 {
			probs = append(probs, d.name+": must not be negative")
		}
	}
	if err := c.Session.Validate(); err != nil {
		probs = append(probs, problems("session", err)...)
	}
	if c.Space != nil {
		if err := c.Space.Check(); err != nil {
			probs = append(probs, problems("reward_space", err)...)
		}
	}
	if c.Advisor.BaseURL == "" || !(strings.HasPrefix(c.Advisor.BaseURL, "https://") || strings.HasPrefix(c.Advisor.BaseURL, "http://")) {
		probs = append(probs, fmt.Sprintf("advisor.base_url: %q must be an http(s) URL", c.Advisor.BaseURL))
	}
	if c.Advisor.Model == "" {
		probs = append(probs, "advisor.model: must be set")
	}
	if !(c.Advisor.Temperature > 0 && c.Advisor.Temperature <= 2) {
		probs = append(probs, fmt.Sprintf("advisor.temperature: %g must be in (0, 2] (DeepSeek treats 0 as unset)", c.Advisor.Temperature))
	}
	switch c.Advisor.Hybrid {
	case "off", "alternate", "stall":
	default:
		probs = append(probs, fmt.Sprintf("advisor.hybrid: %q is not off, alternate or stall", c.Advisor.Hybrid))
	}
	probs = append(probs, c.Chat.Slack.problems()...)
	probs = append(probs, c.Chat.Discord.problems()...)
	if (c.Chat.Ntfy.Server == "") != (c.Chat.Ntfy.Topic == "") {
		probs = append(probs, "chat.ntfy: server and topic go together")
	}
	if c.Chat.Expire < 0 {
		probs = append(probs, "chat.expire: must not be negative")
	}
	if c.Apply.Repo != "" {
		if err := c.Apply.Check(c.space()); err != nil {
			probs = append(probs, problems("apply", err)...)
		}
	}
	if err := c.Schedule.Check(); err != nil {
		probs = append(probs, problems("schedule", err)...)
	}
	if err := c.Service.Check(); err != nil {
		probs = append(probs, "service: "+err.Error())
	}
	if c.Advisor.StallAfter < 1 {
		probs = append(probs, "advisor.stall_after: must be at least 1")
	}
	if len(probs) > 0 {
		return &session.InvalidError{What: "config invalid", Problems: probs}
	}
	return nil
}

func problems(prefix string, err error) []string {
	var ie *session.InvalidError
	if errors.As(err, &ie) {
		out := make([]string, len(ie.Problems))
		for i, p := range ie.Problems {
			out[i] = prefix + "." + p
		}
		return out
	}
	return []string{prefix + ": " + err.Error()}
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
}

// AdvisorConfig configures the DeepSeek advisor; the key is DEEPSEEK_API_KEY, never here.
type AdvisorConfig struct {
	BaseURL     string        `yaml:"base_url"`
	Model       string        `yaml:"model"`
	Timeout     time.Duration `yaml:"timeout"`
	Temperature float64       `yaml:"temperature"`
	// Hybrid decides how the advisor and the TPE sampler share proposals: "off" (advisor
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
	if err := unknownKeys(raw); err != nil {
		return cfg, fmt.Errorf("config %s: %s", path, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return cfg, fmt.Errorf("config %s: %s", path, yamlMessage(err))
	}
	var missing []string
	expandNode(&root, getenv, &missing)
	if len(missing) > 0 {
		return cfg, fmt.Errorf("config %s: environment variable(s) %s not set", path, strings.Join(missing, ", "))
	}
	// Promote derives from trial_count unless given, so clear the default before decoding.
	cfg.Session.Promote = nil
	if len(root.Content) > 0 {
		if err := root.Decode(&cfg); err != nil {
			return cfg, fmt.Errorf("config %s: %s", path, yamlMessage(err))
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
	return cfg, cfg.validate()
}

// unknownKeys reports the keys of raw that Config does not have, with their lines.
func unknownKeys(raw []byte) error {
	var probe Config
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	err := dec.Decode(&probe)
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return nil // syntax errors are reported by the real decode
	}
	var unknown []string
	for _, m := range te.Errors {
		if strings.Contains(m, "not found in type") {
			unknown = append(unknown, m)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return errors.New(strings.Join(unknown, "; "))
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

// Package config is what a tunebot configuration may be: the YAML file read (Load) over
// the embedded defaults, ${NAME} expanded from the environment, checked against the rule
// table (configRules), every string scanned for tunebot's secrets (secretsInConfig, space
// files too) and the reward spaces loaded; each problem is named with its key and line.
// Only cmd/tunebot imports it (make deps-check).
package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"tunebot/apply"
	"tunebot/bot"
	"tunebot/disk"
	"tunebot/httpd"
	"tunebot/retention"
	"tunebot/schedule"
	"tunebot/secret"
	"tunebot/session"
	"tunebot/trainer"
	"tunebot/trainer/ray"
	"tunebot/trainer/sim"
)

// Config is tunebot's YAML configuration. Secrets are never fields here: they come from the
// environment only (DEEPSEEK_API_KEY, SLACK_*, DISCORD_BOT_TOKEN, NTFY_TOKEN).
type Config struct {
	DataDir string        `yaml:"data_dir"`
	Log     LogConfig     `yaml:"log"`
	Trainer TrainerConfig `yaml:"trainer"`
	// Executor says where trial jobs run (this machine, a Slurm cluster or a Ray cluster)
	// and how many at once.
	Executor ExecutorConfig   `yaml:"executor"`
	Session  session.Settings `yaml:"session"`
	Space    *session.Space   `yaml:"reward_space"`
	// Spaces holds one reward space per task (reward_spaces), for a daemon that tunes
	// several; Space is the one space of a daemon that tunes one.
	Spaces  map[string]*TaskSpace `yaml:"reward_spaces"`
	Advisor AdvisorConfig         `yaml:"advisor"`
	Chat    ChatConfig            `yaml:"chat"`
	// Apply writes a preset into the trainer checkout as one reversible git commit.
	Apply apply.Config `yaml:"apply"`
	// Schedule starts sessions on cron specs and sends reminders and a daily digest.
	Schedule schedule.Config `yaml:"schedule"`
	// Service serves /healthz and /metrics on a local address, and sets the data disk's floor.
	Service ServiceConfig `yaml:"service"`
	// Retention prunes the curves and run directories of old sessions (tunebot prune, and
	// the daemon on a schedule when enabled).
	Retention retention.Config `yaml:"retention"`

	// Warnings are what the file sets that tunebot will not use (a chat section that is
	// not enabled): said by config check and logged when the daemon starts.
	Warnings []string `yaml:"-"`
}

// LogConfig selects the log level and format.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// TrainerConfig holds the argv templates of docs/design.md §4.
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
	// SimSurfaceFamily is the family SimSurfaceSeed draws from: generic (the default),
	// domain (each term acting on the metrics its name is about), coupled (the metric is
	// the name's but the sign often is not, and the gains need several moves at once) or
	// separable (the gains come from separate terms within the 0.5×–2× box, but the first
	// moves are often wrong and must be taken back) or levers (the largest gains on params
	// whose direction nothing declares, near a bound, and on a term that is off).
	SimSurfaceFamily string `yaml:"sim_surface_family"`
	// Events bounds what is read of each training job's event files: tags per trial,
	// points per series, bytes per job (docs/design.md §4).
	Events trainer.EventLimits `yaml:"events"`
}

// Templates returns the train and evaluate argv templates, with the sim surface seed
// passed to the built-in sim trainer when one is set.
func (t TrainerConfig) Templates() (train, evaluate []string) {
	train, evaluate = t.Train, t.Evaluate
	if t.SimSurfaceSeed != 0 {
		seed := []string{"--surface-seed", strconv.FormatInt(t.SimSurfaceSeed, 10)}
		if t.SimSurfaceFamily != "" {
			seed = append(seed, "--surface-family", t.SimSurfaceFamily)
		}
		train = append(slices.Clone(train), seed...)
		evaluate = append(slices.Clone(evaluate), seed...)
	}
	return train, evaluate
}

// ExecutorConfig runs trial jobs here, on a Slurm cluster or on a Ray cluster, up to
// Parallel at once (docs/design.md §4, the executor).
type ExecutorConfig struct {
	Backend string `yaml:"backend"` // local | slurm | ray
	// Parallel is the most trial jobs at once; 0 means the default: local, as many as
	// session.gpus hold (len(gpus)/gpus_per_trial); slurm, 1; ray, as many as the
	// cluster's GPUs hold (its GPUs/gpus_per_trial, asked of the head when tunebot starts).
	Parallel int `yaml:"parallel"`
	// GPUsPerTrial is each job's GPUs: local, its own from session.gpus, never shared;
	// slurm, --gres=gpu:N; ray, entrypoint_num_gpus (0 asks for none on either).
	GPUsPerTrial int         `yaml:"gpus_per_trial"`
	Slurm        SlurmConfig `yaml:"slurm"`
	Ray          RayConfig   `yaml:"ray"`
}

// RayConfig is the head of the ray backend and what every job asks of it. The head's token,
// when it requires one, is RAY_AUTH_TOKEN, a secret: never here.
type RayConfig struct {
	// Address is the head's job server, the dashboard's port: http://ray-head:8265.
	Address      string   `yaml:"address"`
	CPUsPerTrial float64  `yaml:"cpus_per_trial"` // entrypoint_num_cpus; 0: none reserved
	Memory       ByteSize `yaml:"memory"`         // entrypoint_memory; 0: none reserved
	// PollInterval is how often the head is asked about each running job (0: 5 s).
	PollInterval time.Duration `yaml:"poll_interval"`
	// HeadTimeout is how long the head may not answer before the session pauses (0: 2 m).
	HeadTimeout time.Duration `yaml:"head_timeout"`
	// AllowInsecureHTTP lets address be plain http:// to a host that is not this machine
	// while RAY_AUTH_TOKEN is set (the token travels with every request).
	AllowInsecureHTTP bool `yaml:"allow_insecure_http"`
}

// SlurmConfig is what every sbatch of the slurm backend asks for.
type SlurmConfig struct {
	Partition    string    `yaml:"partition"` // "": the cluster's default partition
	Account      string    `yaml:"account"`
	QOS          string    `yaml:"qos"`
	TimeLimit    SlurmTime `yaml:"time_limit"`     // --time of each job; 0: the partition's default
	CPUsPerTrial int       `yaml:"cpus_per_trial"` // --cpus-per-task; 0: Slurm's default
	Mem          string    `yaml:"mem"`            // --mem, e.g. 32G; "": Slurm's default
	SbatchArgs   []string  `yaml:"sbatch_args"`    // more options, each one word: --constraint=a100
	// PollInterval is how often squeue is asked about each running job (0: 5 s). A big
	// cluster's controller may prefer 30s; tests use less than a second.
	PollInterval time.Duration `yaml:"poll_interval"`
}

// ServiceConfig is the service: section: the listener's settings and the free-space floor.
type ServiceConfig struct {
	httpd.Config `yaml:",inline"`
	// MinFree is the free space below which a session pauses rather than start a job, on
	// the filesystems of data_dir and the run directories; 0: twice the session's largest
	// run directory so far, at least 1 GiB (session.Engine.MinFree).
	MinFree ByteSize `yaml:"min_free"`
}

// minFreeProblems: a floor is a size of zero (the default) or more.
func (c ServiceConfig) minFreeProblems() []string {
	if c.MinFree < 0 {
		return []string{"service.min_free: must not be negative (0 means the default: twice the largest run directory, at least 1 GiB)"}
	}
	return nil
}

// ByteSize is a size in a config: "2GiB", "512MiB", "5GB" or bytes (disk.ParseSize).
type ByteSize int64

// UnmarshalYAML reads a size; anything else is a type error, named with the others.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := disk.ParseSize(s)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not %s", n.Line, s, disk.SizeWord)}}
	}
	*b = ByteSize(v)
	return nil
}

// SlurmTime is executor.slurm.time_limit: what `sbatch --time` accepts ("30" minutes,
// "30:00" minutes:seconds, "1:00:00", "1-12" days-hours, "1-12:30", "1-00:00:00"), or a
// Go duration ("12h", "90m"), since people copy it from their batch scripts.
type SlurmTime time.Duration

// UnmarshalYAML reads either form; a value that is neither is a type error, named with
// the others.
func (t *SlurmTime) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	d, err := parseSlurmTime(s)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not %s", n.Line, s, slurmTimeWord)}}
	}
	*t = SlurmTime(d)
	return nil
}

const slurmTimeWord = "a time limit as sbatch --time takes it (90 for minutes, 30:00, 12:00:00, 1-00:00:00) or a duration like 12h"

// parseSlurmTime parses a Go duration or one of sbatch --time's forms.
func parseSlurmTime(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	bad := fmt.Errorf("%q is not a time limit", s)
	days, rest, dayForm := strings.Cut(s, "-")
	if !dayForm {
		days, rest = "0", s
	}
	var n []int
	for _, f := range append([]string{days}, strings.Split(rest, ":")...) {
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 || f == "" || f[0] == '+' {
			return 0, bad
		}
		n = append(n, v)
	}
	d := time.Duration(n[0]) * 24 * time.Hour
	var units []time.Duration // what each field after the days counts
	switch {
	case dayForm && len(n) <= 4:
		units = []time.Duration{time.Hour, time.Minute, time.Second}
	case !dayForm && len(n) == 2:
		units = []time.Duration{time.Minute}
	case !dayForm && len(n) == 3:
		units = []time.Duration{time.Minute, time.Second}
	case !dayForm && len(n) == 4:
		units = []time.Duration{time.Hour, time.Minute, time.Second}
	default:
		return 0, bad
	}
	for i, v := range n[1:] {
		d += time.Duration(v) * units[i]
	}
	return d, nil
}

// Executor backends.
const (
	BackendLocal = "local"
	BackendSlurm = "slurm"
	BackendRay   = "ray"
)

// SharedNote says what a cluster backend needs shared with the nodes that run the jobs
// (config check and doctor say it); "" for the local backend.
func (c Config) SharedNote() string {
	var where string
	switch c.Executor.Backend {
	case BackendSlurm:
		where = "Slurm's compute nodes"
	case BackendRay:
		where = "the nodes of the Ray cluster at " + c.Executor.Ray.Address
	default:
		return ""
	}
	return fmt.Sprintf("jobs run on %s: data_dir (%s) must be on storage they mount at the same path, as they write each trial's run directory there and tunebot reads it, and the trainer's programs must be installed on them",
		where, c.DataDir)
}

// RayBackend returns the trainer's Ray backend with the head's token, nil for the others.
func (x ExecutorConfig) RayBackend(token string) *trainer.Ray {
	if x.Backend != BackendRay {
		return nil
	}
	r := x.Ray
	addr, _ := ray.ParseAddress(r.Address) // checked with the config
	return &trainer.Ray{Client: &ray.Client{Address: addr, Token: token}, GPUs: x.GPUsPerTrial, CPUs: r.CPUsPerTrial,
		Memory: int64(r.Memory), Poll: r.PollInterval, HeadTimeout: r.HeadTimeout}
}

// SlurmBackend returns the trainer's Slurm backend, nil for the local one.
func (x ExecutorConfig) SlurmBackend() *trainer.Slurm {
	if x.Backend != BackendSlurm {
		return nil
	}
	s := x.Slurm
	return &trainer.Slurm{Partition: s.Partition, Account: s.Account, QOS: s.QOS, TimeLimit: time.Duration(s.TimeLimit),
		CPUs: s.CPUsPerTrial, Mem: s.Mem, GPUs: x.GPUsPerTrial, Extra: slices.Clone(s.SbatchArgs), Poll: s.PollInterval}
}

var (
	memRE      = regexp.MustCompile(`^[0-9]+[KMGT]?$`)
	slurmOptRE = regexp.MustCompile(`^[A-Za-z0-9_.,:-]+$`)
)

// problems names every bad executor setting; gpus is session.gpus.
func (x ExecutorConfig) problems(gpus []int) []string {
	probs := oneOf("executor.backend", x.Backend, BackendLocal, BackendSlurm, BackendRay)
	if x.Parallel < 0 {
		probs = append(probs, fmt.Sprintf("executor.parallel: %d must not be negative (0 means the default: local, len(session.gpus)/gpus_per_trial; slurm, 1; ray, the cluster's GPUs/gpus_per_trial)", x.Parallel))
	}
	if x.GPUsPerTrial < 0 {
		probs = append(probs, fmt.Sprintf("executor.gpus_per_trial: %d must not be negative", x.GPUsPerTrial))
	}
	if x.Backend == BackendLocal && x.GPUsPerTrial >= 0 {
		switch {
		case x.GPUsPerTrial == 0:
			probs = append(probs, "executor.gpus_per_trial: 0 with backend local: each local job holds at least one of session.gpus")
		case x.GPUsPerTrial > len(gpus):
			probs = append(probs, fmt.Sprintf("executor.gpus_per_trial: %d is more than session.gpus holds (%d: %v)", x.GPUsPerTrial, len(gpus), gpus))
		case x.Parallel*x.GPUsPerTrial > len(gpus):
			probs = append(probs, fmt.Sprintf("executor.parallel: %d trials of %d GPU(s) need %d GPUs, but session.gpus holds %d (%v); GPUs are never shared: lower parallel or add GPUs",
				x.Parallel, x.GPUsPerTrial, x.Parallel*x.GPUsPerTrial, len(gpus), gpus))
		}
	}
	s := x.Slurm
	if limit := time.Duration(s.TimeLimit); limit < 0 {
		probs = append(probs, "executor.slurm.time_limit: must not be negative")
	} else if limit > 0 && limit < time.Minute {
		probs = append(probs, fmt.Sprintf("executor.slurm.time_limit: %s is below Slurm's smallest time limit, one minute", limit))
	}
	if s.PollInterval != 0 && (s.PollInterval < 100*time.Millisecond || s.PollInterval > 10*time.Minute) {
		probs = append(probs, fmt.Sprintf("executor.slurm.poll_interval: %s is outside 100ms–10m", s.PollInterval))
	}
	if s.CPUsPerTrial < 0 {
		probs = append(probs, fmt.Sprintf("executor.slurm.cpus_per_trial: %d must not be negative", s.CPUsPerTrial))
	}
	if s.Mem != "" && !memRE.MatchString(s.Mem) {
		probs = append(probs, fmt.Sprintf("executor.slurm.mem: %q is not a size like 32G, 16000M or 64000 (megabytes)", s.Mem))
	}
	for _, f := range []struct{ name, v string }{{"partition", s.Partition}, {"account", s.Account}, {"qos", s.QOS}} {
		if f.v != "" && !slurmOptRE.MatchString(f.v) {
			probs = append(probs, fmt.Sprintf("executor.slurm.%s: %q may hold letters, digits and _.,:- only", f.name, f.v))
		}
	}
	for _, p := range trainer.CheckSbatchArgs(s.SbatchArgs) {
		probs = append(probs, "executor.slurm."+p)
	}
	return append(probs, x.Ray.problems(x.Backend == BackendRay)...)
}

// problems names every bad setting of executor.ray; the address must be set when the
// backend is ray.
func (r RayConfig) problems(used bool) []string {
	var probs []string
	if _, err := ray.ParseAddress(r.Address); err != nil && (used || r.Address != "") {
		probs = append(probs, "executor.ray.address: "+err.Error())
	}
	if r.CPUsPerTrial < 0 {
		probs = append(probs, fmt.Sprintf("executor.ray.cpus_per_trial: %v must not be negative", r.CPUsPerTrial))
	}
	if r.PollInterval != 0 && (r.PollInterval < 100*time.Millisecond || r.PollInterval > 10*time.Minute) {
		probs = append(probs, fmt.Sprintf("executor.ray.poll_interval: %s is outside 100ms–10m", r.PollInterval))
	}
	if r.HeadTimeout != 0 && (r.HeadTimeout < time.Second || r.HeadTimeout > time.Hour) {
		probs = append(probs, fmt.Sprintf("executor.ray.head_timeout: %s is outside 1s–1h", r.HeadTimeout))
	}
	return probs
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
	// AllowInsecureHTTP lets base_url be plain http:// to a host that is not this machine.
	AllowInsecureHTTP bool `yaml:"allow_insecure_http"`
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
	// ReadLimit bounds each person's read commands and agent calls (default 10 at once,
	// then one every 6 s).
	ReadLimit bot.RateLimit `yaml:"read_limit"`
}

// NtfyConfig pushes to an ntfy topic (token from NTFY_TOKEN, if the topic needs one).
type NtfyConfig struct {
	Server string `yaml:"server"` // e.g. https://ntfy.sh
	Topic  string `yaml:"topic"`
	// AllowInsecureHTTP lets server be plain http:// to a host that is not this machine.
	AllowInsecureHTTP bool `yaml:"allow_insecure_http"`
}

// WebhookConfig posts every phone-worthy event as JSON to TUNEBOT_WEBHOOK_URL; the URL
// lives in the environment because webhook URLs carry their secret in the path.
type WebhookConfig struct {
	Enabled bool `yaml:"enabled"`
	// AllowInsecureHTTP lets TUNEBOT_WEBHOOK_URL be plain http:// to a host that is not
	// this machine.
	AllowInsecureHTTP bool `yaml:"allow_insecure_http"`
}

// Default is the embedded configuration: the built-in sim trainer, so `make demo`
// needs no GPU and no file.
func Default() Config {
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
			Events:      trainer.DefaultEventLimits,
		},
		Session:  session.DefaultSettings(),
		Executor: ExecutorConfig{Backend: BackendLocal, GPUsPerTrial: 1},
		Advisor: AdvisorConfig{
			BaseURL: "https://api.deepseek.com", Model: "deepseek-v4-flash",
			Timeout: 3 * time.Minute, Temperature: 0.2, Hybrid: "off", StallAfter: 3,
		},
		Chat:      ChatConfig{Slack: defaultSlackConfig(), Discord: defaultDiscordConfig(), Expire: 24 * time.Hour},
		Retention: retention.Defaults(),
	}
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Load reads path over the embedded defaults ("" means the defaults alone). ${NAME}
// is replaced from the environment; unknown keys, bad values and unset variables are
// errors that name each field.
func Load(path string, getenv func(string) string) (Config, error) {
	cfg := Default()
	if path == "" {
		if short := secret.TooShort(getenv); len(short) > 0 {
			return cfg, &session.InvalidError{What: "environment", Problems: short}
		}
		return cfg, cfg.validate()
	}
	raw, err := readConfigFile(path)
	if err != nil {
		return cfg, err
	}
	// Unknown keys are looked for in the file as written, so their line numbers are right;
	// the values are then decoded from the parsed tree after ${NAME} expansion, which keeps
	// the tree's line numbers too, never expands a comment or a key, and never lets a
	// variable's value change the structure of the file. A tab that indents a line is
	// named, and the file is read as if it were spaces, so it hides no other problem.
	root, probs, err := parseYAML(raw)
	switch {
	case err != nil && len(probs) > 0:
		return cfg, &session.InvalidError{What: "config " + path, Problems: append(probs, err.Error())}
	case err != nil:
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	// Every problem is named at once, in the order of the file: tabs, unknown keys, unset
	// variables, values of the wrong type and values out of range.
	exp := newExpansion()
	invalid := func(more []string) error {
		probs = append(probs, more...)
		if len(probs) == 0 {
			return nil
		}
		return &session.InvalidError{What: "config " + path, Problems: hideSecrets(hideExpanded(inFileOrder(root, probs), root, exp), getenv)}
	}
	tree := checkTree(root, getenv, exp)
	probs = append(probs, tree.probs...)
	decoded, fatal := decodeConfig(root, &cfg, tree.badLines)
	probs = append(probs, decoded...)
	if fatal {
		return cfg, invalid(nil)
	}
	probs = append(probs, cfg.setTasks(root, filepath.Dir(path), knownSecrets(getenv))...)
	cfg.Warnings = configWarnings(root, cfg)
	probs = append(probs, webhookInClear(cfg, getenv)...)
	probs = append(probs, rayTokenInClear(cfg, getenv)...)
	// A credential too short to be masked is refused where it is configured, with the rest.
	probs = append(probs, secret.TooShort(getenv)...)
	cfg.resolvePaths(filepath.Dir(path))
	return cfg, invalid(cfg.problemsBesides(tree.badPaths))
}

// readConfigFile reads the config file (a regular file, bounded: readRegular), refusing
// one that is missing or holds binary data.
func readConfigFile(path string) ([]byte, error) {
	raw, err := readRegular(path, maxConfigFile)
	if err != nil {
		if isNotExist(err) {
			return nil, fmt.Errorf("config file %s does not exist", path)
		}
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	if bytes.IndexByte(raw, 0) >= 0 || !utf8.Valid(raw) {
		return nil, fmt.Errorf("config %s is not a YAML file: it holds binary data", path)
	}
	return raw, nil
}

// treeCheck is what checkTree found: its problems, and the keys and lines whose values had
// the wrong type.
type treeCheck struct {
	probs    []string
	badPaths []string
	badLines map[int]bool
}

// checkTree names the tree's problems before it is decoded: unknown keys, unset variables
// (root is expanded here), secrets reaching a value that leaves tunebot, values of the wrong
// type and keys set twice.
func checkTree(root *yaml.Node, getenv func(string) string, exp expansion) treeCheck {
	probs := unknownKeys(root)
	expandNode(root, getenv, exp)
	probs = append(probs, unsetProblems(root, exp)...)
	// After expansion and through aliases, as the decoder reads the file (issue 27).
	probs = append(probs, secretsInConfig(root, exp, knownSecrets(getenv))...)
	// The tree is checked after expansion, so a ${N} that became "12 hours" is named too;
	// a value whose variable is unset is left to the line above.
	typeProbs, badPaths, badLines := checkTypes(root, exp.unsetNodes())
	probs = append(probs, typeProbs...)
	// The decoder reads no mapping that sets a key twice, which would hide every problem
	// below it: each is named, and the last setting read.
	probs = append(probs, duplicateKeys(root, "")...)
	return treeCheck{probs: probs, badPaths: badPaths, badLines: badLines}
}

// decodeConfig decodes the tree into cfg and returns what the decoder found that checkTree
// did not (a value of the wrong type on a line it named is not named again); fatal is an
// error the decoder could not go on past.
func decodeConfig(root *yaml.Node, cfg *Config, badLines map[int]bool) (probs []string, fatal bool) {
	// Promote derives from trial_count unless given, so clear the default before decoding.
	cfg.Session.Promote = nil
	if len(root.Content) == 0 {
		return nil, false
	}
	err := root.Decode(cfg)
	if err == nil {
		return nil, false
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return problemsOf(err), true
	}
	for _, m := range te.Errors {
		var line int
		if _, err := fmt.Sscanf(m, "line %d:", &line); err != nil || !badLines[line] {
			probs = append(probs, m)
		}
	}
	return probs, false
}

// problemsOf lists an error's problems (each of an InvalidError's).
func problemsOf(err error) []string {
	var ie *session.InvalidError
	if errors.As(err, &ie) {
		return ie.Problems
	}
	return []string{err.Error()}
}

// configWarnings are what the config sets that has no effect: a chat section that is not
// enabled, a cluster's section (slurm, ray) under another backend.
func configWarnings(root *yaml.Node, cfg Config) []string {
	warnings := append(unenabledChats(root, cfg.Chat), cfg.spaceTaskWarnings()...)
	for _, backend := range []string{BackendSlurm, BackendRay} {
		other := cfg.Executor.Backend != backend && slices.Contains([]string{BackendLocal, BackendSlurm, BackendRay}, cfg.Executor.Backend)
		if sec := mappingAt(root, "executor", backend); sec != nil && len(sec.Content) > 0 && other {
			warnings = append(warnings, fmt.Sprintf("executor.%s is configured (line %d) but executor.backend is %s: set executor.backend: %s to use it, or remove the section", backend, sec.Line, cfg.Executor.Backend, backend))
		}
	}
	return warnings
}

// rayTokenInClear refuses a Ray head at a plain http address of another machine while
// RAY_AUTH_TOKEN is set, unless the config allows it: the token travels with every request.
func rayTokenInClear(cfg Config, getenv func(string) string) []string {
	if x := cfg.Executor; x.Backend == BackendRay && getenv("RAY_AUTH_TOKEN") != "" {
		if msg := cleartext("executor.ray", "address", x.Ray.Address, x.Ray.AllowInsecureHTTP); msg != "" {
			return []string{msg + " (RAY_AUTH_TOKEN is set)"}
		}
	}
	return nil
}

// webhookInClear refuses a webhook URL in plain http to another machine unless the config
// allows it: the URL carries its secret in the path, so only its host is named.
func webhookInClear(cfg Config, getenv func(string) string) []string {
	if c := cfg.Chat.Webhook; c.Enabled && !c.AllowInsecureHTTP {
		if host, bad := clearHost(getenv("TUNEBOT_WEBHOOK_URL")); bad {
			return []string{fmt.Sprintf("chat.webhook: TUNEBOT_WEBHOOK_URL is plain http to %s, which is not this machine: the secret in its path would cross the network in clear; use https, or set chat.webhook.allow_insecure_http: true if that network is trusted", host)}
		}
	}
	return nil
}

// resolvePaths makes the relative paths of the config relative to its own directory.
func (c *Config) resolvePaths(dir string) {
	for _, p := range []*string{&c.Trainer.Workdir, &c.Apply.Repo, &c.DataDir} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// problemsBesides is what validate finds, less what is about a key whose value had the
// wrong type: that value kept its default, so what validate says of it would only repeat
// the type error in other words.
func (c *Config) problemsBesides(badPaths []string) []string {
	var probs []string
	var ie *session.InvalidError
	if err := c.validate(); errors.As(err, &ie) {
		for _, p := range ie.Problems {
			if !aboutBadValue(p, badPaths) {
				probs = append(probs, p)
			}
		}
	} else if err != nil {
		probs = append(probs, err.Error())
	}
	return probs
}

// aboutBadValue reports whether problem p is about one of the keys whose value had the
// wrong type (or something inside it), or about the list that holds one.
func aboutBadValue(p string, bad []string) bool {
	key, _, _ := strings.Cut(p, ":")
	for _, b := range bad {
		if rest, ok := strings.CutPrefix(p, b); ok && (rest == "" || strings.ContainsAny(rest[:1], ":.[ ")) {
			return true
		}
		if strings.HasPrefix(b, key+"[") {
			return true
		}
	}
	return false
}

// tabWidths are the widths a tab that indents a line is tried at, as editors set them.
var tabWidths = []int{2, 4, 8}

// parseYAML parses a config file. A tab that indents a line (YAML indents with spaces
// only: the commonest reason a hand-edited file does not parse) is named as a problem, and
// the file is read with its tabs as spaces, at the width that reads it with the fewest
// unknown keys, so the tab hides no other problem and every line number is the file's.
func parseYAML(raw []byte) (*yaml.Node, []string, error) {
	lines := strings.Split(string(raw), "\n")
	var tabs []string
	for i, l := range lines {
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if strings.Contains(indent, "\t") && strings.TrimSpace(l) != "" {
			tabs = append(tabs, fmt.Sprintf("line %d: a tab indents this line; YAML indents with spaces only", i+1))
		}
	}
	if len(tabs) == 0 {
		var root yaml.Node
		if err := yaml.Unmarshal(raw, &root); err != nil {
			return nil, nil, parseError(err)
		}
		return &root, nil, nil
	}
	var best *yaml.Node
	var firstErr error
	fewest := -1
	for _, width := range tabWidths {
		var root yaml.Node
		if err := yaml.Unmarshal([]byte(expandIndentTabs(lines, width)), &root); err != nil {
			firstErr = cmp.Or(firstErr, parseError(err))
			continue
		}
		if n := len(unknownKeys(&root)); fewest < 0 || n < fewest {
			best, fewest = &root, n
		}
	}
	if best == nil {
		return nil, tabs, firstErr
	}
	return best, tabs, nil
}

// parseError says why a file does not parse as YAML, in the words the other problems use.
func parseError(err error) error {
	msg := strings.TrimPrefix(yamlMessage(err), "yaml: ")
	if strings.Contains(msg, "control characters are not allowed") {
		return errors.New("not a YAML file: it holds control characters")
	}
	return errors.New(msg)
}

// expandIndentTabs returns lines joined with each tab of their indentation replaced by
// spaces up to the next multiple of width.
func expandIndentTabs(lines []string, width int) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		rest := strings.TrimLeft(l, " \t")
		col := 0
		for _, c := range l[:len(l)-len(rest)] {
			if c == '\t' {
				col = (col/width + 1) * width
			} else {
				col++
			}
		}
		b.WriteString(strings.Repeat(" ", col) + rest)
	}
	return b.String()
}

var problemLine = regexp.MustCompile(`^line (\d+): `)

// inFileOrder sorts problems by the line they are about, so a person reads them as the
// file goes. A problem named by key path (what validate says) gets its key's line when
// the file sets that key, and goes where its nearest written section is otherwise; one
// about nothing written (a default) comes last.
func inFileOrder(root *yaml.Node, probs []string) []string {
	type located struct {
		line int
		text string
	}
	out := make([]located, len(probs))
	for i, p := range probs {
		out[i] = located{math.MaxInt, p}
		if m := problemLine.FindStringSubmatch(p); m != nil {
			out[i].line, _ = strconv.Atoi(m[1])
			continue
		}
		key, _, _ := strings.Cut(p, ": ")
		key, _, _ = strings.Cut(key, " ")
		if line, exact := keyLine(root, key); exact {
			out[i] = located{line, fmt.Sprintf("line %d: %s", line, p)}
		} else if line > 0 {
			out[i].line = line
		}
	}
	slices.SortStableFunc(out, func(a, b located) int { return cmp.Compare(a.line, b.line) })
	sorted := make([]string, len(out))
	for i, l := range out {
		sorted[i] = l.text
	}
	return sorted
}

var (
	pathStep  = regexp.MustCompile(`^([^.\[\]]+)((?:\[\d+\])*)$`) // a key and its [i] indices
	pathIndex = regexp.MustCompile(`\d+`)
)

// keyLine returns the line of the key at a dotted path ("session.gpus[1]") in the file,
// and whether the file sets that key; when it does not, the line of the nearest section
// on the path that it does set (0: none).
func keyLine(root *yaml.Node, path string) (int, bool) {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, step := range strings.Split(path, ".") {
		m := pathStep.FindStringSubmatch(step)
		if m == nil {
			return line, false
		}
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return line, false
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == m[1] {
				line, next = n.Content[i].Line, n.Content[i+1]
			}
		}
		if next == nil {
			return line, false
		}
		n = next
		for _, idx := range pathIndex.FindAllString(m[2], -1) {
			j, _ := strconv.Atoi(idx)
			if n.Kind != yaml.SequenceNode || j >= len(n.Content) {
				return line, false
			}
			n = n.Content[j]
			line = n.Line
		}
	}
	return line, true
}

// removedKeys are settings tunebot had and took out, with why and what to do instead: a
// config that still sets one is refused with that, not as a misspelling.
var removedKeys = map[string]string{
	"service.shared_data_dir": "a data_dir others may write let them plant links where tunebot writes (issue 44), so tunebot now refuses one; " +
		"delete the line, make data_dir tunebot's user's alone (chmod 700), and share results through the monitoring page, `tunebot preset export` and `tunebot backup`",
}

// unknownKeys reports every key of the parsed file that Config does not have, each with
// its line, its place in the file and, for a misspelling, the key that was meant.
func unknownKeys(root *yaml.Node) []string {
	w := treeWalk{keys: true}
	w.walk(root, reflect.TypeFor[Config](), "")
	return w.probs
}

// checkTypes reports every value of the wrong type, with its line and dotted key path, and
// returns the paths and the lines of those values too, and of the unset ones.
func checkTypes(root *yaml.Node, unset map[*yaml.Node]bool) (probs, badPaths []string, badLines map[int]bool) {
	w := treeWalk{types: true, badLines: map[int]bool{}, unset: unset}
	w.walk(root, reflect.TypeFor[Config](), "")
	return w.probs, w.badPaths, w.badLines
}

// treeWalk checks a parsed file against the yaml fields of Config, recursively.
type treeWalk struct {
	keys     bool // name unknown keys
	types    bool // name values of the wrong type
	probs    []string
	badPaths []string
	badLines map[int]bool
	unset    map[*yaml.Node]bool // values that name an unset variable: not checked
	merging  map[*yaml.Node]bool // the mappings merge keys lend on the way here
	visits   int                 // values walked, up to aliasBudget
}

var yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

func (w *treeWalk) walk(n *yaml.Node, t reflect.Type, path string) {
	if w.visits++; w.visits > aliasBudget {
		return // aliases of aliases: the decoder refuses the file ("excessive aliasing")
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			w.walk(c, t, path)
		}
		return
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value (or file: comments only) leaves the default
	}
	if w.unset[n] {
		w.badPaths = append(w.badPaths, path)
		w.badLines[n.Line] = true
		return
	}
	if reflect.PointerTo(t).Implements(yamlUnmarshaler) {
		w.checkValue(n, t, path) // it reads its own keys
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.walkSection(n, t, path)
	case reflect.Map:
		w.walkMapping(n, t, path)
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			w.wrongType(n, path, "a list")
			return
		}
		for j, c := range n.Content {
			w.walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, j))
		}
	default:
		w.checkValue(n, t, path)
	}
}

// walkSection walks a section (a struct of settings): each key must be one of its settings
// (an unknown one is named, with the closest setting as a hint), and a merge key
// (<<: *defaults) lends its mapping's keys to this one.
func (w *treeWalk) walkSection(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.wrongType(n, path, "a section of key: value lines")
		return
	}
	fields := yamlFields(t)
	names := slices.Sorted(maps.Keys(fields))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			w.walkMerged(v, t, path)
			continue
		}
		at := joinKey(path, k.Value)
		ft, ok := fields[k.Value]
		if !ok {
			if why, gone := removedKeys[at]; gone && w.keys {
				w.probs = append(w.probs, fmt.Sprintf("line %d: %s was removed: %s", k.Line, at, why))
				continue
			}
			if w.keys {
				hint := ""
				if best, ok := session.Closest(k.Value, names); ok {
					hint = " (did you mean " + joinKey(path, best) + "?)"
				}
				w.probs = append(w.probs, fmt.Sprintf("line %d: %s is not a setting%s", k.Line, at, hint))
			}
			continue
		}
		w.walk(v, ft, at)
	}
}

// walkMapping walks a mapping of free keys (a map): every value has the map's value type.
func (w *treeWalk) walkMapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.wrongType(n, path, "a mapping of key: value")
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; isMergeKey(k) {
			w.walkMerged(n.Content[i+1], t, path)
			continue
		}
		w.walk(n.Content[i+1], t.Elem(), joinKey(path, n.Content[i].Value))
	}
}

// walkMerged walks the mappings a merge key's value v lends, as of type t at path. A
// mapping already being lent on the way here (<<: *itself) is a loop: it is not walked
// again, and the decoder names it.
func (w *treeWalk) walkMerged(v *yaml.Node, t reflect.Type, path string) {
	if w.merging == nil {
		w.merging = map[*yaml.Node]bool{}
	}
	for _, m := range mergedMaps(v, map[*yaml.Node]bool{}) {
		if w.merging[m] {
			continue
		}
		w.merging[m] = true
		w.walk(m, t, path)
		delete(w.merging, m)
	}
}

// checkValue decodes n into a fresh value of type t, as the decoder will, and names a
// value of the wrong type by what the key takes.
func (w *treeWalk) checkValue(n *yaml.Node, t reflect.Type, path string) {
	if !w.types {
		return
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		w.wrongType(n, path, typeWord(t))
		return
	}
	// The decoder cuts 1.5 to 1 for a whole-number key; that is a wrong type too.
	var f float64
	if whole(t) && n.ShortTag() == "!!float" && (n.Decode(&f) != nil || f != math.Trunc(f)) {
		w.wrongType(n, path, typeWord(t))
	}
}

func whole(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return t != reflect.TypeFor[time.Duration]()
	}
	return false
}

// wrongType records that the value n at path is not the want the key takes.
func (w *treeWalk) wrongType(n *yaml.Node, path, want string) {
	if !w.types {
		return
	}
	var got string
	switch n.Kind {
	case yaml.MappingNode:
		got = "a section of key: value lines"
	case yaml.SequenceNode:
		got = "a list"
	default:
		got = strconv.Quote(n.Value)
	}
	what := path
	if what == "" {
		what = "the file"
	}
	w.probs = append(w.probs, fmt.Sprintf("line %d: %s: %s is not %s", n.Line, what, got, want))
	w.badPaths = append(w.badPaths, path)
	w.badLines[n.Line] = true
}

// typeWord says in words what a value of type t looks like in YAML.
func typeWord(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem() // an optional value (session.promotion_review) reads as its type
	}
	switch t {
	case reflect.TypeFor[time.Duration]():
		return "a duration (like 90s, 45m or 12h)"
	case reflect.TypeFor[SlurmTime]():
		return slurmTimeWord
	case reflect.TypeFor[ByteSize]():
		return disk.SizeWord
	}
	if t == reflect.TypeFor[retention.Age]() {
		return "an age (like 90d, 12w or 36h)"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number of at least 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a single value"
	}
	return "a " + t.String()
}

// isMergeKey reports whether k is YAML's merge key (<<: *defaults), which lends its
// mapping's keys to the mapping it is in.
func isMergeKey(k *yaml.Node) bool {
	return k.Tag == "!!merge" || k.Value == "<<" && k.Style == 0
}

// mergedMaps returns the mappings a merge key's value names: one (an alias or a literal
// mapping) or a sequence of them; seen holds the sequences on the way, so one that holds
// itself ends.
func mergedMaps(v *yaml.Node, seen map[*yaml.Node]bool) []*yaml.Node {
	for v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if v.Kind != yaml.SequenceNode {
		return []*yaml.Node{v}
	}
	if seen[v] {
		return nil
	}
	seen[v] = true
	var out []*yaml.Node
	for _, c := range v.Content {
		out = append(out, mergedMaps(c, seen)...)
	}
	return out
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

// expandNode replaces ${NAME} in the scalar values below n (never in a key) and records
// in x what it did: each value's text as written, the secret variables it names and the
// variables that are not set.
func expandNode(n *yaml.Node, getenv func(string) string, x expansion) {
	if n.Kind == yaml.ScalarNode && envRef.MatchString(n.Value) {
		x.raw[n] = n.Value
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			name := envRef.FindStringSubmatch(m)[1]
			if secret.IsEnv(name) && !slices.Contains(x.secrets[n], name) {
				x.secrets[n] = append(x.secrets[n], name)
			}
			v := getenv(name)
			if v == "" && !slices.Contains(x.unset[n], name) {
				x.unset[n] = append(x.unset[n], name)
			}
			return v
		})
		if n.Style == 0 {
			n.Tag = "" // a plain ${N} that became 12 is an int, as if 12 had been written
		}
	}
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 {
			continue // a key
		}
		expandNode(c, getenv, x)
	}
}

func yamlMessage(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return err.Error()
}

// RewardSpace is the configured reward space, or the default one.
func (c Config) RewardSpace() *session.Space {
	if c.Space != nil {
		return c.Space
	}
	return session.DefaultSpace()
}

// validate names every bad field at once (Load calls it; the rules are configRules).
func (c *Config) validate() error {
	c.Session.Normalize()
	var probs []string
	for _, r := range configRules {
		probs = append(probs, r.check(c)...)
	}
	if len(probs) > 0 {
		return &session.InvalidError{What: "config invalid", Problems: probs}
	}
	return nil
}

// configRule is the rule of one key (or section) of the config: check returns its problems,
// each naming its key.
type configRule struct {
	key   string
	check func(c *Config) []string
}

// configRules are the rules of every key, in the order their problems are listed. Adding a
// key is one row here and one row in TestConfigRules.
var configRules = []configRule{
	{"data_dir", func(c *Config) []string { return nonEmpty("data_dir", c.DataDir, "must be set") }},
	{"log.level", func(c *Config) []string { return oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error") }},
	{"log.format", func(c *Config) []string { return oneOf("log.format", c.Log.Format, "text", "json") }},
	{"trainer.train", func(c *Config) []string { return argvSet("trainer.train", c.Trainer.Train) }},
	{"trainer.evaluate", func(c *Config) []string { return argvSet("trainer.evaluate", c.Trainer.Evaluate) }},
	{"trainer", func(c *Config) []string { return c.Trainer.problems() }},
	{"trainer.sim_surface_seed", func(c *Config) []string { return c.Trainer.surfaceSeedProblems() }},
	{"trainer.sim_surface_family", func(c *Config) []string { return c.Trainer.surfaceFamilyProblems() }},
	{"trainer.job_timeout", func(c *Config) []string { return notNegative("trainer.job_timeout", c.Trainer.JobTimeout) }},
	{"trainer.eval_timeout", func(c *Config) []string { return notNegative("trainer.eval_timeout", c.Trainer.EvalTimeout) }},
	{"trainer.grace", func(c *Config) []string { return notNegative("trainer.grace", c.Trainer.Grace) }},
	{"advisor.timeout", func(c *Config) []string { return notNegative("advisor.timeout", c.Advisor.Timeout) }},
	{"session", func(c *Config) []string { return c.sessionProblems() }},
	{"executor", func(c *Config) []string { return c.Executor.problems(c.Session.GPUs) }},
	{"reward_space", func(c *Config) []string { return c.rewardSpaceProblems() }},
	{"reward_spaces", func(c *Config) []string { return c.spaceProblems() }},
	{"sim reward space", func(c *Config) []string { return c.simSpaceProblems() }},
	{"reward space task", func(c *Config) []string { return c.spaceTaskProblems() }},
	{"advisor.base_url", func(c *Config) []string { return c.Advisor.baseURLProblems() }},
	{"advisor.model", func(c *Config) []string { return nonEmpty("advisor.model", c.Advisor.Model, "must be set") }},
	{"advisor.temperature", func(c *Config) []string { return c.Advisor.temperatureProblems() }},
	{"advisor.hybrid", func(c *Config) []string { return oneOf("advisor.hybrid", c.Advisor.Hybrid, hybridModes...) }},
	{"chat.slack", func(c *Config) []string { return c.Chat.Slack.problems() }},
	{"chat.discord", func(c *Config) []string { return c.Chat.Discord.problems() }},
	{"chat.ntfy", func(c *Config) []string { return c.Chat.Ntfy.problems() }},
	{"chat.expire", func(c *Config) []string { return notNegative("chat.expire", c.Chat.Expire) }},
	{"apply", func(c *Config) []string { return c.applySectionProblems() }},
	{"schedule", func(c *Config) []string { return errProblems("schedule", c.Schedule.Check()) }},
	{"service", func(c *Config) []string { return errText(c.Service.Check()) }}, // it names its key
	{"service.min_free", func(c *Config) []string { return c.Service.minFreeProblems() }},
	{"retention", func(c *Config) []string { return c.Retention.Problems() }},
	{"retention.at", func(c *Config) []string { return c.retentionAtProblems() }},
	{"advisor.stall_after", func(c *Config) []string { return c.Advisor.stallProblems() }},
	{"chat.read_limit", func(c *Config) []string { return prefixedErr("chat.read_limit", c.Chat.ReadLimit.Check()) }},
}

// hybridModes are the ways the advisor and the sampler share proposals.
var hybridModes = []string{"off", "alternate", "stall"}

// nonEmpty: a key that must be set.
func nonEmpty(key, v, msg string) []string {
	if v == "" {
		return []string{key + ": " + msg}
	}
	return nil
}

// oneOf: the value is one of the allowed words.
func oneOf(key, v string, allowed ...string) []string {
	if slices.Contains(allowed, v) {
		return nil
	}
	words := strings.Join(allowed[:len(allowed)-1], ", ") + " or " + allowed[len(allowed)-1]
	return []string{fmt.Sprintf("%s: %q is not %s%s", key, v, words, session.DidYouMean(v, allowed))}
}

// argvSet: an argv template that must not be empty.
func argvSet(key string, argv []string) []string {
	if len(argv) == 0 {
		return []string{key + ": must be a non-empty argv list"}
	}
	return nil
}

// notNegative: a duration that may be 0 but not below.
func notNegative(key string, d time.Duration) []string {
	if d < 0 {
		return []string{key + ": must not be negative"}
	}
	return nil
}

// errProblems lists an error's problems under key (nil for nil).
func errProblems(key string, err error) []string {
	if err == nil {
		return nil
	}
	return problems(key, err)
}

// errText is an error that names its own key, as it is (nil for nil).
func errText(err error) []string {
	if err == nil {
		return nil
	}
	return []string{err.Error()}
}

// prefixedErr is an error under key, as one problem (nil for nil).
func prefixedErr(key string, err error) []string {
	if err == nil {
		return nil
	}
	return []string{key + ": " + err.Error()}
}

// IsSim says whether t runs the built-in sim trainer (sim-train).
func (t TrainerConfig) IsSim() bool {
	return len(t.Train) >= 2 && t.Train[0] == "{tunebot}" && t.Train[1] == "sim-train"
}

// surfaceSeedProblems: a surface seed is not negative, and only the sim trainer has surfaces.
func (t TrainerConfig) surfaceSeedProblems() []string {
	switch {
	case t.SimSurfaceSeed < 0:
		return []string{fmt.Sprintf("trainer.sim_surface_seed: %d must not be negative", t.SimSurfaceSeed)}
	case t.SimSurfaceSeed != 0 && !t.IsSim():
		return []string{"trainer.sim_surface_seed: only the built-in sim trainer (sim-train) has response surfaces"}
	}
	return nil
}

// surfaceFamilyProblems: a family is one the sim knows, and needs a seed (seed 0 is the
// demo's surface, in no family).
func (t TrainerConfig) surfaceFamilyProblems() []string {
	if _, err := sim.ParseFamily(t.SimSurfaceFamily); err != nil {
		return []string{"trainer.sim_surface_family: " + err.Error()}
	}
	if t.SimSurfaceFamily != "" && t.SimSurfaceSeed == 0 {
		return []string{"trainer.sim_surface_family: needs trainer.sim_surface_seed (seed 0 is the demo's surface, in no family)"}
	}
	return nil
}

// rewardSpaceProblems checks the one configured reward space, if any (the built-in one is
// checked by its tests; reward_spaces by spaceProblems).
func (c *Config) rewardSpaceProblems() []string {
	if c.Space == nil {
		return nil
	}
	return errProblems("reward_space", c.Space.Check())
}

// baseURLProblems: the advisor's URL is http(s), and https unless the config allows clear
// text to another machine.
func (a AdvisorConfig) baseURLProblems() []string {
	if a.BaseURL == "" || !(strings.HasPrefix(a.BaseURL, "https://") || strings.HasPrefix(a.BaseURL, "http://")) {
		return []string{fmt.Sprintf("advisor.base_url: %q must be an http(s) URL", a.BaseURL)}
	}
	if p := cleartext("advisor", "base_url", a.BaseURL, a.AllowInsecureHTTP); p != "" {
		return []string{p}
	}
	return nil
}

// temperatureProblems: the temperature is in (0, 2] (DeepSeek treats 0 as unset).
func (a AdvisorConfig) temperatureProblems() []string {
	if !(a.Temperature > 0 && a.Temperature <= 2) {
		return []string{fmt.Sprintf("advisor.temperature: %g must be in (0, 2] (DeepSeek treats 0 as unset)", a.Temperature)}
	}
	return nil
}

// stallProblems: the hybrid advisor's stall count is at least 1.
func (a AdvisorConfig) stallProblems() []string {
	if a.StallAfter < 1 {
		return []string{"advisor.stall_after: must be at least 1"}
	}
	return nil
}

// problems: ntfy's server and topic go together, and the server is https unless allowed.
func (n NtfyConfig) problems() []string {
	var probs []string
	if (n.Server == "") != (n.Topic == "") {
		probs = append(probs, "chat.ntfy: server and topic go together")
	}
	if p := cleartext("chat.ntfy", "server", n.Server, n.AllowInsecureHTTP); p != "" {
		probs = append(probs, p)
	}
	return probs
}

// applySectionProblems checks an apply section that sets anything whole (applyProblems), so
// one that forgot repo is named here and not taken for "apply is not configured".
func (c *Config) applySectionProblems() []string {
	if reflect.ValueOf(c.Apply).IsZero() {
		return nil
	}
	return c.applyProblems()
}

// retentionAtProblems: an enabled retention's time of day parses as a schedule.
func (c *Config) retentionAtProblems() []string {
	if !c.Retention.Enabled || strings.TrimSpace(c.Retention.At) == "" {
		return nil
	}
	if _, err := schedule.Parse(c.Retention.At); err != nil {
		return []string{"retention.at: " + err.Error()}
	}
	return nil
}

// problems checks the argv templates as the trainer will (trainer.Templates.Check), and
// that a training job is told what is tuned: without {reward_config} every trial would
// train the same reward, and without {iterations} every rung the same length, so tuning
// would change nothing (docs/design.md §4).
func (c TrainerConfig) problems() []string {
	var probs []string
	for _, p := range (trainer.Templates{Python: c.Python, Train: c.Train, ResumeArgs: c.ResumeArgs, Evaluate: c.Evaluate}).Check() {
		if !strings.HasSuffix(p, ": must not be empty") { // said above, in the config's words
			probs = append(probs, "trainer."+p)
		}
	}
	for _, p := range c.Events.Check() {
		probs = append(probs, "trainer."+p)
	}
	if len(c.Train) == 0 {
		return probs
	}
	if !trainer.Uses(c.Train, "reward_config") {
		probs = append(probs, "trainer.train: no argument holds {reward_config}, so the trainer would never read the weights being tuned and tuning would change nothing; pass it, e.g. \"--reward-config\", \"{reward_config}\"")
	}
	if !trainer.Uses(c.Train, "iterations") && !trainer.Uses(c.Train, "target_iterations") {
		probs = append(probs, "trainer.train: no argument holds {iterations} (or {target_iterations}), so every rung would train as long as the first and promotion would change nothing; pass it, e.g. \"--iterations\", \"{iterations}\"")
	}
	return probs
}

// cleartext names a URL that would carry a token in clear: plain http:// to a host that
// is not this machine (loopback stays allowed: a local proxy, the tests' fakes), unless
// the section's allow_insecure_http says so (issue 13). "" means the URL is fine.
func cleartext(section, key, raw string, allowed bool) string {
	host, bad := clearHost(raw)
	if !bad || allowed {
		return ""
	}
	return fmt.Sprintf("%s.%s: %q is plain http to %s, which is not this machine: its token would cross the network in clear; use https, or set %s.allow_insecure_http: true if that network is trusted",
		section, key, raw, host, section)
}

// clearHost returns the host of raw and whether raw is plain http to a host that is not
// this machine.
func clearHost(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || !strings.EqualFold(u.Scheme, "http") || loopbackHost(u.Hostname()) {
		return "", false
	}
	return u.Hostname(), true
}

// loopbackHost reports whether host is this machine: localhost, 127.0.0.0/8 or ::1.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// unenabledChats names each chat section (slack, discord) that the file fills in but does
// not enable: its adapter would silently not start.
func unenabledChats(root *yaml.Node, c ChatConfig) []string {
	var out []string
	for _, p := range []struct {
		name    string
		enabled bool
	}{{"slack", c.Slack.Enabled}, {"discord", c.Discord.Enabled}} {
		if p.enabled {
			continue
		}
		sec := mappingAt(root, "chat", p.name)
		if sec == nil {
			continue
		}
		for i := 0; i+1 < len(sec.Content); i += 2 {
			if sec.Content[i].Value != "enabled" { // enabled: false alone is a clear choice
				out = append(out, fmt.Sprintf("chat.%s is configured but not enabled (line %d): set chat.%s.enabled: true to use it, or remove the section", p.name, sec.Line, p.name))
				break
			}
		}
	}
	return out
}

// mappingAt follows keys from the document root and returns the mapping found there, or
// nil.
func mappingAt(n *yaml.Node, keys ...string) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, k := range keys {
		var next *yaml.Node
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	return n
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

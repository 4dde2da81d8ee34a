package config

import (
	"strings"
	"testing"
	"time"

	"tunebot/session"
)

// TestConfigRules holds one row per rule of configRules: a bad value of its key, and the
// text every problem it raises must hold (each naming its key). A new key is one row in
// configRules and one row here; the last check fails when a rule has no row.
func TestConfigRules(t *testing.T) {
	tests := []struct {
		key  string
		bad  func(c *Config)
		want string
	}{
		{"data_dir", func(c *Config) { c.DataDir = "" }, "data_dir: must be set"},
		{"log.level", func(c *Config) { c.Log.Level = "trace" }, `log.level: "trace" is not debug, info, warn or error`},
		{"log.format", func(c *Config) { c.Log.Format = "xml" }, `log.format: "xml" is not text or json`},
		{"trainer.train", func(c *Config) { c.Trainer.Train = nil }, "trainer.train: must be a non-empty argv list"},
		{"trainer.evaluate", func(c *Config) { c.Trainer.Evaluate = nil }, "trainer.evaluate: must be a non-empty argv list"},
		{"trainer", func(c *Config) { c.Trainer.Train = []string{"sim-train", "--iterations", "{iterations}"} }, "trainer.train"},
		{"trainer.sim_surface_seed", func(c *Config) { c.Trainer.SimSurfaceSeed = -1 }, "trainer.sim_surface_seed: -1 must not be negative"},
		{"trainer.sim_surface_family", func(c *Config) { c.Trainer.SimSurfaceFamily = "domain" }, "trainer.sim_surface_family: needs trainer.sim_surface_seed"},
		{"trainer.job_timeout", func(c *Config) { c.Trainer.JobTimeout = -time.Second }, "trainer.job_timeout: must not be negative"},
		{"trainer.eval_timeout", func(c *Config) { c.Trainer.EvalTimeout = -time.Second }, "trainer.eval_timeout: must not be negative"},
		{"trainer.grace", func(c *Config) { c.Trainer.Grace = -time.Second }, "trainer.grace: must not be negative"},
		{"advisor.timeout", func(c *Config) { c.Advisor.Timeout = -time.Second }, "advisor.timeout: must not be negative"},
		{"session", func(c *Config) { c.Session.TrialCount = 99 }, "session.trial_count: 99 is outside"},
		{"executor", func(c *Config) { c.Executor.Backend = "k8s" }, "executor"},
		{"reward_space", func(c *Config) { sp := session.DefaultSpace(); sp.MaxChanges = 0; c.Space = sp }, "reward_space."},
		{"reward_spaces", func(c *Config) { c.Spaces = map[string]*TaskSpace{"Go2-Rough": nil} }, "reward_spaces.Go2-Rough: needs a space"},
		{"sim reward space", func(c *Config) {
			sp := session.DefaultSpace()
			sp.Terms[len(sp.Terms)-1].Name = "arm_swing"
			c.Space, c.Trainer.Train = sp, []string{"{tunebot}", "sim-train", "--reward-config", "{reward_config}", "--iterations", "{iterations}"}
		}, "trainer.train: the built-in sim trainer is not told the reward space of task Unitree-Go2-Flat"},
		{"reward space task", func(c *Config) {
			c.Session.Task, c.Session.Tasks = "Mjlab-Velocity-Flat-Unitree-G1", []string{"Mjlab-Velocity-Flat-Unitree-G1"}
		},
			"reward_space: not set, so task Mjlab-Velocity-Flat-Unitree-G1 (session.task) is tuned in the built-in space, whose names are task Unitree-Go2-Flat's"},
		{"advisor.base_url", func(c *Config) { c.Advisor.BaseURL = "ftp://x" }, `advisor.base_url: "ftp://x" must be an http(s) URL`},
		{"advisor.model", func(c *Config) { c.Advisor.Model = "" }, "advisor.model: must be set"},
		{"advisor.temperature", func(c *Config) { c.Advisor.Temperature = 0 }, "advisor.temperature: 0 must be in (0, 2]"},
		{"advisor.hybrid", func(c *Config) { c.Advisor.Hybrid = "both" }, `advisor.hybrid: "both" is not off, alternate or stall`},
		{"chat.slack", func(c *Config) { c.Chat.Slack.Mode = "poll" }, `chat.slack.mode: "poll" is not socket or http`},
		{"chat.discord", func(c *Config) { c.Chat.Discord.Enabled = true }, "chat.discord"},
		{"chat.ntfy", func(c *Config) { c.Chat.Ntfy.Topic = "t" }, "chat.ntfy: server and topic go together"},
		{"chat.expire", func(c *Config) { c.Chat.Expire = -time.Second }, "chat.expire: must not be negative"},
		{"apply", func(c *Config) { c.Apply.Base = "main" }, "apply."},
		{"schedule", func(c *Config) { c.Schedule.IfBusy = "queue" }, `schedule.if_busy "queue" must be skip or wait`},
		{"service", func(c *Config) { c.Service.Addr = "0.0.0.0:9464" }, "service.addr"},
		{"service.min_free", func(c *Config) { c.Service.MinFree = -1 }, "service.min_free: must not be negative"},
		{"retention", func(c *Config) { c.Retention.KeepLast = -1 }, "retention."},
		{"retention.at", func(c *Config) { c.Retention.Enabled = true; c.Retention.At = "every day" }, "retention.at: "},
		{"advisor.stall_after", func(c *Config) { c.Advisor.StallAfter = 0 }, "advisor.stall_after: must be at least 1"},
		{"chat.read_limit", func(c *Config) { c.Chat.ReadLimit.Burst = -1 }, "chat.read_limit: "},
	}
	var keys []string
	for _, tt := range tests {
		keys = append(keys, tt.key)
		t.Run(tt.key, func(t *testing.T) {
			c := Default()
			if err := c.validate(); err != nil {
				t.Fatalf("defaults: %v", err)
			}
			c = Default()
			tt.bad(&c)
			c.Session.Normalize()
			var got []string
			for _, r := range configRules {
				if r.key == tt.key {
					got = r.check(&c)
				}
			}
			if len(got) == 0 {
				t.Fatalf("no problem raised by the %s rule", tt.key)
			}
			for _, p := range got {
				if !strings.Contains(p, tt.want) {
					t.Errorf("problem %q, want it to hold %q", p, tt.want)
				}
			}
			err := c.validate()
			if err == nil || !strings.Contains(err.Error(), got[0]) {
				t.Errorf("validate = %v, want it to list %q", err, got[0])
			}
		})
	}
	var rules []string
	for _, r := range configRules {
		rules = append(rules, r.key)
	}
	if strings.Join(rules, " ") != strings.Join(keys, " ") {
		t.Errorf("rules %s\nrows  %s\n(one row per rule, in order)", strings.Join(rules, " "), strings.Join(keys, " "))
	}
}

// A mistyped value of a key that takes one of a few words gets the word meant, as a
// mistyped key does (issue 43, item 7.9); a value far from every word gets none.
func TestConfigValueTypos(t *testing.T) {
	tests := []struct {
		name string
		bad  func(c *Config)
		want string
	}{
		{"mode", func(c *Config) { c.Session.Mode = "automatc" }, `session.mode: "automatc" is not automatic or approval (did you mean automatic?)`},
		{"ask", func(c *Config) { c.Session.Preferences.Ask = "of" }, `session.preferences.ask: "of" is not auto or off (did you mean off?)`},
		{"backend", func(c *Config) { c.Executor.Backend = "slrum" }, `executor.backend: "slrum" is not local, slurm or ray (did you mean slurm?)`},
		{"log.level", func(c *Config) { c.Log.Level = "debg" }, `log.level: "debg" is not debug, info, warn or error (did you mean debug?)`},
		{"log.format", func(c *Config) { c.Log.Format = "jsn" }, `log.format: "jsn" is not text or json (did you mean json?)`},
		{"hybrid", func(c *Config) { c.Advisor.Hybrid = "stal" }, `advisor.hybrid: "stal" is not off, alternate or stall (did you mean stall?)`},
		{"slack mode", func(c *Config) { c.Chat.Slack.Mode = "sockt" }, `chat.slack.mode: "sockt" is not socket or http (did you mean socket?)`},
		{"if_busy", func(c *Config) { c.Schedule.IfBusy = "wiat" }, `schedule.if_busy "wiat" must be skip or wait (did you mean wait?)`},
		{"curves", func(c *Config) { c.Retention.Curves = "drp" }, `retention.curves: "drp" is not downsample, drop or keep (did you mean drop?)`},
		{"far from every word", func(c *Config) { c.Executor.Backend = "kubernetes" }, `executor.backend: "kubernetes" is not local, slurm or ray;`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.bad(&c)
			err := c.validate()
			if err == nil || !strings.Contains(err.Error()+";", tt.want) {
				t.Errorf("got %v, want a problem %q", err, tt.want)
			}
		})
	}
}

// Command sessions measures tunebot at a year's scale (issue 20). On a store of 10,000
// sessions, written through the store API with the records a demo session leaves (20 trials,
// 11 proposals, the audit), it times the monitoring page's session list and /tune status
// against a full scan, which is what the page did before the session index, and the first
// /metrics scrape of a new source (the store's running totals); on a store of 90
// demo-like sessions with their curves, it times `tunebot prune` and the compaction after it
// and gives the file's size before and after. Ratios from one run; nothing is asserted.
//
//	go run ./bench/sessions [-sessions 10000] [-demo 90]
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"tunebot/bench/internal/web"
	"tunebot/bot"
	"tunebot/bot/bottest"
	"tunebot/dashboard"
	"tunebot/httpd"
	"tunebot/retention"
	"tunebot/session"
	"tunebot/store"
)

func main() {
	sessions := flag.Int("sessions", 10000, "sessions in the store the list views read")
	demo := flag.Int("demo", 90, "demo-like sessions, with curves, in the store prune works on")
	runs := flag.Int("runs", 15, "times each read is timed (the median is reported)")
	flag.Parse()
	dir, err := os.MkdirTemp("", "tunebot-bench-sessions")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	if err := lists(filepath.Join(dir, "list.db"), *sessions, *runs); err != nil {
		fail(err)
	}
	if err := prune(filepath.Join(dir, "demo.db"), *demo); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/sessions:", err)
	os.Exit(1)
}

// The shape of a demo session (tunebot demo): 12 rung-0 trials, 5 promoted to rung 1 and 3 to
// rung 2, 11 proposals, and 24 curves per trial of 300, 600 and 1,100 points by rung.
var (
	demoRungs  = []int{12, 5, 3}
	demoPoints = []int{300, 600, 1100}
)

const (
	demoProposals = 11
	demoTags      = 24
)

// records are one session's, as the engine leaves them when it succeeds.
func records(id string, created time.Time, rng *rand.Rand) (session.Session, []session.Trial, []session.Proposal) {
	sp := session.DefaultSpace()
	st := session.DefaultSettings()
	st.Normalize()
	base := sp.Defaults()
	metrics := func() session.Metrics {
		return session.Metrics{"velocity_error_linear": 0.2 + rng.Float64()/10, "velocity_error_angular": 0.3 + rng.Float64()/10,
			"action_acceleration": 12 + rng.Float64(), "orientation_error": 0.05, "fall_rate": rng.Float64() / 50, "foot_slip": 0.08, "mechanical_power": 150 + rng.Float64()*10}
	}
	score := func() *session.Score {
		obj := map[string]float64{}
		for _, o := range []string{"tracking", "smoothness", "stability", "falls", "slip", "energy"} {
			obj[o] = rng.Float64()/5 - 0.05
		}
		imp := map[string]float64{}
		for k := range metrics() {
			imp[k] = rng.Float64()/5 - 0.05
		}
		return &session.Score{Total: rng.Float64() / 3, Objectives: obj, Improvements: imp, Eligible: true}
	}
	var trials []session.Trial
	n := 0
	for rung, count := range demoRungs {
		for i := range count {
			number := n
			if rung > 0 {
				number = i * 2
			}
			run := fmt.Sprintf("trial-%03d-rung-%d", number, rung)
			cfg := session.Merge(base, session.Patch{Weights: map[string]float64{"pose": 1 + rng.Float64()/2, "foot_slip": -0.25 - rng.Float64()/10}})
			per := []session.SeedMetrics{{Seed: 0, Metrics: metrics()}, {Seed: 1, Metrics: metrics()}, {Seed: 2, Metrics: metrics()}}
			t := session.Trial{SessionID: id, Number: number, Rung: rung, Iterations: []int{300, 900, 2000}[rung], State: session.TrialCompleted,
				Source: session.SourceSampler, RewardConfig: cfg, RunDir: run, Checkpoint: run + "/model_300.pt", Policy: run + "/policy.onnx",
				Trained: true, Metrics: metrics(), PerSeed: per, Score: score(), StartedAt: created, EndedAt: created.Add(time.Minute), GPUSeconds: 60}
			if rung == 2 {
				t.Final = &session.Final{Seeds: []int{0, 1, 2}, Metrics: metrics(), PerSeed: per, Score: *score(), ScoreStd: 0.01}
			}
			trials = append(trials, t)
			if rung == 0 {
				n++
			}
		}
	}
	var props []session.Proposal
	for i := range demoProposals {
		props = append(props, session.Proposal{ID: fmt.Sprintf("%s-p%02d", id[:8], i+1), SessionID: id, Seq: i + 1, Number: i + 1, BaseTrial: 0, Base: base,
			Patch:     session.Patch{Weights: map[string]float64{"pose": 1.2, "action_rate_l2": -0.06}},
			Rationale: "raise pose to steady the gait; a little more action-rate penalty for smoothness", Source: session.SourceSampler,
			State: session.ProposalUsed, Decision: &session.Decision{Action: session.ActionApprove, By: session.System, At: created}, CreatedAt: created})
	}
	best := trials[len(trials)-1]
	s := session.Session{ID: id, State: session.StateSucceeded, Settings: st, Owner: session.Actor{Platform: "slack", ID: "U1", Name: "ana"}, Base: base,
		Message: "succeeded: preset auto-tune-" + id[:8], BestTrial: best.Number, BestRung: best.Rung, BestScore: best.Score.Total,
		Preset: "auto-tune-" + id[:8], GPUSeconds: 1200, CreatedAt: created, UpdatedAt: created.Add(time.Hour), EndedAt: created.Add(time.Hour),
		Result: &session.Comparison{Best: session.Standing{Trial: best.Number, Rung: best.Rung, Iterations: 2000, Score: best.Score.Total, Std: 0.01, Seeds: []int{0, 1, 2}, Final: true},
			Control: &session.Standing{Rung: 2, Iterations: 2000, Score: 0.2, Std: 0.02, Seeds: []int{0, 1, 2}, Final: true}, BaselineIterations: 300, Final: true}}
	return s, trials, props
}

// write stores one session the way the engine does: created, its trials as they finish
// (each with its audit line and, when curves, its curves), its proposals, then its end.
func write(ctx context.Context, db *store.DB, s session.Session, trials []session.Trial, props []session.Proposal, curves bool, rng *rand.Rand) error {
	end := s
	s.State, s.EndedAt, s.Result, s.Preset = session.StateRunning, time.Time{}, nil, ""
	if err := db.CreateSession(ctx, s); err != nil {
		return err
	}
	for i, t := range trials {
		if i < len(props) {
			if err := db.PutProposal(ctx, props[i]); err != nil {
				return err
			}
		}
		if curves {
			series := map[string][]session.Point{}
			for g := range demoTags {
				pts := make([]session.Point, demoPoints[t.Rung])
				v := rng.Float64()
				for j := range pts {
					v += rng.NormFloat64() / 50
					pts[j] = session.Point{Step: int64(j + 1), Value: v + math.Sin(float64(j)/40)}
				}
				series[fmt.Sprintf("Episode_Reward/term_%02d", g)] = pts
			}
			if err := db.PutSeriesBatch(ctx, s.ID, t.Ref(), series); err != nil {
				return err
			}
		}
		e := session.AuditEntry{SessionID: s.ID, Kind: "trial_finished", Actor: session.System, Time: t.EndedAt,
			Detail: map[string]any{"trial": t.Number, "rung": t.Rung, "score": t.Score.Total}}
		if err := db.PutTrialAudited(ctx, t, e); err != nil {
			return err
		}
	}
	_, err := db.UpdateSession(ctx, s.ID, func(x *session.Session) error { *x = end; return nil })
	return err
}

func open(path string) (*store.DB, error) {
	// NoSync: the bench writes a year of sessions in seconds; a real data file syncs.
	return store.Open(path, store.Options{NoSync: true, Timeout: time.Second})
}

// coldOne is the time of one cold page load, taken inside its run.
var coldOne time.Duration

// median runs f runs times and returns the median of its times: each run's wall time, or
// what took says when it is not nil.
func median(runs int, f func() error, took func() time.Duration) (time.Duration, error) {
	var times []time.Duration
	for range runs {
		start := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		d := time.Since(start)
		if took != nil {
			d = took()
		}
		times = append(times, d)
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// serve starts the monitoring page on db on the loopback and signs in to it.
func serve(db *store.DB) (base string, cookie *http.Cookie, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	base = "http://" + ln.Addr().String()
	// The bench reads the page far faster than a person: the page read limit is lifted, as
	// in bench/dashboard, so a larger --runs is not answered 429.
	dash, err := dashboard.New(dashboard.Options{Store: db, Actions: readOnly{}, Key: make([]byte, 32), BaseURL: base,
		ReadLimit: bot.RateLimit{Burst: 1 << 20, Every: time.Microsecond}})
	if err != nil {
		ln.Close()
		return "", nil, nil, err
	}
	srv := &http.Server{Handler: dash}
	go srv.Serve(ln)
	if cookie, err = web.SignIn(dash, base); err != nil {
		srv.Close()
		return "", nil, nil, err
	}
	return base, cookie, func() { srv.Close() }, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%8.2f ms", float64(d.Microseconds())/1000) }

// lists times the list views on a store of n sessions.
func lists(path string, n, runs int) error {
	ctx := context.Background()
	db, err := open(path)
	if err != nil {
		return err
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	first := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(n) * time.Hour)
	for i := range n {
		id := fmt.Sprintf("%016x", rng.Uint64())
		s, trials, props := records(id, first.Add(time.Duration(i)*time.Hour), rng)
		if err := write(ctx, db, s, trials, props, false, rng); err != nil {
			return err
		}
	}
	size, _ := db.Size()
	fmt.Printf("store: %d sessions of %d trials and %d proposals each (no curves), written in %s: %s\n",
		n, 20, demoProposals, time.Since(start).Round(time.Second), session.Bytes(size))

	// Cold: the first load after the daemon starts, which reads the page's sessions' trials;
	// warm: the page polling, which reads them again only for an unfinished session.
	client := &http.Client{}
	var bytes int64
	cold, err := median(runs, func() error {
		base, cookie, stop, err := serve(db)
		if err != nil {
			return err
		}
		defer stop()
		start := time.Now()
		bytes, err = web.Get(client, base+"/api/sessions", cookie)
		coldOne = time.Since(start)
		return err
	}, func() time.Duration { return coldOne })
	if err != nil {
		return err
	}
	base, cookie, stop, err := serve(db)
	if err != nil {
		return err
	}
	defer stop()
	page, err := median(runs, func() error { _, err := web.Get(client, base+"/api/sessions", cookie); return err }, nil)
	if err != nil {
		return err
	}
	_, cursor, err := db.RecentSessions(ctx, "", n/2)
	if err != nil {
		return err
	}
	deep, err := median(runs, func() error { _, err := web.Get(client, base+"/api/sessions?cursor="+cursor, cookie); return err }, nil)
	if err != nil {
		return err
	}

	eng, err := session.NewEngine(session.EngineConfig{Store: db, Trainer: bottest.NoTrainer{}, Sampler: bottest.NoAdvisor{}, Space: session.DefaultSpace(), SessionsDir: filepath.Dir(path)})
	if err != nil {
		return err
	}
	defer eng.Shutdown(ctx)
	h := bot.NewHandler(bot.HandlerConfig{Engine: eng, Store: db, Space: session.DefaultSpace(), ReadLimit: bot.RateLimit{Burst: 1 << 20, Every: time.Nanosecond}})
	status, err := median(runs, func() error {
		r := h.Do(ctx, bot.Interaction{Platform: "console", User: session.Actor{ID: "bench"}, Kind: bot.KindCommand, Text: "status"})
		if r.Card == nil {
			return fmt.Errorf("/tune status: %+v", r)
		}
		return nil
	}, nil)
	if err != nil {
		return err
	}

	// The page before the index: every session, and each one's trials for its row.
	scan, err := median(max(3, runs/5), func() error {
		all, err := db.Sessions(ctx)
		if err != nil {
			return err
		}
		for _, s := range all {
			if _, err := db.Trials(ctx, s.ID); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		return err
	}
	src := httpd.NewStoreSource(db, nil, time.Nanosecond)
	firstScrape, err := median(1, func() error { _, err := src.Snapshot(ctx); return err }, nil)
	if err != nil {
		return err
	}
	scrape, err := median(runs, func() error { time.Sleep(time.Microsecond); _, err := src.Snapshot(ctx); return err }, nil)
	if err != nil {
		return err
	}

	fmt.Printf("sessions page, newest %d of %d, first load (HTTP, %s)  %s  (%.0f%% of the 100 ms budget)\n",
		dashboard.SessionsPerPage, n, session.Bytes(bytes), ms(cold), 100*cold.Seconds()/0.1)
	fmt.Printf("sessions page, polled (finished rows kept)             %s\n", ms(page))
	fmt.Printf("sessions page, %d sessions back, polled               %s\n", n/2, ms(deep))
	fmt.Printf("/tune status (no session active: the newest)           %s\n", ms(status))
	fmt.Printf("full scan: every session and its trials               %s  (what the page read on every poll before: %.0f× its first load, %.0f× a poll, %.0f× /tune status)\n",
		ms(scan), scan.Seconds()/cold.Seconds(), scan.Seconds()/page.Seconds(), scan.Seconds()/status.Seconds())
	fmt.Printf("/metrics: first scrape after a start %s, then each %s (the store's running totals: no session, trial or audit entry is read; %.0f%% of the 100 ms goal)\n",
		ms(firstScrape), ms(scrape), 100*firstScrape.Seconds()/0.1)
	return nil
}

// readOnly stands in for the chat handler behind the page: the bench only reads.
type readOnly struct{}

func (readOnly) Do(context.Context, bot.Interaction) bot.Reply {
	return bot.Reply{Private: true, Text: "read-only bench"}
}

func (readOnly) Refuse(context.Context, bot.Interaction, bot.Command) (bot.Reply, bool) {
	return bot.Reply{Private: true, Text: "read-only bench"}, false
}

func (readOnly) Advised() bool { return true }

// prune times retention's defaults on a store of n demo-like sessions, one every four days.
func prune(path string, n int) error {
	ctx := context.Background()
	db, err := open(path)
	if err != nil {
		return err
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("%016x", rng.Uint64())
		s, trials, props := records(id, now.AddDate(0, 0, -4*(n-i)), rng)
		if err := write(ctx, db, s, trials, props, true, rng); err != nil {
			return err
		}
	}
	grown, _ := db.Size()
	free, _ := db.Free(ctx)
	fmt.Printf("\ndemo-like store: %d sessions, one every 4 days, %d trials × %d curves of %v points by rung: %s (%s free pages)\n",
		n, 20, demoTags, demoPoints, session.Bytes(grown), session.Bytes(free))
	p := &retention.Pruner{Store: db, Now: func() time.Time { return now }}
	for _, curves := range []string{session.CurvesDownsample, session.CurvesDrop} {
		o := retention.Defaults().Options()
		o.Curves, o.Compact, o.RunDirs = curves, false, false
		rep, err := p.Run(ctx, o, session.System)
		if err != nil {
			return err
		}
		start := time.Now()
		before, after, err := db.Compact(ctx)
		if err != nil {
			return err
		}
		took := time.Since(start)
		fmt.Printf("prune --curves %-10s %d sessions older than %s (newest %d kept): curves %s → %s in %s; compact %s → %s in %s (%.0f%% of the file)\n",
			curves, len(rep.Sessions), retention.Age(o.OlderThan), o.KeepLast, session.Bytes(rep.CurvesBefore), session.Bytes(rep.CurvesAfter),
			rep.Took.Round(time.Millisecond), session.Bytes(before), session.Bytes(after), took.Round(time.Millisecond), 100*float64(after)/float64(before))
	}
	return nil
}

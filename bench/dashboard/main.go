// Command dashboard measures the monitoring page (issue 15): a session of 20 trials × 20
// tags × 2,000 points, served on the loopback as `tunebot run` serves it, and the requests
// the session and curves pages make on load (all trials, all tags, down-sampled on the
// server). It reports times and sizes against the 1 s budget, and first the peak resident
// memory while serving 60 concurrent requests for a 16 MiB clip (clips.go) against the
// 64 MB goal; nothing is asserted.
//
//	go run ./bench/dashboard
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"tunebot/bench/internal/web"
	"tunebot/bot"
	"tunebot/dashboard"
	"tunebot/dashboard/browsertest"
	"tunebot/session"
	"tunebot/store"
)

func main() {
	trials := flag.Int("trials", 20, "trials in the session")
	tags := flag.Int("tags", 20, "tags per trial")
	points := flag.Int("points", 2000, "points per curve")
	runs := flag.Int("runs", 7, "page loads to time (the median is reported)")
	clips := flag.Int("clips", 60, "concurrent clip requests to measure the peak resident memory of (0: none)")
	pages := flag.Bool("pages", true, "measure the pages (false: the clip figure alone)")
	flag.Parse()
	if *clips > 0 {
		if err := clipFigures(*clips); err != nil {
			fmt.Fprintln(os.Stderr, "bench/dashboard:", err)
			os.Exit(1)
		}
	}
	if !*pages {
		return
	}
	if err := run(*trials, *tags, *points, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench/dashboard:", err)
		os.Exit(1)
	}
}

// noActions stands in for the chat handler: the bench only reads.
type noActions struct{}

func (noActions) Do(context.Context, bot.Interaction) bot.Reply {
	return bot.Reply{Private: true, Text: "read-only bench"}
}

func (noActions) Refuse(context.Context, bot.Interaction, bot.Command) (bot.Reply, bool) {
	return bot.Reply{Private: true, Text: "read-only bench"}, false
}

func (noActions) Advised() bool { return true }

func run(nTrials, nTags, nPoints, runs int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "tunebot-bench-dashboard")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(filepath.Join(dir, "tunebot.db"), store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	const sid = "benchbenchbench0"
	st := session.DefaultSettings()
	st.TrialCount = nTrials
	st.Normalize()
	sp := session.DefaultSpace()
	now := time.Now().UTC()
	if err := db.CreateSession(ctx, session.Session{ID: sid, State: session.StateRunning, Settings: st, Base: sp.Defaults(), BestTrial: -1, CreatedAt: now, UpdatedAt: now}); err != nil {
		return err
	}
	var trialList []string
	for n := 0; n < nTrials; n++ {
		score := &session.Score{Total: float64(n) / 100, Eligible: true, Objectives: map[string]float64{"tracking": 0.1}}
		t := session.Trial{SessionID: sid, Number: n, Iterations: nPoints, State: session.TrialCompleted, Source: "advisor", RewardConfig: sp.Defaults(), Score: score,
			Metrics: session.Metrics{"fall_rate": 0.01, "foot_slip": 0.05}}
		if err := db.PutTrial(ctx, t); err != nil {
			return err
		}
		series := map[string][]session.Point{}
		for g := 0; g < nTags; g++ {
			pts := make([]session.Point, nPoints)
			for i := range pts {
				pts[i] = session.Point{Step: int64(i), Value: math.Sin(float64(i)/50+float64(g)) + float64(n)/10 + 0.05*math.Sin(float64(i*7919%97))}
			}
			series[fmt.Sprintf("Episode_Reward/term_%02d", g)] = pts
		}
		if err := db.PutSeriesBatch(ctx, sid, t.Ref(), series); err != nil {
			return err
		}
		trialList = append(trialList, fmt.Sprintf("%d@0", n))
	}
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i + 1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	// The bench loads the pages far faster than a person: the page read limit is lifted.
	dash, err := dashboard.New(dashboard.Options{Store: db, Actions: noActions{}, Space: sp, Key: key, BaseURL: base,
		ReadLimit: bot.RateLimit{Burst: 1 << 20, Every: time.Microsecond}})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: dash}
	go srv.Serve(ln)
	defer srv.Close()

	cookie, err := web.SignIn(dash, base)
	if err != nil {
		return err
	}
	tagList, err := db.SeriesTags(ctx, sid, session.TrialRef{})
	if err != nil {
		return err
	}
	curves := fmt.Sprintf("/api/sessions/%s/curves?trials=%s&tags=%s", sid, url.QueryEscape(strings.Join(trialList, ",")), url.QueryEscape(strings.Join(tagList, ",")))
	pages := []struct {
		name string
		urls []string
	}{
		{"session page", []string{"/sessions/" + sid, "/static/app.js", "/api/me", "/api/sessions/" + sid}},
		{"curves page (all trials × tags, 500 points each)", []string{"/sessions/" + sid + "/curves", "/api/me", "/api/sessions/" + sid + "/tags", curves}},
		{fmt.Sprintf("curves page, points=5000 (%dk points at most)", dashboard.MaxServedPoints/1000), []string{"/api/sessions/" + sid + "/tags", curves + "&points=5000"}},
	}
	client := &http.Client{}
	fmt.Printf("session: %d trials × %d tags × %d points on the loopback; %d loads each, median\n", nTrials, nTags, nPoints, runs)
	var first time.Duration
	for i, p := range pages {
		var times []time.Duration
		var size int64
		for r := 0; r < runs; r++ {
			start := time.Now()
			size = 0
			for _, u := range p.urls {
				n, err := web.Get(client, base+u, cookie)
				if err != nil {
					return err
				}
				size += n
			}
			times = append(times, time.Since(start))
		}
		sort.Slice(times, func(a, b int) bool { return times[a] < times[b] })
		med := times[len(times)/2]
		if i == 1 {
			first = med
		}
		line := fmt.Sprintf("%-50s %8.1f ms  %7.0f KiB  (%.2f of the 1 s budget)", p.name, float64(med.Microseconds())/1000, float64(size)/1024, med.Seconds())
		if i == 2 && first > 0 {
			line += fmt.Sprintf("  %.1f× the down-sampled load", float64(med)/float64(first))
		}
		fmt.Println(line)
	}
	fmt.Println("(server time and transfer only; the page in a browser follows)")
	return inBrowser(dash, base, sid, runs)
}

// inBrowser times the pages in headless Chromium, from navigation to the page's own mark of
// its first full drawing (data-loaded-ms): fetching, parsing and drawing 400 curves.
func inBrowser(dash *dashboard.Server, base, sid string, runs int) error {
	bin := browsertest.Find()
	if bin == "" {
		fmt.Println("chromium is not installed: the in-browser load time is not measured (apt-get install -y chromium)")
		return nil
	}
	b, err := browsertest.Start(bin, 1400, 1000)
	if err != nil {
		return err
	}
	defer b.Close()
	link, _, err := dash.Link(dashboard.Identity{Platform: "cli", ID: "bench"})
	if err != nil {
		return err
	}
	const wait = 60 * time.Second
	if err := b.Navigate(link, wait); err != nil {
		return err
	}
	if _, err := b.Eval(`setTimeout(() => document.querySelector("#signin").click(), 0)`); err != nil {
		return err
	}
	if err := b.Wait("sign-in", `location.pathname === "/" && !!document.querySelector("#sessions")`, wait); err != nil {
		return err
	}
	for _, p := range []struct{ name, path string }{
		{"session page in Chromium", "/sessions/" + sid},
		{"curves page in Chromium (400 curves drawn)", "/sessions/" + sid + "/curves"},
	} {
		var times []float64
		for r := 0; r < runs; r++ {
			if err := b.Navigate(base+p.path, wait); err != nil {
				return err
			}
			if err := b.Wait(p.name, `!!document.body.dataset.loadedMs`, wait); err != nil {
				return err
			}
			ms, err := b.String(`document.body.dataset.loadedMs`)
			if err != nil {
				return err
			}
			var v float64
			fmt.Sscan(ms, &v)
			times = append(times, v)
		}
		sort.Float64s(times)
		med := times[len(times)/2]
		fmt.Printf("%-50s %8.1f ms  (%.2f of the 1 s budget; navigation to drawn, median of %d)\n", p.name, med, med/1000, runs)
	}
	return nil
}

package main

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/dashboard/browsertest"
	"tunebot/preset"
	"tunebot/session"
	"tunebot/store"
)

// tuneConfig is a short sim session: four trials, three rungs of up to 150 iterations. Its
// final seeds are fixed, so that what it comes to does not depend on the session's id (fresh
// seeds are drawn from it): on these it ends within the noise and saves its preset, whose
// policy and checkpoint a prune must keep.
const tuneConfig = `
session:
  trial_count: 4
  rungs: [50, 100, 150]
  early_stop_patience: 4
  final_eval_seeds: [100, 101, 102, 103, 104]
`

// tuned runs `tunebot tune` n times in the data dir of cfg and returns the sessions' ids,
// oldest first.
func tuned(t *testing.T, cfg string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		sum, _ := tuneJSON(t, cfg)
		ids = append(ids, sum.Session)
	}
	return ids
}

// age moves session id's times daysAgo into the past, as if it had run then.
func age(t *testing.T, dataDir, id string, daysAgo int) {
	t.Helper()
	db, err := store.Open(filepath.Join(dataDir, "tunebot.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.UpdateSession(context.Background(), id, func(s *session.Session) error {
		d := -time.Duration(daysAgo) * 24 * time.Hour
		s.CreatedAt, s.UpdatedAt, s.EndedAt = s.CreatedAt.Add(d), s.UpdatedAt.Add(d), s.EndedAt.Add(d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dataDirState is what a prune may change and must keep, read from a data dir no daemon holds.
type dataDirState struct {
	Sessions  map[string]session.Session
	Trials    map[string][]session.Trial
	Proposals map[string][]session.Proposal
	Presets   []session.Preset
	Audit     []session.AuditEntry
	Points    map[string]int      // session → the most points of any of its curves
	Files     map[string][]string // session → files of its run directories
}

func readDataDir(t *testing.T, dataDir string) dataDirState {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(filepath.Join(dataDir, "tunebot.db"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the data file does not open: %v", err)
	}
	defer db.Close()
	st := dataDirState{Sessions: map[string]session.Session{}, Trials: map[string][]session.Trial{}, Proposals: map[string][]session.Proposal{},
		Points: map[string]int{}, Files: map[string][]string{}}
	all, err := db.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		st.Sessions[s.ID] = s
		if st.Trials[s.ID], err = db.Trials(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if st.Proposals[s.ID], err = db.Proposals(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		for _, tr := range st.Trials[s.ID] {
			tags, err := db.SeriesTags(ctx, s.ID, tr.Ref())
			if err != nil {
				t.Fatal(err)
			}
			for _, tag := range tags {
				pts, err := db.Series(ctx, session.SeriesKey{SessionID: s.ID, Number: tr.Number, Rung: tr.Rung, Tag: tag})
				if err != nil {
					t.Fatal(err)
				}
				st.Points[s.ID] = max(st.Points[s.ID], len(pts))
			}
		}
		root := filepath.Join(dataDir, "sessions", s.ID)
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				rel, _ := filepath.Rel(root, p)
				st.Files[s.ID] = append(st.Files[s.ID], rel)
			}
			return nil
		})
	}
	if st.Presets, err = db.Presets(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Audit, err = db.Audit(ctx, ""); err != nil {
		t.Fatal(err)
	}
	return st
}

// kept is what no prune may change: trials, scores, proposals, presets, and the audit as
// it was (a prune adds its own lines).
func kept(st dataDirState, audit int) any {
	return []any{st.Trials, st.Proposals, st.Presets, st.Audit[:audit]}
}

func runPruneBin(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runBinEnv(t, nil, append([]string{"prune"}, args...)...)
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// policyOf finds the preset of session id and resolves its policy as /tune policy does.
func policyOf(t *testing.T, dataDir string, st dataDirState, id string) (session.Preset, string, error) {
	t.Helper()
	for _, p := range st.Presets {
		if p.SessionID != id {
			continue
		}
		for _, tr := range st.Trials[id] {
			if tr.Ref() == p.Trial {
				f, err := preset.BestPolicy(filepath.Join(dataDir, "sessions"), p, tr, 0)
				if err != nil {
					return p, "", err
				}
				defer f.Close()
				return p, f.Path(), nil
			}
		}
	}
	t.Fatalf("session %s has no preset", id)
	return session.Preset{}, "", nil
}

// tunebot prune on a data dir no daemon holds: a dry run changes nothing; the run thins the
// old session's curves and deletes its run directories but its preset's policy and
// checkpoint, keeps every record, leaves the recent session whole and the file compacted
// and checked; a second setting drops the curves.
func TestPruneWithoutDaemon(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfig(t, dir, "data_dir: "+data+"\n"+tuneConfig)
	ids := tuned(t, cfg, 2)
	old, recent := ids[0], ids[1]
	age(t, data, old, 200)
	before := readDataDir(t, data)
	if before.Points[old] <= 20 || len(before.Files[old]) < 10 {
		t.Fatalf("the old session has %d points per curve and %d files: nothing to prune", before.Points[old], len(before.Files[old]))
	}
	file := filepath.Join(data, "tunebot.db")
	hash := fileHash(t, file)

	code, out, errOut := runPruneBin(t, "--config", cfg, "--keep-last", "0", "--points", "20", "--dry-run")
	if code != 0 || !strings.Contains(out, session.Short(old)) || strings.Contains(out, session.Short(recent)) || !strings.Contains(out, "Nothing was changed (--dry-run)") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	if fileHash(t, file) != hash || !cmp.Equal(readDataDir(t, data), before) {
		t.Fatal("a dry run changed the data dir")
	}
	// It says how much it would free, its files' share the same as its list says.
	if m := regexp.MustCompile(`, (\S+ \S+) of files would be deleted;`).FindStringSubmatch(out); m == nil || m[1] == "0 bytes" ||
		!strings.Contains(out, "on disk: "+m[1]+" of files and up to ") {
		t.Fatalf("dry run does not say how much it would free:\n%s", out)
	}

	code, out, errOut = runPruneBin(t, "--config", cfg, "--keep-last", "0", "--points", "20")
	if code != 0 || !strings.Contains(out, "1 session(s)") || !strings.Contains(out, "compacted; the copy passed its consistency check") {
		t.Fatalf("prune: exit %d\n%s%s", code, out, errOut)
	}
	after := readDataDir(t, data)
	if diff := cmp.Diff(kept(before, len(before.Audit)), kept(after, len(before.Audit))); diff != "" {
		t.Errorf("prune changed records it must keep (-before +after):\n%s", diff)
	}
	if after.Points[old] != 20 || after.Points[recent] != before.Points[recent] {
		t.Errorf("points per curve: old %d (want 20), recent %d (want %d)", after.Points[old], after.Points[recent], before.Points[recent])
	}
	if !slices.Equal(after.Files[recent], before.Files[recent]) {
		t.Errorf("the recent session's files changed: %d of %d left", len(after.Files[recent]), len(before.Files[recent]))
	}
	p, policy, err := policyOf(t, data, after, old)
	if err != nil || !strings.HasSuffix(policy, "policy.onnx") {
		t.Errorf("the policy of preset %s after prune: %q, %v", p.Name, policy, err)
	}
	if len(after.Files[old]) != 2 || !strings.HasSuffix(after.Files[old][0], ".pt") && !strings.HasSuffix(after.Files[old][1], ".pt") {
		t.Errorf("the old session keeps %v, want its preset's policy and checkpoint", after.Files[old])
	}
	if m := after.Sessions[old].Pruned; m == nil || m.Curves != session.CurvesDownsample || m.Points != 20 || !m.RunDirs {
		t.Errorf("the old session is marked %+v", m)
	}
	if _, err := os.Stat(filepath.Join(data, "reports", session.Short(old))); !os.IsNotExist(err) {
		t.Errorf("the old session's terminal charts are still there: %v", err)
	}
	var audit []string
	for _, e := range after.Audit[len(before.Audit):] {
		audit = append(audit, e.Kind+" "+e.SessionID)
	}
	if want := []string{"pruned " + old, "prune "}; !slices.Equal(audit, want) {
		t.Errorf("audit lines %q, want %q", audit, want)
	}
	if left, _ := filepath.Glob(filepath.Join(data, ".*")); len(left) > 0 {
		t.Errorf("files left beside the data file: %v", left)
	}

	if code, out, errOut = runPruneBin(t, "--config", cfg, "--keep-last", "0", "--curves", "drop"); code != 0 {
		t.Fatalf("drop: exit %d\n%s%s", code, out, errOut)
	}
	dropped := readDataDir(t, data)
	if dropped.Points[old] != 0 || dropped.Points[recent] != before.Points[recent] {
		t.Errorf("after drop: old %d points, recent %d", dropped.Points[old], dropped.Points[recent])
	}
	if diff := cmp.Diff(kept(before, len(before.Audit)), kept(dropped, len(before.Audit))); diff != "" {
		t.Errorf("drop changed records it must keep (-before +after):\n%s", diff)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--config", cfg, "--curves", "shred", "--points", "3"}, 2, `--curves: "shred" is not downsample, drop or keep`},
		{[]string{"--config", cfg, "--points", "3"}, 2, "--points: 3 is outside 20–4096"},
		{[]string{"--config", cfg, "--older-than", "soon"}, 2, `"soon" is not an age like 90d`},
		{[]string{"--config", cfg, "extra"}, 2, "usage: tunebot prune"},
		{[]string{"--config", writeConfig(t, t.TempDir(), "data_dir: "+filepath.Join(dir, "none")+"\n")}, 1, "no data file at"},
	} {
		code, _, stderr := runPruneBin(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("prune %v: exit %d, %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// While the daemon holds the data file, tunebot prune asks it to prune through its service;
// the daemon compacts the file it has open and goes on working on the new one: a session
// runs to its end, and the pruned session's preset still hands out its policy.
func TestPruneWhileTheDaemonRuns(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfig(t, dir, "data_dir: "+data+"\nservice: {addr: \""+freeAddr(t)+"\"}\n"+tuneConfig)
	old := tuned(t, cfg, 1)[0]
	age(t, data, old, 200)
	before := readDataDir(t, data)
	p, _, err := policyOf(t, data, before, old)
	if err != nil {
		t.Fatal(err)
	}
	cmd, stdinW, out := startDaemon(t, cfg)

	// $USER names someone else: the daemon records the user the kernel says ran the command.
	code, stdout, stderr := runBinEnv(t, []string{"USER=mallory"}, "prune", "--config", cfg, "--keep-last", "0", "--points", "20")
	if code != 0 || !strings.Contains(stdout, session.Short(old)) || !strings.Contains(stdout, "compacted; the copy passed its consistency check") {
		t.Fatalf("prune: exit %d\n%s%s\ndaemon:\n%s", code, stdout, stderr, out.String())
	}
	waitFor(t, "the daemon to log the prune", 5*time.Second, func() bool {
		log := logFile(data).String()
		return strings.Contains(log, `msg="old sessions pruned"`) && strings.Contains(log, "platform=cli")
	})
	stdinW.WriteString("/tune start trials=4 rungs=20,40,60 fallback=true\n")
	waitFor(t, "a session after the prune to succeed", 60*time.Second, func() bool { return strings.Contains(out.String(), "succeeded") })
	stdinW.WriteString("/tune policy " + p.Name + "\n")
	waitFor(t, "the pruned session's policy", 10*time.Second, func() bool { return strings.Contains(out.String(), "policy.onnx of preset "+p.Name) })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, out.String())
	}

	after := readDataDir(t, data)
	if len(after.Sessions) != 2 || after.Points[old] != 20 || after.Sessions[old].Pruned == nil {
		t.Fatalf("after: %d sessions, the old one with %d points, marked %+v", len(after.Sessions), after.Points[old], after.Sessions[old].Pruned)
	}
	for id, s := range after.Sessions {
		if id != old && (s.State != session.StateSucceeded || len(after.Trials[id]) < 4) {
			t.Errorf("the session run after the prune is %s with %d trials", s.State, len(after.Trials[id]))
		}
	}
	oldPresets := slices.DeleteFunc(after.Presets, func(p session.Preset) bool { return p.SessionID != old })
	if diff := cmp.Diff(kept(before, len(before.Audit)), []any{map[string][]session.Trial{old: after.Trials[old]},
		map[string][]session.Proposal{old: after.Proposals[old]}, oldPresets, after.Audit[:len(before.Audit)]}); diff != "" {
		t.Errorf("the pruned session's records changed (-before +after):\n%s", diff)
	}
	pruned := 0
	for _, a := range after.Audit[len(before.Audit):] {
		if a.Kind == "pruned" {
			pruned++
			if me := currentUser(t); a.Actor != (session.Actor{Platform: "cli", ID: me, Name: me}) {
				t.Errorf("the prune is audited as %+v, want %s (the socket's caller), never the request's mallory", a.Actor, me)
			}
		}
	}
	if pruned == 0 {
		t.Error("the prune left no audit")
	}
}

// With retention enabled the daemon prunes on its own, on the schedule of retention.at.
func TestDaemonPrunesOnItsSchedule(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfig(t, dir, "data_dir: "+data+"\nservice: {addr: off}\n"+tuneConfig)
	old := tuned(t, cfg, 1)[0]
	age(t, data, old, 40)
	cfg = writeConfig(t, dir, "data_dir: "+data+"\nservice: {addr: off}\n"+tuneConfig+`
retention:
  enabled: true
  at: "@every 1s"
  older_than: 30d
  keep_last: 0
  curves: drop
`)
	cmd, _, out := startDaemon(t, cfg)
	waitFor(t, "the daemon to prune", 10*time.Second, func() bool {
		return strings.Contains(logFile(data).String(), `msg="old sessions pruned" user=tunebot`)
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, out.String())
	}
	after := readDataDir(t, data)
	if m := after.Sessions[old].Pruned; m == nil || m.Curves != session.CurvesDrop || after.Points[old] != 0 || len(after.Files[old]) != 2 {
		t.Errorf("after the daemon's prune: marked %+v, %d points, files %v", m, after.Points[old], after.Files[old])
	}
	if n := strings.Count(logFile(data).String(), `msg="old sessions pruned"`); n != 1 {
		t.Errorf("the daemon logged %d prunes; a pruned session is passed over the next time", n)
	}
}

func TestRetentionConfigIsChecked(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), `
retention:
  enabled: true
  at: "61 * * * *"
  older_than: soon
  keep_last: -1
  curves: shred
`)
	code, _, stderr := runCmd("config", "check", "--config", cfg)
	for _, want := range []string{
		`retention.older_than: "soon" is not an age (like 90d, 12w or 36h)`,
		"retention.keep_last: -1 must not be negative",
		`retention.curves: "shred" is not downsample, drop or keep`,
		`retention.at: schedule "61 * * * *": the minute field "61" is invalid`,
	} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("config check: exit %d, want 1 and %q in:\n%s", code, want, stderr)
		}
	}
}

// The sessions page lists the newest 50 and pages on to the rest with its links, in a real
// browser against the daemon.
func TestSessionsPagePagesInChromium(t *testing.T) {
	chromium := browsertest.Find()
	if chromium == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium): the browser test of the session list's pages is skipped")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ids := storeWithSessions(t, data, 60)
	addr := freeAddr(t)
	cfg := writeConfig(t, dir, "data_dir: "+data+"\nservice: {addr: \""+addr+"\"}\n")
	startDaemon(t, cfg)
	link := dashboardLink(t, cfg)
	b := startBrowser(t, chromium)
	b.navigate(link)
	b.waitJS("the sign-in button", `!!document.querySelector("#signin")`)
	b.eval(`setTimeout(() => document.querySelector("#signin").click(), 0)`)
	b.waitJS("the first page", `location.pathname === "/" && document.querySelectorAll("#sessions tbody tr").length === 50 && !!document.querySelector("#older-sessions")`)
	if first := b.evalString(`document.querySelector("#sessions tbody a").textContent`); first != session.Short(ids[59]) {
		t.Errorf("the first row is %s, want the newest session %s", first, session.Short(ids[59]))
	}
	b.eval(`document.querySelector("#older-sessions").click()`)
	b.waitJS("the older page", `location.search.startsWith("?cursor=") && document.querySelectorAll("#sessions tbody tr").length === 10 && !!document.querySelector("#newest-sessions") && !document.querySelector("#older-sessions")`)
	if last := b.evalString(`[...document.querySelectorAll("#sessions tbody a")].pop().textContent`); last != session.Short(ids[0]) {
		t.Errorf("the last row of the older page is %s, want the oldest session %s", last, session.Short(ids[0]))
	}
}

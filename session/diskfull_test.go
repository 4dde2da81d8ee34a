package session_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tunebot/session"
)

// fakeDisks measures every path as one filesystem with free bytes the test sets, and
// counts the reserve's releases.
type fakeDisks struct {
	mu          sync.Mutex
	free, total int64
	released    int
}

func (d *fakeDisks) Usage(path string) (session.DiskUsage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return session.DiskUsage{Path: path, Free: d.free, Total: d.total}, nil
}

func (d *fakeDisks) Release() {
	d.mu.Lock()
	d.released++
	d.mu.Unlock()
}

func (d *fakeDisks) Restore() {}

func (d *fakeDisks) set(free int64) {
	d.mu.Lock()
	d.free = free
	d.mu.Unlock()
}

// fullOnce fails chosen jobs once, as a trainer on a full disk does, then trains as the
// fake trainer does.
type fullOnce struct {
	*fakeTrainer
	mu       sync.Mutex
	train    map[session.TrialRef]error
	evaluate map[session.TrialRef]error
}

func (f *fullOnce) take(m map[session.TrialRef]error, ref session.TrialRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := m[ref]
	delete(m, ref)
	return err
}

func (f *fullOnce) Train(ctx context.Context, job session.TrainJob, hooks session.JobHooks) (session.TrainResult, error) {
	if err := f.take(f.train, job.Trial); err != nil {
		f.fakeTrainer.mu.Lock()
		f.trains[job.Trial]++
		f.fakeTrainer.mu.Unlock()
		// What it wrote before the disk filled is left behind, as a real trainer leaves it.
		_ = os.MkdirAll(job.RunDir, 0o755)
		_ = os.WriteFile(filepath.Join(job.RunDir, "model_3.pt"), []byte("half"), 0o644)
		return session.TrainResult{}, err
	}
	return f.fakeTrainer.Train(ctx, job, hooks)
}

func (f *fullOnce) Evaluate(ctx context.Context, job session.EvalJob, hooks session.JobHooks) (session.Evaluation, error) {
	if err := f.take(f.evaluate, job.Trial); err != nil {
		return session.Evaluation{}, err
	}
	return f.fakeTrainer.Evaluate(ctx, job, hooks)
}

func diskEngine(h *harness, tr session.Trainer, d *fakeDisks, minFree int64) *session.Engine {
	h.t.Helper()
	eng, err := session.NewEngine(session.EngineConfig{Store: configStore{h.db}, Trainer: tr, Advisor: h.adv, Sampler: h.sampler,
		Notifier: h.note, Space: session.DefaultSpace(), SessionsDir: filepath.Join(h.dir, "sessions"), DataDir: h.dir,
		Disks: d, MinFree: minFree})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { eng.Shutdown(context.Background()) })
	return eng
}

// fullDiskRun runs an automatic session on trainer tr, with 900 MiB free of 4 GiB and a floor
// of 1 MiB, until it stops.
func fullDiskRun(t *testing.T, tr session.Trainer) (*harness, session.Session) {
	t.Helper()
	h := newHarness(t, t.TempDir())
	h.eng = diskEngine(h, tr, &fakeDisks{free: 900 << 20, total: 4 << 30}, 1<<20)
	s, err := h.eng.Start(context.Background(), settings(session.ModeAutomatic), console)
	if err != nil {
		t.Fatal(err)
	}
	return h, h.wait(s.ID)
}

// checkDiskPause checks that s is paused for lack of space with the numbers of d, that the
// thread was told so, and that no trial failed.
func checkDiskPause(t *testing.T, h *harness, s session.Session, want string) {
	t.Helper()
	if s.State != session.StatePaused || s.Reason != want || s.Message != "paused: "+want {
		t.Fatalf("session %s, reason %q, message %q; want paused: %q", s.State, s.Reason, s.Message, want)
	}
	// Notifications are delivered by the engine's dispatcher, after the state is stored.
	var told string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		h.note.mu.Lock()
		told = strings.Join(h.note.texts, "\n")
		h.note.mu.Unlock()
		if strings.Contains(told, "paused: "+want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread was not told %q:\n%s", want, told)
		}
	}
	for _, tr := range h.trials(s.ID) {
		if tr.State == session.TrialFailed || tr.State == session.TrialTraining || tr.State == session.TrialEvaluating {
			t.Fatalf("trial %d @ rung %d is %s (%q) in a session paused for space", tr.Number, tr.Rung, tr.State, tr.Reason)
		}
	}
}

// TestJobOutOfSpacePausesAndRunsAgain: a training job whose log says the disk is full, an
// evaluation that fails with ENOSPC and a final re-evaluation likewise each pause the
// session with the disk's numbers, fail no trial, and after a resume the same trial runs
// again and the session finishes with no failed trial.
func TestJobOutOfSpacePausesAndRunsAgain(t *testing.T) {
	enospc := &fs.PathError{Op: "write", Path: "/data/sessions/x/eval.json", Err: syscall.ENOSPC}
	cases := []struct {
		name     string
		train    map[session.TrialRef]error
		evaluate map[session.TrialRef]error
	}{
		{"training log says so", map[session.TrialRef]error{{2, 0}: &session.JobError{Job: "train", Reason: "exit status 1",
			LogTail: "  File \"train.py\", line 80\nOSError: [Errno 28] No space left on device"}}, nil},
		{"evaluation write fails", nil, map[session.TrialRef]error{{3, 0}: fmt.Errorf("writing: %w", enospc)}},
		{"quota", map[session.TrialRef]error{{1, 0}: &session.JobError{Job: "train", Reason: "exit status 1", LogTail: "Disk quota exceeded"}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, s := fullDiskRun(t, &fullOnce{fakeTrainer: newFakeTrainer(), train: c.train, evaluate: c.evaluate})
			want := "the data disk is full (900.0 MiB free of 4.0 GiB on " + h.dir + "); free space, then resume"
			checkDiskPause(t, h, s, want)
			h.resumeToSuccess(h.eng, s.ID)
		})
	}
}

// TestFreeSpaceFloor: below service.min_free no job starts and the session pauses with the
// disk's numbers; once there is room again, a resume finishes it. The default floor is
// 1 GiB, or twice the largest run directory.
func TestFreeSpaceFloor(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	d := &fakeDisks{free: 5 << 20, total: 64 << 20}
	h.eng = diskEngine(h, h.tr, d, 8<<20)
	s, err := h.eng.Start(ctx, settings(session.ModeAutomatic), console)
	if err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	checkDiskPause(t, h, s, "the data disk is below the free-space floor (8.0 MiB, service.min_free): 5.0 MiB free of 64.0 MiB on "+h.dir+"; free space or lower service.min_free, or point data_dir at a larger disk, then resume")
	if n := len(h.tr.trains); n != 0 {
		t.Fatalf("%d jobs started below the floor", n)
	}
	// Still too little: the resume pauses it again at once.
	if _, err := h.eng.Resume(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
	s = h.wait(s.ID)
	checkDiskPause(t, h, s, "the data disk is below the free-space floor (8.0 MiB, service.min_free): 5.0 MiB free of 64.0 MiB on "+h.dir+"; free space or lower service.min_free, or point data_dir at a larger disk, then resume")
	d.set(9 << 20)
	if _, err := h.eng.Resume(ctx, s.ID, console); err != nil {
		t.Fatal(err)
	}
	if s = h.wait(s.ID); s.State != session.StateSucceeded {
		t.Fatalf("with room again: %s %q", s.State, s.Reason)
	}

	// The default floor: 1 GiB, or twice the largest run directory when that is more.
	trials := h.trials(s.ID)
	def := diskEngine(h, h.tr, d, 0)
	if got := def.MinFree(trials); got != session.MinFreeFloor {
		t.Fatalf("default floor with small run dirs: %d", got)
	}
	big := filepath.Join(h.dir, "sessions", s.ID, trials[1].RunDir, "big.pt")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 600<<20); err != nil {
		t.Fatal(err)
	}
	if got, want := def.MinFree(trials), 2*session.DirSize(filepath.Dir(big)); got != want || want < 1200<<20 {
		t.Fatalf("default floor with a 600 MiB run dir: %d, want %d", got, want)
	}
}

// silentOnLowDisk is a trainer whose job at trial 2 finds the disk fallen below the floor
// and fails saying only its exit status, as a trainer that could not write its own log does.
type silentOnLowDisk struct {
	*fakeTrainer
	disks *fakeDisks
}

func (s *silentOnLowDisk) Train(ctx context.Context, job session.TrainJob, hooks session.JobHooks) (session.TrainResult, error) {
	if job.Trial != (session.TrialRef{Number: 2, Rung: 0}) {
		return s.fakeTrainer.Train(ctx, job, hooks)
	}
	s.disks.set(5 << 20)
	return session.TrainResult{}, &session.JobError{Job: "train", Reason: "exit status 1"}
}

// TestDiskPauseWording: a disk that is below the floor but not full is called so, with the
// floor and the advice that works there (a full disk is freed; a floor can be lowered, or
// data_dir moved); a disk with next to nothing left, or a write that failed with ENOSPC, is
// called full as before.
func TestDiskPauseWording(t *testing.T) {
	below := func(floor, free, total string, dir string) string {
		return "the data disk is below the free-space floor (" + floor + ", service.min_free): " + free + " free of " + total + " on " + dir +
			"; free space or lower service.min_free, or point data_dir at a larger disk, then resume"
	}
	for _, tc := range []struct {
		name        string
		free, total int64
		minFree     int64
		silent      bool // the disk falls below the floor during trial 2's job, which fails without a word
		want        func(dir string) string
	}{
		{"an empty disk below the default floor", 8 << 20, 8 << 20, 0, false,
			func(dir string) string { return below("1.0 GiB", "8.0 MiB", "8.0 MiB", dir) }},
		{"a disk below a configured floor", 5 << 20, 64 << 20, 8 << 20, false,
			func(dir string) string { return below("8.0 MiB", "5.0 MiB", "64.0 MiB", dir) }},
		{"a job that fails silently below the floor", 900 << 20, 4 << 30, 8 << 20, true,
			func(dir string) string { return below("8.0 MiB", "5.0 MiB", "4.0 GiB", dir) }},
		{"a disk with next to nothing left", 512 << 10, 64 << 20, 8 << 20, false,
			func(dir string) string {
				return "the data disk is full (512.0 KiB free of 64.0 MiB on " + dir + "); free space, then resume"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			d := &fakeDisks{free: tc.free, total: tc.total}
			var tr session.Trainer = h.tr
			if tc.silent {
				tr = &silentOnLowDisk{fakeTrainer: h.tr, disks: d}
			}
			h.eng = diskEngine(h, tr, d, tc.minFree)
			s, err := h.eng.Start(context.Background(), settings(session.ModeAutomatic), console)
			if err != nil {
				t.Fatal(err)
			}
			checkDiskPause(t, h, h.wait(s.ID), tc.want(h.dir))
		})
	}
}

func TestOutOfSpaceWords(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("saving trial: %w", &fs.PathError{Op: "write", Path: "tunebot.db", Err: syscall.ENOSPC}), true},
		{fmt.Errorf("x: %w", syscall.EDQUOT), true},
		{&session.JobError{Job: "train", Reason: "exit status 1", LogTail: "RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 64 vs 0: No space left on device"}, true},
		{&session.JobError{Job: "train", Reason: "write /x: no space left on device"}, true},
		{&session.JobError{Job: "train", Reason: "exit status 1", LogTail: "CUDA out of memory"}, false},
		{errors.New("no space left on device"), false}, // only a job's words are read as text
		{syscall.EIO, false},
	} {
		if got := session.OutOfSpace(c.err); got != c.want {
			t.Errorf("OutOfSpace(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestOutOfSpaceWithAnotherJobRunning: with two jobs at once, one that fails for lack of
// space leaves the other to finish; the session pauses once it has (its trial is evaluated
// on resume), and the resume finishes the session with no failed trial.
func TestOutOfSpaceWithAnotherJobRunning(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := context.Background()
	tr := &fullOnce{fakeTrainer: newFakeTrainer(), train: map[session.TrialRef]error{{2, 0}: fmt.Errorf("writing the checkpoint: %w", syscall.ENOSPC)}}
	gate := make(chan struct{})
	tr.trainGate[session.TrialRef{1, 0}] = gate
	d := &fakeDisks{free: 900 << 20, total: 4 << 30}
	h.eng.Shutdown(ctx)
	eng, err := session.NewEngine(session.EngineConfig{Store: configStore{h.db}, Trainer: tr, Advisor: h.adv, Sampler: h.sampler,
		Notifier: h.note, Space: session.DefaultSpace(), SessionsDir: filepath.Join(h.dir, "sessions"), DataDir: h.dir,
		Disks: d, MinFree: 1 << 20, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	h.eng = eng
	s, err := eng.Start(ctx, settings(session.ModeAutomatic), console)
	if err != nil {
		t.Fatal(err)
	}
	// Trial 1 trains until trial 2 has run out of space.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		cur, _ := h.db.Session(ctx, s.ID)
		if cur.PauseAsked && session.IsDiskFullReason(cur.Reason) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trial 2 never ran out of space: %s %q", cur.State, cur.Message)
		}
	}
	if cur, _ := h.db.Session(ctx, s.ID); cur.State == session.StatePaused {
		t.Fatal("paused while trial 1 still trained")
	}
	close(gate)
	s = h.wait(s.ID)
	checkDiskPause(t, h, s, "the data disk is full (900.0 MiB free of 4.0 GiB on "+h.dir+"); free space, then resume")
	h.resumeToSuccess(eng, s.ID)
	if n := tr.trains[session.TrialRef{1, 0}]; n != 1 {
		t.Errorf("trial 1 trained %d times; its training had finished, so it is only evaluated on resume", n)
	}
}

// plantLink is a trainer that, in trial 2's training, swaps the session's directory for a
// link to a directory outside the sessions directory (one someone else chose) holding a
// run directory of the same name, then runs out of space.
type plantLink struct {
	*fakeTrainer
	outside string
}

func (p *plantLink) Train(ctx context.Context, job session.TrainJob, hooks session.JobHooks) (session.TrainResult, error) {
	if job.Trial != (session.TrialRef{Number: 2, Rung: 0}) {
		return p.fakeTrainer.Train(ctx, job, hooks)
	}
	sdir := filepath.Dir(job.RunDir)
	theirs := filepath.Join(p.outside, filepath.Base(job.RunDir))
	if err := os.MkdirAll(theirs, 0o755); err != nil {
		return session.TrainResult{}, err
	}
	if err := os.WriteFile(filepath.Join(theirs, "theirs.pt"), []byte("theirs"), 0o644); err != nil {
		return session.TrainResult{}, err
	}
	if err := os.Rename(sdir, sdir+".moved"); err != nil {
		return session.TrainResult{}, err
	}
	if err := os.Symlink(p.outside, sdir); err != nil {
		return session.TrainResult{}, err
	}
	return session.TrainResult{}, fmt.Errorf("writing the checkpoint: %w", syscall.ENOSPC)
}

// TestOutOfSpaceDiscardsNothingThroughALink: the run directory a job that ran out of space
// leaves is discarded through the sessions directory's root, as every run directory is made
// and discarded (issue 36): a session directory swapped for a link out of it is refused,
// and nothing in the directory it leads to is removed.
func TestOutOfSpaceDiscardsNothingThroughALink(t *testing.T) {
	tr := &plantLink{fakeTrainer: newFakeTrainer(), outside: t.TempDir()}
	_, s := fullDiskRun(t, tr)
	if s.State != session.StatePaused || !session.IsDiskFullReason(s.Reason) {
		t.Fatalf("session %s %q; want paused for space", s.State, s.Reason)
	}
	found, _ := filepath.Glob(filepath.Join(tr.outside, "*", "theirs.pt"))
	if len(found) != 1 {
		t.Fatalf("the linked directory's run directory was removed through the link (left: %v)", found)
	}
}

package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"tunebot/bot"
	"tunebot/schedule"
	"tunebot/session"
)

var bob = session.Actor{Platform: "discord", ID: "42", Name: "bob"}

// starter records the virtual times it was asked to start, and is busy while busy is set.
type starter struct {
	mu    sync.Mutex
	calls []time.Time
	args  []string
	busy  func(call int) bool
	why   error // what busy fails with; session.ErrBusy when nil
	err   error
}

func (s *starter) StartScheduled(_ context.Context, e bot.ScheduleEntry) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, time.Now())
	s.args = append(s.args, e.Args)
	if s.err != nil {
		return "", s.err
	}
	if s.busy != nil && s.busy(len(s.calls)) {
		if s.why != nil {
			return "", s.why
		}
		return "", session.Userf(session.ErrBusy, "session abc is running")
	}
	return fmt.Sprintf("s%d", len(s.calls)), nil
}

func (s *starter) times() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, t := range s.calls {
		out = append(out, t.UTC().Format("15:04"))
	}
	return out
}

type notes struct {
	mu    sync.Mutex
	lines []string
}

func (n *notes) add(s string) { n.mu.Lock(); n.lines = append(n.lines, s); n.mu.Unlock() }
func (n *notes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lines...)
}

func newScheduler(t *testing.T, st *starter, n *notes, cfg schedule.Config, store schedule.Store) *schedule.Scheduler {
	t.Helper()
	if cfg.Timezone == "" {
		cfg.Timezone = "UTC"
	}
	if store == nil {
		store = schedule.NewMemStore()
	}
	s, err := schedule.New(schedule.Options{Config: cfg, Store: store, Starter: st, Notify: n.add})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// The synctest bubble's clock starts at 2000-01-01 00:00 UTC.

func TestFiresAtTheScheduledTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, n := &starter{}, &notes{}
		s := newScheduler(t, st, n, schedule.Config{}, nil)
		defer s.Stop(context.Background())
		e, err := s.Add(t.Context(), "*/5 * * * *", "mode=approval trials=8", "", bob)
		if err != nil {
			t.Fatal(err)
		}
		if e.IfBusy != schedule.Skip || e.Next.UTC().Format("15:04") != "00:05" {
			t.Errorf("added entry = %+v, want if_busy skip and next 00:05", e)
		}
		time.Sleep(17 * time.Minute)
		synctest.Wait()
		if diff := cmp.Diff([]string{"00:05", "00:10", "00:15"}, st.times()); diff != "" {
			t.Errorf("fired at (-want +got):\n%s", diff)
		}
		if st.args[0] != "mode=approval trials=8" {
			t.Errorf("starter got args %q", st.args[0])
		}
		list, err := s.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].LastResult != "started session s3" || list[0].LastRun.Format("15:04") != "00:15" ||
			list[0].Next.UTC().Format("15:04") != "00:20" {
			t.Errorf("List = %+v", list)
		}
		if got := n.all(); len(got) != 3 || !strings.Contains(got[2], "scheduled start "+e.ID+" (*/5 * * * *): started session s3") {
			t.Errorf("notes = %q", got)
		}

		// Remove stops it.
		if err := s.Remove(t.Context(), e.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := len(st.times()); got != 3 {
			t.Errorf("a removed schedule fired: %d calls", got)
		}
		if err := s.Remove(t.Context(), e.ID); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("removing twice: %v", err)
		}
	})
}

func TestBusySkipOrWait(t *testing.T) {
	tests := []struct {
		name    string
		ifBusy  string
		cfg     schedule.Config
		busy    func(call int) bool
		why     error
		calls   []string
		result  string
		notes   []string
		advance time.Duration
	}{
		{name: "skip", ifBusy: "skip", busy: func(int) bool { return true }, advance: 2 * time.Minute,
			calls: []string{"01:00"}, result: "skipped: busy",
			notes: []string{"skipped: another session is using the GPU"}},
		{name: "wait then start", ifBusy: "wait", busy: func(c int) bool { return c <= 3 }, advance: 10 * time.Minute,
			calls: []string{"01:00", "01:01", "01:02", "01:03"}, result: "started session s4",
			notes: []string{"is waiting: another session is using the GPU; trying every 1m for up to 1h", "started session s4"}},
		{name: "wait gives up", ifBusy: "wait", cfg: schedule.Config{WaitRetry: 10 * time.Minute, WaitMax: 30 * time.Minute},
			busy: func(int) bool { return true }, advance: 50 * time.Minute,
			calls: []string{"01:00", "01:10", "01:20", "01:30"}, result: "skipped: still busy after 30m",
			notes: []string{"trying every 10m for up to 30m", "skipped: the GPU was still busy after 30m"}},
		{name: "an apply holds the checkout", ifBusy: "wait", busy: func(c int) bool { return c == 1 }, advance: 5 * time.Minute,
			why:   session.Userf(session.ErrCheckoutBusy, "a preset is being applied"),
			calls: []string{"01:00", "01:01"}, result: "started session s2",
			notes: []string{"is waiting: a preset is being applied to the trainer checkout; trying every 1m", "started session s2"}},
		{name: "default policy from config", cfg: schedule.Config{IfBusy: "wait"}, busy: func(c int) bool { return c == 1 }, advance: 5 * time.Minute,
			calls: []string{"01:00", "01:01"}, result: "started session s2",
			notes: []string{"is waiting", "started session s2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, n := &starter{busy: tc.busy, why: tc.why}, &notes{}
				s := newScheduler(t, st, n, tc.cfg, nil)
				defer s.Stop(context.Background())
				e, err := s.Add(t.Context(), "0 1 * * *", "", tc.ifBusy, bob)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Hour + tc.advance)
				synctest.Wait()
				if diff := cmp.Diff(tc.calls, st.times()); diff != "" {
					t.Errorf("start attempts (-want +got):\n%s", diff)
				}
				list, _ := s.List(t.Context())
				if len(list) != 1 || list[0].LastResult != tc.result || list[0].LastRun.Format("15:04") != "01:00" {
					t.Errorf("entry = %+v, want last result %q at 01:00", list, tc.result)
				}
				got := n.all()
				if len(got) != len(tc.notes) {
					t.Fatalf("notes = %q, want %d", got, len(tc.notes))
				}
				for i, w := range tc.notes {
					if !strings.Contains(got[i], w) || !strings.Contains(got[i], e.ID) {
						t.Errorf("note %d = %q, want it to name %s and say %q", i, got[i], e.ID, w)
					}
				}
			})
		})
	}
}

func TestRemoveEndsAWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, n := &starter{busy: func(int) bool { return true }}, &notes{}
		s := newScheduler(t, st, n, schedule.Config{}, nil)
		defer s.Stop(context.Background())
		e, err := s.Add(t.Context(), "@hourly", "", "wait", bob)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour + 150*time.Second) // fired at 01:00, retried 01:01 and 01:02
		synctest.Wait()
		if err := s.Remove(t.Context(), e.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		if diff := cmp.Diff([]string{"01:00", "01:01", "01:02"}, st.times()); diff != "" {
			t.Errorf("attempts (-want +got):\n%s", diff)
		}
	})
}

func TestStartFailureIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, n := &starter{err: session.Userf(nil, "trials=99 is outside 4–20")}, &notes{}
		s := newScheduler(t, st, n, schedule.Config{}, nil)
		defer s.Stop(context.Background())
		if _, err := s.Add(t.Context(), "@daily", "trials=99", "", bob); err != nil {
			t.Fatal(err)
		}
		time.Sleep(25 * time.Hour)
		synctest.Wait()
		list, _ := s.List(t.Context())
		if got := n.all(); len(got) != 1 || !strings.Contains(got[0], "failed: trials=99 is outside 4–20") || list[0].LastResult != "failed: trials=99 is outside 4–20" {
			t.Errorf("notes %q, entry %+v", got, list)
		}
	})
}

func TestAddRefusals(t *testing.T) {
	tests := []struct {
		spec, args, ifBusy, want string
	}{
		{"", "", "", "empty schedule"},
		{"* * * *", "", "", `has 4 fields; it needs 5: minute hour day-of-month month day-of-week`},
		{"0 25 * * *", "", "", `the hour field "25" is invalid`},
		{"61 * * * *", "", "", `the minute field "61" is invalid`},
		{"0 0 * * mon-xx", "", "", "the day of week field"},
		{"0 0 32 * *", "", "", "the day of month field"},
		{"@fortnightly", "", "", "descriptors: @yearly"},
		{"TZ=Asia/Tokyo 0 2 * * *", "", "", "may not set its own time zone"},
		{"0 2 * * *", "", "sometimes", `if_busy "sometimes" must be "skip" or "wait"`},
		{"0 2 * * *", strings.Repeat("x", schedule.MaxArgs+1), "", "at most 1000"},
		{"0 2 * * *", "trials=99", "", "trials=99 is outside"},
	}
	for _, tc := range tests {
		t.Run(tc.spec+tc.ifBusy, func(t *testing.T) {
			store := schedule.NewMemStore()
			s, err := schedule.New(schedule.Options{Store: store, Starter: &starter{}, CheckArgs: func(a string) error {
				if strings.Contains(a, "trials=99") {
					return session.Userf(nil, "trials=99 is outside 4–20")
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Add(t.Context(), tc.spec, tc.args, tc.ifBusy, bob)
			var ue *session.UserError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Add = %v, want a user error saying %q", err, tc.want)
			}
			if got, _ := store.Schedules(t.Context()); len(got) != 0 {
				t.Errorf("a refused entry was stored")
			}
		})
	}
	s, err := schedule.New(schedule.Options{Store: schedule.NewMemStore(), Starter: &starter{}, Config: schedule.Config{MaxEntries: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := s.Add(t.Context(), "@daily", "", "", bob); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Add(t.Context(), "@daily", "", "", bob); !errors.Is(err, session.ErrConflict) {
		t.Errorf("third entry over max_entries=2: %v", err)
	}
}

func TestConfigCheck(t *testing.T) {
	bad := schedule.Config{IfBusy: "maybe", Timezone: "Mars/Olympus", Digest: "0 9 * *", WaitMax: -time.Minute}
	err := bad.Check()
	for _, w := range []string{"if_busy", "timezone \"Mars/Olympus\"", "digest:", "may not be negative"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Check = %v, want it to say %q", err, w)
		}
	}
	if err := (schedule.Config{IfBusy: "wait", Timezone: "Europe/Berlin", Digest: "0 9 * * *"}).Check(); err != nil {
		t.Errorf("a good config: %v", err)
	}
}

func TestFormatList(t *testing.T) {
	s, err := schedule.New(schedule.Options{Store: schedule.NewMemStore(), Starter: &starter{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(t.Context())
	a, err := s.Add(t.Context(), "0 2 * * *", "trials=8", "wait", bob)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if text := bot.FormatList(list); !strings.Contains(text, a.ID+`  "0 2 * * *"  start trials=8  if busy: wait  next `) || !strings.Contains(text, "by bob") {
		t.Errorf("FormatList:\n%s", text)
	}
}

package trainer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tunebot/session"
)

// procStat is what the runner needs of /proc/PID/stat.
type procStat struct {
	pid       int
	state     byte // R, S, D, Z, ...
	pgrp      int
	startTick uint64 // clock ticks after boot
}

// readStat parses /proc/PID/stat. The command name (field 2) is in parentheses and may
// itself hold spaces and parentheses, so fields are counted after the last ')'.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(pid, b)
}

func parseStat(pid int, b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parsing /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field k is f[k-3].
	if len(f) < 22-3+1 || len(f[0]) == 0 {
		return procStat{}, fmt.Errorf("parsing /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	pgrp, err1 := strconv.Atoi(f[5-3])
	start, err2 := strconv.ParseUint(f[22-3], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, fmt.Errorf("parsing /proc/%d/stat: bad pgrp or starttime", pid)
	}
	return procStat{pid: pid, state: f[0][0], pgrp: pgrp, startTick: start}, nil
}

// groupMembers lists the live processes of group pgid. Zombies are left out: they hold no
// memory or GPU, and in a container whose init does not reap, they would never go away.
func groupMembers(pgid int) []procStat {
	// kill(-pgid, 0) is a cheap first answer: ESRCH means nothing at all is in the group,
	// which is the common case after a job ends, and saves scanning /proc.
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procStat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.pgrp != pgid || st.state == 'Z' || st.state == 'X' {
			continue
		}
		out = append(out, st)
	}
	return out
}

// orphanMembers lists the live members of p's group that can be p's descendants: started
// no earlier than p, in this boot (start ticks count from boot, so a group recorded before
// a reboot is gone whatever the ticks say).
func orphanMembers(p session.Proc) []procStat {
	if boot, err := bootTime(); err == nil && !p.Started.IsZero() && p.Started.Before(boot) {
		return nil
	}
	var out []procStat
	for _, m := range groupMembers(p.PGID) {
		if m.startTick >= p.StartTick {
			out = append(out, m)
		}
	}
	return out
}

// bootTime reads the kernel's boot time (btime in /proc/stat).
func bootTime() (time.Time, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("parsing btime in /proc/stat: %w", err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, errors.New("no btime in /proc/stat")
}

// signalGroup sends sig to every process of group pgid. pgid ≤ 1 is refused: kill(-1)
// would signal every process tunebot may signal, and kill(0) tunebot's own group.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling process group %d: %w", pgid, err)
	}
	return nil
}

const groupPoll = 20 * time.Millisecond

// waitGroupGone polls until group pgid has no live member. It returns false when ctx ends
// first.
func waitGroupGone(ctx context.Context, pgid int) bool {
	t := time.NewTicker(groupPoll)
	defer t.Stop()
	for len(groupMembers(pgid)) > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// endGroup ends a group that is not tunebot's child (an orphan of a crashed tunebot):
// SIGINT, SIGKILL after grace, then wait until no member is left.
func endGroup(ctx context.Context, pgid int, grace time.Duration) error {
	if err := signalGroup(pgid, syscall.SIGINT); err != nil {
		return err
	}
	gctx, cancel := context.WithTimeout(ctx, grace)
	gone := waitGroupGone(gctx, pgid)
	cancel()
	if gone {
		return nil
	}
	if err := signalGroup(pgid, syscall.SIGKILL); err != nil {
		return err
	}
	if !waitGroupGone(ctx, pgid) {
		return fmt.Errorf("waiting for process group %d to end: %w", pgid, ctx.Err())
	}
	return nil
}

// isNotExist reports whether err says a /proc entry is gone.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

package main

import (
	"fmt"
	"path/filepath"

	"tunebot/config"
	"tunebot/disk"
	"tunebot/session"
)

// doctorDisk says how much the filesystems of data_dir and the run directories have free,
// and the floor below which a session pauses rather than start a job (docs/design.md §1).
func doctorDisk(r *doctorReport, cfg config.Config) {
	floor, how := diskFloor(cfg)
	usages := diskUsages(cfg)
	if len(usages) == 0 {
		r.line("warn", "free space", "the free space of "+cfg.DataDir+" cannot be measured")
	}
	for _, u := range usages {
		text := fmt.Sprintf("%s free of %s on %s; the floor is %s (%s)", session.Bytes(u.Free), session.Bytes(u.Total), u.Path, session.Bytes(floor), how)
		if u.Free < floor {
			r.line("warn", "free space", text+": a session pauses before its next job until space is freed, service.min_free is lowered or data_dir is moved to a larger disk (`tunebot prune --dry-run` says what pruning would free)")
			continue
		}
		r.line("ok", "free space", text)
	}
}

// diskFloor is the free-space floor (session.Floor) and how it is set. doctor runs without a
// session, so the default counts the largest run directory of any session under
// data_dir/sessions, where a session counts only its own: a floor no session's is above.
func diskFloor(cfg config.Config) (int64, string) {
	configured := int64(cfg.Service.MinFree)
	if configured > 0 {
		return session.Floor(0, configured), "service.min_free"
	}
	var largest int64
	runDirs, _ := filepath.Glob(filepath.Join(sessionsDir(cfg), "*", "trial-*"))
	for _, d := range runDirs {
		largest = max(largest, session.DirSize(d))
	}
	return session.Floor(largest, 0), fmt.Sprintf("default: twice the largest run directory of any session, %s, and at least %s", session.Bytes(largest), session.Bytes(session.MinFreeFloor))
}

// diskUsages measures data_dir and, when it is another filesystem's, its sessions
// directory (for doctor and /metrics).
func diskUsages(cfg config.Config) []session.DiskUsage {
	return disk.Usages(cfg.DataDir, sessionsDir(cfg))
}

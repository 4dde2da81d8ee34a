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
			r.line("warn", "free space", text+": a session pauses before its next job until space is freed (`tunebot prune --dry-run` says what pruning would free)")
			continue
		}
		r.line("ok", "free space", text)
	}
}

// diskFloor is the free-space floor as a session would find it now, and how it is set: the
// default counts the largest run directory under data_dir/sessions.
func diskFloor(cfg config.Config) (int64, string) {
	if cfg.Service.MinFree > 0 {
		return int64(cfg.Service.MinFree), "service.min_free"
	}
	var largest int64
	sessions, _ := filepath.Glob(filepath.Join(cfg.DataDir, "sessions", "*", "trial-*"))
	for _, d := range sessions {
		largest = max(largest, session.DirSize(d))
	}
	return max(2*largest, session.MinFreeFloor), fmt.Sprintf("default: twice the largest run directory, %s, and at least %s", session.Bytes(largest), session.Bytes(session.MinFreeFloor))
}

// diskUsages measures data_dir and, when it is another filesystem's, its sessions
// directory (for doctor and /metrics).
func diskUsages(cfg config.Config) []session.DiskUsage {
	return disk.Usages(cfg.DataDir, sessionsDir(cfg))
}

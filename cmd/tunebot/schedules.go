package main

import (
	"context"

	"tunebot/bot"
	"tunebot/schedule"
	"tunebot/store"
)

// scheduleStore keeps the scheduler's entries in the bbolt store, which has its own record
// type so that it needs no cron (docs/design.md §7).
type scheduleStore struct{ db *store.DB }

var _ schedule.Store = scheduleStore{}

func (s scheduleStore) PutSchedule(ctx context.Context, e bot.ScheduleEntry) error {
	return s.db.PutSchedule(ctx, store.Schedule{
		ID: e.ID, Spec: e.Spec, Args: e.Args, IfBusy: e.IfBusy,
		CreatedBy: e.CreatedBy, CreatedAt: e.CreatedAt,
		LastRun: e.LastRun, LastResult: e.LastResult,
	})
}

func (s scheduleStore) Schedules(ctx context.Context) ([]bot.ScheduleEntry, error) {
	recs, err := s.db.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]bot.ScheduleEntry, 0, len(recs))
	for _, r := range recs {
		out = append(out, bot.ScheduleEntry{
			ID: r.ID, Spec: r.Spec, Args: r.Args, IfBusy: r.IfBusy,
			CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt,
			LastRun: r.LastRun, LastResult: r.LastResult,
		})
	}
	return out, nil
}

func (s scheduleStore) DeleteSchedule(ctx context.Context, id string) error {
	return s.db.DeleteSchedule(ctx, id)
}

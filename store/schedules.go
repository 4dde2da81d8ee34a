package store

import (
	"context"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"tunebot/schedule"
	"tunebot/session"
)

var _ schedule.Store = (*DB)(nil)

// PutSchedule creates or replaces the scheduled start e (schedule.Store): schedules live
// in the data file with everything else (docs/design.md §7), so one backup holds them.
func (d *DB) PutSchedule(ctx context.Context, e schedule.Entry) error {
	if e.ID == "" {
		return fmt.Errorf("saving schedule: empty id")
	}
	return d.update(ctx, func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketSchedules), []byte(e.ID), e)
	})
}

// Schedules lists every scheduled start, oldest first (schedule.Store).
func (d *DB) Schedules(ctx context.Context) ([]schedule.Entry, error) {
	var out []schedule.Entry
	err := d.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSchedules).ForEach(func(k, v []byte) error {
			var e schedule.Entry
			if err := jsonUnmarshal(v, &e, "schedule", k); err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// DeleteSchedule removes a scheduled start; a missing one is session.ErrNotFound
// (schedule.Store).
func (d *DB) DeleteSchedule(ctx context.Context, id string) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSchedules)
		if b.Get([]byte(id)) == nil {
			return fmt.Errorf("schedule %s: %w", id, session.ErrNotFound)
		}
		return b.Delete([]byte(id))
	})
}

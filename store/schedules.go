package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"tunebot/session"
)

// Schedule is the stored record of one scheduled start. The store owns it so that it needs
// no scheduler (and no cron) to keep one; the scheduler maps its entries to and from it in
// the wiring (cmd/tunebot). Its JSON is the record on disk: field names never change.
type Schedule struct {
	ID         string        `json:"id"`
	Spec       string        `json:"spec"`
	Args       string        `json:"args"`
	IfBusy     string        `json:"if_busy"`
	CreatedBy  session.Actor `json:"created_by"`
	CreatedAt  time.Time     `json:"created_at"`
	LastRun    time.Time     `json:"last_run,omitzero"`
	LastResult string        `json:"last_result,omitempty"`
}

// PutSchedule creates or replaces the scheduled start s: schedules live in the data file
// with everything else (docs/design.md §7), so one backup holds them.
func (d *DB) PutSchedule(ctx context.Context, s Schedule) error {
	if s.ID == "" {
		return fmt.Errorf("saving schedule: empty id")
	}
	return d.update(ctx, func(tx *bolt.Tx) error {
		return d.putJSON(tx.Bucket(bucketSchedules), []byte(s.ID), s)
	})
}

// Schedules lists every scheduled start, oldest first.
func (d *DB) Schedules(ctx context.Context) ([]Schedule, error) {
	var out []Schedule
	err := d.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSchedules).ForEach(func(k, v []byte) error {
			var s Schedule
			if err := jsonUnmarshal(v, &s, "schedule", k); err != nil {
				return err
			}
			out = append(out, s)
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

// DeleteSchedule removes a scheduled start; a missing one is session.ErrNotFound.
func (d *DB) DeleteSchedule(ctx context.Context, id string) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSchedules)
		if b.Get([]byte(id)) == nil {
			return fmt.Errorf("schedule %s: %w", id, session.ErrNotFound)
		}
		return b.Delete([]byte(id))
	})
}

package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"tunebot/bot"
	"tunebot/session"
)

// parser reads the standard five fields and descriptors (@daily, @hourly, @every 2h).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

var fieldNames = []string{"minute", "hour", "day of month", "month", "day of week"}

// Parse checks a cron spec. A refusal is a *session.UserError that names the bad field.
func Parse(spec string) (cron.Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, session.Userf(nil, `empty schedule: give five fields "minute hour day-of-month month day-of-week" (e.g. "0 2 * * *") or a descriptor like @daily`)
	}
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, session.Userf(nil, "a schedule may not set its own time zone; the daemon's schedule.timezone applies")
	}
	sched, err := parser.Parse(spec)
	if err == nil {
		return sched, nil
	}
	if strings.HasPrefix(spec, "@") {
		return nil, session.Userf(nil, "schedule %q: %v (descriptors: @yearly, @monthly, @weekly, @daily, @hourly, @every DURATION)", spec, err)
	}
	fields := strings.Fields(spec)
	if len(fields) != len(fieldNames) {
		return nil, session.Userf(nil, `schedule %q has %d fields; it needs 5: minute hour day-of-month month day-of-week (e.g. "0 2 * * *")`, spec, len(fields))
	}
	// Parse each field alone to say which one is wrong.
	for i, f := range fields {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = f
		if _, ferr := parser.Parse(strings.Join(probe, " ")); ferr != nil {
			return nil, session.Userf(nil, "schedule %q: the %s field %q is invalid: %v", spec, fieldNames[i], f, ferr)
		}
	}
	return nil, session.Userf(nil, "schedule %q: %v", spec, err)
}

// IfBusy policies: what a scheduled start does when a session already holds the GPU.
const (
	Skip = bot.ScheduleSkip
	Wait = bot.ScheduleWait
)

func checkIfBusy(v string) error {
	if v != Skip && v != Wait {
		return session.Userf(nil, "if_busy %q must be %q or %q", v, Skip, Wait)
	}
	return nil
}

// fmtWait says a duration the way a person would: 1h, 90m, 45s.
func fmtWait(d time.Duration) string {
	switch {
	case d > 0 && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d > 0 && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

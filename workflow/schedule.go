package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/adhocore/gronx"

	"github.com/buzzrelay/buzz/tenant"
)

// Schedule limits.
const (
	// MinScheduleInterval is the smallest interval a definition may use
	// (Buzz's rule); WithMinScheduleInterval lowers it for tests only.
	MinScheduleInterval = 60 * time.Second
	// MaxScheduleInterval bounds an interval (one year).
	MaxScheduleInterval = 366 * 24 * time.Hour
)

// Schedule is when a schedule trigger fires: at the instants (slots) of
// a cron expression in a time zone, or every Interval. Exactly one of Cron
// and Interval is set.
//
// Cron has 5 fields (minute hour day-of-month month day-of-week), 6
// (seconds first; but a 4-digit 6th field is a year) or 7 (seconds first,
// year last), as parsed by github.com/adhocore/gronx. Its slots are
// computed in TimeZone (an IANA name; "" = UTC).
//
// Interval slots are the multiples of Interval since the Unix epoch, so
// every pod computes the same slots without agreeing on an anchor.
type Schedule struct {
	Cron     string
	TimeZone string
	Interval time.Duration
	loc      *time.Location
}

// Latest returns the latest slot at or before t; ok is false when there
// is none (a cron expression whose slots all lie in the future).
func (s *Schedule) Latest(t time.Time) (slot time.Time, ok bool) {
	if s.Interval > 0 {
		iv := int64(s.Interval / time.Second)
		u := t.Unix()
		b := u - ((u%iv)+iv)%iv
		return time.Unix(b, 0).UTC(), true
	}
	p, err := gronx.PrevTickBefore(s.Cron, t.In(s.location()), true)
	if err != nil || p.After(t) {
		return time.Time{}, false
	}
	return p.UTC(), true
}

// Next returns the first slot after t; ok is false when there is none
// (e.g. a cron expression naming only past years).
func (s *Schedule) Next(t time.Time) (slot time.Time, ok bool) {
	if s.Interval > 0 {
		l, _ := s.Latest(t)
		return l.Add(s.Interval), true
	}
	n, err := gronx.NextTickAfter(s.Cron, t.In(s.location()), false)
	if err != nil || !n.After(t) {
		return time.Time{}, false
	}
	return n.UTC(), true
}

func (s *Schedule) location() *time.Location {
	if s.loc == nil {
		return time.UTC
	}
	return s.loc
}

// parseSchedule reads a schedule trigger's own fields (everything but
// "on"). It applies no interval floor; Parse and Engine.Parse do.
func parseSchedule(f Fields) (Schedule, error) {
	if err := f.Only("on", "cron", "interval", "timezone"); err != nil {
		return Schedule{}, err
	}
	var s Schedule
	var err error
	if s.Cron, err = f.String("cron", false); err != nil {
		return s, err
	}
	_, hasInterval := f["interval"]
	switch {
	case s.Cron != "" && hasInterval:
		return s, fieldErr("", "a schedule has exactly one of cron and interval, not both")
	case s.Cron == "" && !hasInterval:
		return s, fieldErr("", "a schedule needs cron or interval")
	}
	if s.TimeZone, err = f.String("timezone", false); err != nil {
		return s, err
	}
	if hasInterval {
		if s.TimeZone != "" {
			return s, fieldErr("timezone", "applies to cron schedules only")
		}
		if s.Interval, err = parseInterval(f["interval"]); err != nil {
			return s, fieldErr("interval", "%v", err)
		}
		return s, nil
	}
	if s.TimeZone != "" {
		if s.loc, err = time.LoadLocation(s.TimeZone); err != nil || s.TimeZone == "Local" {
			return s, fieldErr("timezone", "unknown time zone %q (want an IANA name such as Europe/Berlin)", s.TimeZone)
		}
	}
	s.Cron = strings.Join(strings.Fields(s.Cron), " ")
	if n := len(strings.Fields(s.Cron)); n < 5 || n > 7 || strings.HasPrefix(s.Cron, "@") || !gronx.IsValid(s.Cron) {
		return s, fieldErr("cron", "not a valid 5-, 6- or 7-field cron expression")
	}
	if _, ok := s.Next(time.Now()); !ok {
		return s, fieldErr("cron", "the expression never fires again")
	}
	return s, nil
}

// parseInterval accepts a Go duration ("90s", "5m", "1h30m") or a number
// of seconds, in whole seconds.
func parseInterval(v any) (time.Duration, error) {
	var d time.Duration
	switch t := v.(type) {
	case string:
		var err error
		if d, err = time.ParseDuration(t); err != nil {
			return 0, errors.New(`must be a duration such as "5m" or a number of seconds`)
		}
	case float64:
		if t != float64(int64(t)) || t > MaxScheduleInterval.Seconds() {
			return 0, errors.New("must be a whole number of seconds")
		}
		d = time.Duration(t) * time.Second
	default:
		return 0, errors.New(`must be a duration such as "5m" or a number of seconds`)
	}
	if d%time.Second != 0 || d <= 0 || d > MaxScheduleInterval {
		return 0, fmt.Errorf("must be whole seconds between 1s and %s", MaxScheduleInterval)
	}
	return d, nil
}

// checkInterval refuses an interval schedule below floor.
func (d *Definition) checkInterval(floor time.Duration) error {
	if d.Trigger.On == TriggerSchedule && d.Trigger.Schedule.Interval > 0 && d.Trigger.Schedule.Interval < floor {
		return fieldErr("trigger.interval", "must be at least %s", floor)
	}
	return nil
}

// ScheduleEventID is the trigger event id of the run a schedule fires for
// slot: a SHA-256 of the workflow and the slot, so a slot can create at
// most one run of a workflow.
func ScheduleEventID(wf ID, slot time.Time) string {
	h := sha256.New()
	h.Write([]byte("buzz-schedule\x00"))
	h.Write(wf[:])
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(slot.UnixMilli()))
	h.Write(b[:])
	return hex.EncodeToString(h.Sum(nil))
}

// DueSchedule is a schedule whose next fire time has come.
type DueSchedule struct {
	Community tenant.CommunityID
	Workflow  ID
	// NextFire is the stored next fire time (the Unix epoch right after
	// the workflow was defined); FireSchedule compares against it.
	NextFire time.Time
	// Since is when the schedule was (re)defined: slots before it never
	// fire.
	Since time.Time
}

// ScheduleFire is what the scheduler writes for one due schedule.
type ScheduleFire struct {
	Workflow ID
	// Seen is the DueSchedule.NextFire the decision was made on; if the
	// stored value differs (another pod advanced it), nothing is written.
	Seen time.Time
	// Next is the next fire time to store; zero removes the schedule (the
	// workflow is gone or no longer schedule-triggered).
	Next time.Time
	// Slot, when non-zero, is the instant to fire: it is claimed in
	// scheduled_workflow_fires and a pending run is created with Trigger
	// (trigger event ScheduleEventID) in the same transaction; fire rows
	// of the workflow older than Slot are pruned.
	Slot    time.Time
	Trigger map[string]any
}

// ScheduleStore keeps the next fire time of every schedule-triggered
// workflow (the stores maintain a row per such workflow whenever one is
// put, due at once) and claims fires. Implementations: store/postgres,
// store/embedded; workflowtest.Run pins the semantics.
type ScheduleStore interface {
	// DueSchedules returns up to max schedules of any community whose
	// next fire time is at or before now, earliest first. Its cost
	// depends on the number of due schedules, not on all of them.
	DueSchedules(ctx context.Context, now time.Time, max int) ([]DueSchedule, error)
	// FireSchedule atomically advances one schedule from f.Seen to
	// f.Next and, when f.Slot is set, claims the slot and creates its
	// run. advanced is false (and nothing is written) when the stored
	// next fire time is no longer f.Seen; fired is true only when this
	// call claimed the slot, and run is then the created run.
	// A slot whose run exists (its claim pruned or not) never fires
	// again.
	FireSchedule(ctx context.Context, c tenant.CommunityID, f ScheduleFire) (run Run, advanced, fired bool, err error)
	// ScheduledFires lists the fire claims kept for a workflow, oldest
	// first (after pruning, the latest only).
	ScheduledFires(ctx context.Context, c tenant.CommunityID, wf ID) ([]ScheduledFire, error)
}

// ScheduledFire is one claimed slot of a schedule and the run it created.
type ScheduledFire struct {
	Slot time.Time
	Run  ID
}

// scheduleBatch is how many due schedules one tick handles per query, and
// scheduleWorkers how many of them it fires at once (many schedules share
// popular instants such as the top of the hour).
const (
	scheduleBatch   = 256
	scheduleWorkers = 8
)

// scheduleLoop ticks the scheduler until ctx ends.
func (e *Engine) scheduleLoop(ctx context.Context) error {
	t := time.NewTicker(e.cfg.schedTick)
	defer t.Stop()
	for {
		if _, err := e.ScheduleTick(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ScheduleTick fires every due schedule once: the latest slot at or before
// now (never older missed slots), if the workflow is enabled, its owner
// may run it now (OwnerRights) and the slot is not before the schedule
// was defined. It returns how many runs it
// created. Every pod may tick at once; a slot fires once.
func (e *Engine) ScheduleTick(ctx context.Context) (int, error) {
	now := e.now()
	fired := 0
	for {
		due, err := e.store.DueSchedules(ctx, now, scheduleBatch)
		if err != nil {
			return fired, err
		}
		var (
			mu       sync.Mutex
			wg       sync.WaitGroup
			progress bool
			panicked any
			sem      = make(chan struct{}, scheduleWorkers)
		)
		for _, d := range due {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() {
					if p := recover(); p != nil {
						mu.Lock()
						panicked = p
						mu.Unlock()
					}
					<-sem
					wg.Done()
				}()
				adv, ok, err := e.fireSchedule(ctx, now, d)
				if err != nil {
					if ctx.Err() == nil {
						e.log.Error("workflow: schedule", "community", d.Community.String(), "workflow", d.Workflow.String(), "err", err)
					}
					return
				}
				mu.Lock()
				defer mu.Unlock()
				progress = progress || adv
				if ok {
					fired++
				}
			}()
		}
		wg.Wait()
		if panicked != nil {
			panic(panicked) // on the loop's goroutine: the supervisor restarts it
		}
		if err := ctx.Err(); err != nil {
			return fired, err
		}
		if len(due) < scheduleBatch || !progress {
			break
		}
	}
	if fired > 0 {
		e.poke()
	}
	return fired, nil
}

func (e *Engine) fireSchedule(ctx context.Context, now time.Time, d DueSchedule) (advanced, fired bool, err error) {
	f := ScheduleFire{Workflow: d.Workflow, Seen: d.NextFire}
	wf, err := e.store.Workflow(ctx, d.Community, d.Workflow)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return false, false, err
	case wf.Definition.Trigger.On == TriggerSchedule:
		s := &wf.Definition.Trigger.Schedule
		next, ok := s.Next(now)
		if !ok {
			break // never again: drop the schedule
		}
		f.Next = next
		if slot, ok := s.Latest(now); ok && wf.Enabled && !slot.Before(d.Since) && !slot.Before(d.NextFire) {
			// A slot whose owner may not run the workflow now (OwnerRights)
			// passes without a run, like a disabled workflow's; the run
			// itself checks again before it acts.
			if err := e.ownerMay(ctx, d.Community, wf.Channel, wf.Owner, RightRun); err != nil {
				var se *StepError
				if !errors.As(err, &se) {
					return false, false, err
				}
				e.log.Warn("workflow: scheduled fire skipped: its owner may not run it", "community", d.Community.String(),
					"workflow", wf.ID.String(), "slot", slot, "reason", se.Msg)
				break
			}
			f.Slot = slot
			f.Trigger = map[string]any{
				"scheduled_for": slot.UTC().Format(time.RFC3339),
				"workflow_id":   wf.ID.String(),
				"channel_id":    wf.Channel.String(),
			}
		}
	}
	_, advanced, fired, err = e.store.FireSchedule(ctx, d.Community, f)
	return advanced, fired, err
}

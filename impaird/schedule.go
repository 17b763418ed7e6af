package impaird

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/schema"
)

// Schedules (IMPAIRMENT_SCHEDULE, docs/impaird.md "Schedules"). Each
// schedule has one runner goroutine: it sleeps on its own timerfd until
// the next boundary, computed from the schedule's start on the monotonic
// clock (never by adding sleeps, so steps do not drift), then makes the
// new step current and reconciles every port with a key that follows the
// schedule. A key's fields are its base profile; parseImp/parseFlow lay
// the current step's fields over them (schema.ApplyStep), so the step
// goes through the same parse, compile and Apply (XDP maps) and syncEDT
// (delay/jitter/shape classes) as any edit. A step that does not parse
// over a key's base keeps that key on its previous fields (lastgood.go).

// schedPortRule is the rule a port profile that follows a schedule is
// compiled into: a catch-all rule ranked below every IMPAIRMENT_FLOW rule
// (priority -1; user priorities are 0-65535), which matches exactly the
// packets the port profile would (IP packets no rule matches; non-IP
// frames pass either way). A rule's profile lives in the match hash maps,
// so a step is two hash updates (IPv4, IPv6 entry) that return at once,
// where the port profile's array-of-maps swap waits for an RCU grace
// period (8-25 ms here) before the next step can be written. No user rule
// can be so named ('~' is not allowed); its counters are in the port's
// total only.
const schedPortRule = "~schedule"

func schedPortRuleSpec(s bpf.Spec) bpf.RuleSpec {
	return bpf.RuleSpec{Name: schedPortRule, Priority: -1, Spec: s}
}

// stepLead is how long before a boundary the runner wakes to prepare the
// step (refresh, parse, compile: a few hundred µs, more under load); the
// kernel is written at the due time (waitStep).
const stepLead = 3 * time.Millisecond

// schedItemPrefix makes the work item of an IMPAIRMENT_SCHEDULE key; no
// port name contains "\x01".
const schedItemPrefix = "\x01schedule|"

// STATE_DB fields of schedules: on IMPAIRMENT_TABLE / IMPAIRMENT_FLOW_TABLE
// keys that follow a schedule, and on IMPAIRMENT_SCHEDULE_TABLE|name.
const (
	FieldScheduleStep      = "schedule_step"       // index of the step applied (from 0); "end" past a schedule's end
	FieldScheduleStepSince = "schedule_step_since" // when that step began (RFC 3339, wall clock)
	FieldStep              = "step"
	FieldStepSince         = "step_since"
	FieldSwitches          = "switches" // step switches applied since the schedule (re)started
	FieldSkipped           = "skipped"  // boundaries passed without their step applied (a stall longer than a step)
	FieldStarted           = "started"  // when step 0 of cycle 0 began (RFC 3339, wall clock)
)

// scheduleResultFields are the STATE_DB fields impaird owns for schedules.
var scheduleResultFields = []string{FieldScheduleStep, FieldScheduleStepSince, FieldStep, FieldStepSince,
	FieldSwitches, FieldSkipped, FieldStarted}

// stepOver is the step index past the end of a schedule without loop.
const stepOver = -1

// schedule is one running schedule (its last good version).
type schedule struct {
	name      string
	gen       string // generation of the hash that runs
	s         schema.ImpairmentSchedule
	parseErr  error         // the current hash's error, while the last good one runs
	start     time.Duration // monotonic time of step 0 of cycle 0
	startWall time.Time
	step      int           // current step (stepOver: over)
	since     time.Duration // its start, since start
	applied   bool          // the runner applied step at least once
	switches  uint64
	skipped   uint64
	cancel    context.CancelFunc
	done      chan struct{}
}

// stepEvent is one step applied (for tests and the lateness benchmark):
// Due is the boundary's monotonic time, Landed when every port's kernel
// state held the step.
type stepEvent struct {
	Schedule    string
	Step        int
	Due, Landed time.Duration
	Ports       []string
}

// schedState is the daemon's schedules (under d.mu).
type schedState struct {
	clock  clock
	byName map[string]*schedule
	// cfg holds IMPAIRMENT_SCHEDULE hashes without an engine (unit tests).
	cfg map[string]schema.Fields
	// base is the context runners derive theirs from (the engine's).
	base context.Context
	// onStep, when set, sees every step applied (tests).
	onStep func(stepEvent)
	// hold is, per port, the due time of a step being prepared: the
	// port's reconcile parses and compiles the step ahead of time and
	// waits (waitStep) until then before it writes the kernel.
	hold map[string]time.Duration

	switches *prometheus.CounterVec
	lateness prometheus.Histogram
}

func newSchedState() *schedState {
	return &schedState{clock: monoClock{}, byName: map[string]*schedule{}, cfg: map[string]schema.Fields{},
		base: context.Background(), hold: map[string]time.Duration{},
		switches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_impairment_schedule_switches_total",
			Help: "Step switches applied, by IMPAIRMENT_SCHEDULE."}, []string{"schedule"}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchyard_impairment_schedule_lateness_seconds",
			Help:    "How late a schedule's step was in the kernel (all its ports' maps updated) after its due time.",
			Buckets: []float64{25e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 50e-3}}),
	}
}

func (s *schedState) register(reg prometheus.Registerer) {
	if reg != nil {
		reg.MustRegister(s.switches, s.lateness)
	}
}

// scheduleItem is the work item of schedule name.
func scheduleItem(name string) string { return schedItemPrefix + name }

// schedFields returns schedule name's CONFIG_DB hash (d.mu held).
func (d *daemon) schedFields(name string) (schema.Fields, bool) {
	if d.h == nil {
		f, ok := d.sch.cfg[name]
		return f, ok
	}
	e, ok := d.h.Cache.Get(schema.TableImpairmentSchedule, name)
	return e.Fields, ok
}

// stepFields lays the current step of the schedule f names over f; label
// names the step for errors ("" when no step applies).
func (d *daemon) stepFields(f schema.Fields) (schema.Fields, string) {
	name := f[schema.FieldSchedule]
	if name == "" {
		return f, ""
	}
	sc := d.sch.byName[name]
	if sc == nil || sc.step < 0 {
		return f, ""
	}
	label := fmt.Sprintf("%s step %d (at %s)", schema.ConfigKey(schema.TableImpairmentSchedule, name), sc.step,
		sc.s.Steps[sc.step].At)
	return schema.ApplyStep(f, sc.s.Steps[sc.step].Fields), label
}

// scheduleUsers are the ports with a key following schedule name (d.mu held).
func (d *daemon) scheduleUsers(name string) []string {
	seen := map[string]bool{}
	if d.h == nil {
		for port, f := range d.imp {
			if f[schema.FieldSchedule] == name {
				seen[port] = true
			}
		}
		for port, keys := range d.flows {
			for _, f := range keys {
				if f[schema.FieldSchedule] == name {
					seen[port] = true
				}
			}
		}
	} else {
		for _, key := range d.h.Cache.Keys(schema.TableImpairment) {
			if e, ok := d.h.Cache.Get(schema.TableImpairment, key); ok && e.Fields[schema.FieldSchedule] == name {
				seen[key] = true
			}
		}
		for _, key := range d.h.Cache.Keys(schema.TableImpairmentFlow) {
			if e, ok := d.h.Cache.Get(schema.TableImpairmentFlow, key); ok && e.Fields[schema.FieldSchedule] == name {
				seen[flowPort(key)] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		if p != badKeysPort && p != "" {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// reconcileSchedule brings schedule name's runner in line with its hash:
// a new or edited schedule (re)starts at step 0 of cycle 0 (a schedule
// impaird finds after a restart, unchanged, resumes its cycle from the
// started time in STATE_DB); an invalid one keeps its last good version
// running; a deleted one stops, its ports back on their base profile.
func (d *daemon) reconcileSchedule(ctx context.Context, name string) error {
	// A schedule without a runner may be resumed: its STATE_DB result is
	// read before d.mu is taken (a Redis round trip).
	d.mu.Lock()
	f, ok := d.schedFields(name)
	running := d.sch.byName[name] != nil
	d.mu.Unlock()
	var resume time.Time
	var resumeOK bool
	var resumeGen string
	if ok && !running {
		resumeGen = schema.Generation(f)
		resume, resumeOK = d.resumeFrom(ctx, name, resumeGen)
	}
	d.mu.Lock()
	f, ok = d.schedFields(name)
	sc := d.sch.byName[name]
	if !ok {
		var users []string
		if sc != nil {
			sc.cancel()
			delete(d.sch.byName, name)
			users = d.scheduleUsers(name)
		}
		d.mu.Unlock()
		if sc != nil {
			<-sc.done
			d.cfg.Log.WithField("schedule", name).Info("schedule deleted: its ports are back on their base profile")
			d.reconcilePorts(ctx, users)
		}
		return nil
	}
	s, err := schema.ParseImpairmentSchedule(name, f)
	gen := schema.Generation(f)
	if err != nil {
		users := d.scheduleUsers(name)
		if sc != nil {
			sc.parseErr = err
		}
		d.setScheduleResult(name, sc, err)
		d.mu.Unlock()
		if sc == nil {
			d.reconcilePorts(ctx, users) // their pending reason names the error
		}
		return nil
	}
	if sc != nil && sc.gen == gen {
		sc.parseErr = nil
		d.setScheduleResult(name, sc, nil)
		d.mu.Unlock()
		return nil
	}
	old := sc
	now, wall := d.sch.clock.now(), d.sch.clock.wall()
	sc = &schedule{name: name, gen: gen, s: s, start: now, startWall: wall, done: make(chan struct{})}
	if old == nil && resumeOK && !resume.After(wall) && resumeGen == gen {
		sc.start, sc.startWall = now-wall.Sub(resume), resume
	}
	sc.step, sc.since, _ = s.StepAt(now - sc.start)
	rctx, cancel := context.WithCancel(d.sch.base)
	sc.cancel = cancel
	d.sch.byName[name] = sc
	d.mu.Unlock()
	if old != nil {
		old.cancel()
		<-old.done
	}
	tm, err := d.sch.clock.newTimer()
	if err != nil {
		d.mu.Lock()
		delete(d.sch.byName, name)
		d.mu.Unlock()
		cancel()
		close(sc.done)
		return fmt.Errorf("schedule %s: %w", name, err)
	}
	d.cfg.Log.WithFields(map[string]any{"schedule": name, "steps": len(s.Steps), "step": sc.step}).Info("schedule started")
	run := func(context.Context) { d.runSchedule(rctx, sc, tm) }
	if d.h != nil {
		d.h.Go(run)
	} else {
		go run(rctx)
	}
	return nil
}

// resumeFrom reads the started time of schedule name from its STATE_DB
// result when that result is of the same version (impaird restarted).
func (d *daemon) resumeFrom(ctx context.Context, name, gen string) (time.Time, bool) {
	if d.h == nil {
		return time.Time{}, false
	}
	key := schema.ResultKey(schema.TableImpairmentSchedule, name)
	f, err := d.h.Redis.DB(schema.StateDB).HGetAll(ctx, key).Result()
	if err != nil || f[schema.FieldGeneration] != gen || f[schema.FieldState] != string(schema.StateOK) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, f[FieldStarted])
	return t, err == nil
}

// runSchedule is a schedule's runner: wake stepLead before the next
// boundary (absolute, from sc.start: no drift), prepare the step and
// write it at its due time, repeat.
func (d *daemon) runSchedule(ctx context.Context, sc *schedule, tm timer) {
	defer close(sc.done)
	defer tm.close()
	if err := realtimeThread(); err != nil {
		d.cfg.Log.WithError(err).WithField("schedule", sc.name).Debug("schedule runner stays SCHED_OTHER")
	}
	n := len(sc.s.Steps)
	var target time.Duration // the boundary woken for (0: the first run)
	for {
		at := max(d.sch.clock.now(), target)
		step, since, next := sc.s.StepAt(at - sc.start)
		d.mu.Lock()
		changed := !sc.applied || step != sc.step || since != sc.since
		if changed && sc.applied {
			want := sc.step + 1
			if want == n {
				want = stepOver
				if sc.s.Loop {
					want = 0
				}
			}
			if step != want {
				sc.skipped++
			}
			sc.switches++
			d.sch.switches.WithLabelValues(sc.name).Inc()
		}
		sc.step, sc.since, sc.applied = step, since, true
		users := d.scheduleUsers(sc.name)
		due := sc.start + since
		if changed {
			for _, p := range users {
				d.sch.hold[p] = due
			}
		}
		d.mu.Unlock()
		if changed {
			d.reconcilePorts(ctx, users)
			landed := d.sch.clock.now()
			d.mu.Lock()
			for _, p := range users {
				if d.sch.hold[p] == due {
					delete(d.sch.hold, p)
				}
			}
			if d.sch.byName[sc.name] == sc {
				d.setScheduleResult(sc.name, sc, sc.parseErr)
			}
			d.mu.Unlock()
			if sc.switches > 0 {
				d.sch.lateness.Observe((landed - due).Seconds())
			}
			if d.sch.onStep != nil {
				d.sch.onStep(stepEvent{Schedule: sc.name, Step: step, Due: due, Landed: landed, Ports: users})
			}
		}
		if next < 0 {
			<-ctx.Done()
			return
		}
		target = sc.start + next
		if err := tm.sleepUntil(ctx, target-stepLead); err != nil {
			if ctx.Err() == nil {
				d.cfg.Log.WithError(err).WithField("schedule", sc.name).Error("schedule timer failed: the schedule stops")
			}
			return
		}
	}
}

// waitStep waits, before port's reconcile writes the kernel, until the
// due time of the step it prepared (d.mu held: at most stepLead).
func (d *daemon) waitStep(port string) {
	due, ok := d.sch.hold[port]
	if !ok || d.sch.clock.now() >= due {
		return
	}
	tm, err := d.sch.clock.newTimer()
	if err != nil {
		return // the step lands early rather than not at all
	}
	defer tm.close()
	_ = tm.sleepUntil(context.Background(), due)
}

// reconcilePorts reconciles ports now (a step is due: no queueing); a
// port that fails is handed to the engine's queue for retries.
func (d *daemon) reconcilePorts(ctx context.Context, ports []string) {
	for _, port := range ports {
		if _, err := d.reconcile(ctx, port); err != nil {
			d.cfg.Log.WithError(err).WithField("port", port).Warn("applying a schedule step")
			if d.h != nil {
				d.h.Enqueue(port)
			}
		}
	}
}

// setScheduleResult writes IMPAIRMENT_SCHEDULE_TABLE|name (d.mu held).
func (d *daemon) setScheduleResult(name string, sc *schedule, perr error) {
	if d.h == nil {
		return
	}
	e, ok := d.h.Cache.Get(schema.TableImpairmentSchedule, name)
	if !ok {
		return
	}
	r := schema.OK()
	switch {
	case perr != nil && sc != nil:
		r = schema.Error(perr.Error() + keptSuffix)
	case perr != nil:
		r = schema.Error(perr.Error())
	}
	var extra schema.Fields
	if sc != nil {
		extra = schema.Fields{
			FieldStep:      stepName(sc.step),
			FieldStepSince: sc.startWall.Add(sc.since).UTC().Format(time.RFC3339Nano),
			FieldSwitches:  strconv.FormatUint(sc.switches, 10),
			FieldSkipped:   strconv.FormatUint(sc.skipped, 10),
			FieldStarted:   sc.startWall.UTC().Format(time.RFC3339Nano),
		}
	}
	d.h.SetResult(schema.TableImpairmentSchedule, name, e.Stamp(r), extra)
}

func stepName(step int) string {
	if step == stepOver {
		return "end"
	}
	return strconv.Itoa(step)
}

// scheduleResults adds the schedule fields to the results of port's keys
// that follow a schedule, and makes an ok result pending while the
// schedule is missing or has never been valid (the base profile applies
// meanwhile) (d.mu held).
func (d *daemon) scheduleResults(port string, out *outcome) {
	mark := func(table, key string, f schema.Fields) {
		rk := schema.ResultKey(table, key)
		r, ok := out.results[rk]
		name := f[schema.FieldSchedule]
		if !ok || name == "" || r[schema.FieldState] != string(schema.StateOK) {
			return
		}
		sc := d.sch.byName[name]
		if sc == nil {
			why := "waiting for " + schema.ConfigKey(schema.TableImpairmentSchedule, name)
			if sf, ok := d.schedFields(name); ok {
				if _, err := schema.ParseImpairmentSchedule(name, sf); err != nil {
					why += " to be valid (" + err.Error() + ")"
				}
			}
			r[schema.FieldState] = string(schema.StatePending)
			r[schema.FieldReason] = why + "; the base profile applies meanwhile"
			return
		}
		r[FieldScheduleStep] = stepName(sc.step)
		r[FieldScheduleStepSince] = sc.startWall.Add(sc.since).UTC().Format(time.RFC3339Nano)
	}
	cfgPort := port
	if port == badKeysPort {
		return
	}
	if f, ok := d.imp[cfgPort]; ok {
		mark(schema.TableImpairment, cfgPort, f)
	}
	for key, f := range d.flows[cfgPort] {
		mark(schema.TableImpairmentFlow, key, f)
	}
}

// ensureSchedules starts the runners of the valid schedules port's keys
// follow that have none yet (impaird just started and the port's item came
// before the schedule's), so the port gets its step and not, for a moment,
// its base profile. d.mu not held.
func (d *daemon) ensureSchedules(ctx context.Context, port string) {
	if d.h == nil || port == badKeysPort {
		return
	}
	names := map[string]bool{}
	if e, ok := d.h.Cache.Get(schema.TableImpairment, port); ok && e.Fields[schema.FieldSchedule] != "" {
		names[e.Fields[schema.FieldSchedule]] = true
	}
	for _, key := range d.h.Cache.ByIndex(schema.TableImpairmentFlow, port) {
		if e, ok := d.h.Cache.Get(schema.TableImpairmentFlow, key); ok && e.Fields[schema.FieldSchedule] != "" {
			names[e.Fields[schema.FieldSchedule]] = true
		}
	}
	for name := range names {
		d.mu.Lock()
		running := d.sch.byName[name] != nil
		f, ok := d.schedFields(name)
		d.mu.Unlock()
		if running || !ok {
			continue
		}
		if _, err := schema.ParseImpairmentSchedule(name, f); err != nil {
			continue // its own item reports it; the port stays pending
		}
		if err := d.reconcileSchedule(ctx, name); err != nil {
			d.h.Enqueue(scheduleItem(name))
		}
	}
}

// stopSchedules ends every runner (daemon shutdown; tests).
func (d *daemon) stopSchedules() {
	d.mu.Lock()
	var runs []*schedule
	for name, sc := range d.sch.byName {
		sc.cancel()
		runs = append(runs, sc)
		delete(d.sch.byName, name)
	}
	d.mu.Unlock()
	for _, sc := range runs {
		<-sc.done
	}
}

// isScheduleItem returns the schedule name of a work item.
func isScheduleItem(item string) (string, bool) { return strings.CutPrefix(item, schedItemPrefix) }

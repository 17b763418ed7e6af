package swctl

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/switchyard-net/switchyard/schema"
)

// Schedules: IMPAIRMENT_SCHEDULE verbs (config impairment schedule add,
// del, load) and show impairment schedule.

func init() {
	impairmentFields = append(impairmentFields, fieldFlag{"schedule", "schedule",
		"follow IMPAIRMENT_SCHEDULE NAME: its current step's fields override this profile's"})
}

const scheduleGrammar = `Steps are "OFFSET [FIELD VALUE]...; OFFSET ...; OFFSET end": OFFSET is the
step's start from the cycle's start (0s first, then increasing by at least
1ms; units ns, us, ms, s), FIELD VALUE are IMPAIRMENT's profile fields
(loss, delay, rate, …, exactly as IMPAIRMENT takes them). A final "OFFSET end"
ends the cycle: with --loop the schedule restarts at step 0 there, without it
the base profile applies again. Without an end step the last step lasts.
A key with --schedule NAME keeps its own fields as the base profile; the
current step's fields override them (a step naming a field of a group —
the loss fields, rate/burst, shape/shape_limit, jitter/jitter_distribution —
replaces the base's whole group). Editing a schedule restarts it at step 0.`

func scheduleCommand() *Command {
	add := &Command{
		Name:    "add",
		Args:    "SCHEDULE",
		Summary: "add or replace schedule SCHEDULE: IMPAIRMENT_SCHEDULE|SCHEDULE",
		Long:    "Write an impairment schedule (CONFIG_DB IMPAIRMENT_SCHEDULE|SCHEDULE), replacing\nan existing one. " + scheduleGrammar,
		Examples: []string{
			`swctl config impairment schedule add leo --steps "0s delay 30ms; 15s loss 2 delay 45ms; 15.2s loss 0; 30s end" --loop`,
			"swctl config impairment set Ethernet0 --schedule leo",
		},
	}
	add.Setup = func(fs *flag.FlagSet) Runner {
		steps := fs.String("steps", "", "the steps: \"0s loss 0; 15s loss 2; 30s end\"")
		loop := fs.Bool("loop", false, "restart at step 0 at the end step")
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(add, args, 1, 1); err != nil {
				return err
			}
			if *steps == "" {
				return usagef(add, "--steps is required")
			}
			f := map[string]string{schema.FieldSteps: *steps}
			if *loop {
				f[schema.FieldLoop] = "true"
			}
			return setEntry(ctx, e, schema.TableImpairmentSchedule, args[0], f)
		}
	}
	load := &Command{
		Name:    "load",
		Args:    "SCHEDULE FILE",
		Summary: "write schedule SCHEDULE from a trace (CSV: time,delay,loss,rate)",
		Long: `Turn a recorded trace into IMPAIRMENT_SCHEDULE|SCHEDULE (replacing it). The CSV
has a header naming its columns: time (seconds, decimal; required) and any
IMPAIRMENT profile field (delay, loss, rate, jitter, shape, …) in any order;
absent columns are left to the base profile, as are empty cells. A bare
number in delay or jitter is milliseconds; other cells are IMPAIRMENT values.
Times count from the first row. A last row with only a time ends the trace
(or give --end). Rows equal to the one before are merged. A long trace is
written as steps, steps_1, steps_2, … (each under the 64 KiB value limit);
at most 100000 steps. FILE "-" reads standard input.`,
		Examples: []string{
			"swctl config impairment schedule load starlink trace.csv --loop",
			"swctl config impairment schedule load lte - --end 600s < lte.csv",
		},
	}
	load.Setup = func(fs *flag.FlagSet) Runner {
		loop := fs.Bool("loop", false, "restart at step 0 at the end of the trace")
		end := fs.Duration("end", 0, "where the trace ends, from its first row (default: its last row without values)")
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(load, args, 2, 2); err != nil {
				return err
			}
			data, err := readInput(args[1])
			if err != nil {
				return fmt.Errorf("read trace: %w", err)
			}
			s, err := schema.ParseTraceCSV(bytes.NewReader(data), args[0], *loop, *end)
			if err != nil {
				return &ValidationError{Lines: []string{args[1] + ": " + err.Error()}}
			}
			f := s.Fields()
			fmt.Fprintf(e.Stderr, "swctl: %s: %d steps in %d field(s), cycle %v\n", args[1], len(s.Steps), len(f)-boolInt(s.Loop), s.End)
			return setEntry(ctx, e, schema.TableImpairmentSchedule, args[0], f)
		}
	}
	del := delCommand("del", "SCHEDULE", "remove schedule SCHEDULE (keys following it go back to their base profile)",
		[]string{"swctl config impairment schedule del leo"},
		func(a []string) ([]string, error) {
			return []string{schema.ConfigKey(schema.TableImpairmentSchedule, a[0])}, nil
		})
	return &Command{Name: "schedule", Summary: "impairment profiles that change over time (steps, traces)",
		Sub: []*Command{add, load, del}, Examples: append(append(add.Examples, load.Examples...), del.Examples...)}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// showImpairmentScheduleCommand is `show impairment schedule`.
func showImpairmentScheduleCommand() *Command {
	return showLeaf("schedule", "impairment schedules: steps, loop, the current step and switches",
		`Impairment schedules (CONFIG_DB IMPAIRMENT_SCHEDULE) with impaird's result
(STATE_DB IMPAIRMENT_SCHEDULE_TABLE): the number of steps, the cycle length,
whether it loops, the step applied now and since when, the step switches
applied and the steps skipped (a boundary passed while impaird was stalled
longer than a step).`,
		[]string{"swctl show impairment schedule", "swctl show impairment schedule --json"}, false, false, showSchedules)
}

func showSchedules(ctx context.Context, db *DB, o showOpts) (*View, error) {
	cfg, err := readCfg(ctx, db, schema.TableImpairmentSchedule)
	if err != nil {
		return nil, err
	}
	st, err := readState(ctx, db, schema.ResultTable(schema.TableImpairmentSchedule))
	if err != nil {
		return nil, err
	}
	v := &View{Columns: []Column{{"NAME", "name"}, {"STEPS", "steps"}, {"CYCLE", "cycle"}, {"LOOP", "loop"},
		{"STEP", "step"}, {"SINCE", "since"}, {"SWITCHES", "switches"}, {"SKIPPED", "skipped"},
		{"STATE", "state"}, {"REASON", "reason"}}}
	for _, name := range union(cfg, st) {
		r := Row{"name": name, "steps": "", "cycle": "", "loop": "", "step": st[name]["step"],
			"since": st[name]["step_since"], "switches": st[name]["switches"], "skipped": st[name]["skipped"],
			"state": st[name]["state"], "reason": st[name]["reason"]}
		if c := cfg[name]; c != nil {
			r["loop"] = c[schema.FieldLoop] == "true"
			if s, err := schema.ParseImpairmentSchedule(name, c); err == nil {
				r["steps"] = strconv.Itoa(len(s.Steps))
				if s.End > 0 {
					r["cycle"] = s.End.String()
				}
			}
		}
		if t, err := time.Parse(time.RFC3339Nano, st[name]["step_since"]); err == nil {
			r["since"] = t.Local().Format("15:04:05.000")
		}
		v.Rows = append(v.Rows, r)
	}
	return v, nil
}

// with adds sub-commands to c (a leaf that runs itself when no
// sub-command is named: show impairment, show impairment schedule).
func (c *Command) with(sub ...*Command) *Command {
	c.Sub = append(c.Sub, sub...)
	return c
}

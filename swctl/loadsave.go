package swctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/switchyard-net/switchyard/schema"
)

func loadCommand() *Command {
	c := &Command{
		Name:    "load",
		Args:    "FILE",
		Summary: "validate a config_db.json and write it atomically",
		Long: `Load a config_db.json ({"TABLE": {"key": {"field": "value"}}}, as SONiC's) into
CONFIG_DB, every table of it, as SONiC's config load does: a list value is
stored as "field@" with its items joined by ",", an empty entry {} as the
NULL placeholder, numbers and booleans as their text. The entries of
switchyard's tables are validated first, with the daemons' parser, and every
problem is reported as "TABLE|key: field …"; if there is any, nothing is
written and swctl exits 1. Otherwise all entries are written in one
MULTI/EXEC transaction (entries that already match are left untouched) and
CONFIG_DB_INITIALIZED is set to "1".

Fields SONiC defines but Linux has no use for (lanes, speed, alias, …) are
written and accepted. A field nobody defines is written too and named in a
warning (the daemons ignore it and name it in the result's warning field);
with --strict it is an error. Tables switchyard does not know (DEVICE_METADATA,
BGP_NEIGHBOR, …) are written as they are, for SONiC's other tools;
--skip-unknown leaves them out.

Each entry replaces its whole hash. With --replace, CONFIG_DB ends up holding
exactly the file: every other TABLE|key is deleted (with --skip-unknown, only
those of switchyard's tables). FILE "-" reads standard input.

On a terminal a progress line shows the phases, then how fast the entries
were written and the daemons applying them ("applied N/M (rate/s), P
pending, E errors") until all have a result or nothing moves for 5 s; the
exit status is the load's alone. Not shown when stderr is not a terminal,
or with --quiet.`,
		Examples: []string{
			"swctl config load demo/routed.json",
			"swctl config load --replace backup.json && swctl wait --timeout 30s",
			"swctl config load --dry-run --strict candidate.json",
		},
	}
	c.Setup = func(fs *flag.FlagSet) Runner {
		replace := fs.Bool("replace", false, "also delete keys of known tables that the file does not name")
		dry := fs.Bool("dry-run", false, "validate only; write nothing")
		skipUnknown := fs.Bool("skip-unknown", false, "write only switchyard's tables; name the others in a warning")
		strict := fs.Bool("strict", false, "fail on fields nobody defines instead of warning")
		quiet := fs.Bool("quiet", false, "no progress line (it is shown only on a terminal)")
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(c, args, 1, 1); err != nil {
				return err
			}
			p := newProgress(e.Stderr, *quiet)
			p.show(true, "reading %s", args[0])
			data, err := readInput(args[0])
			if err != nil {
				return err
			}
			p.show(true, "validating %d bytes", len(data))
			entries, warnings, err := parseConfigFile(data, loadOptions{Strict: *strict, SkipUnknown: *skipUnknown})
			p.clear()
			for _, w := range warnings {
				fmt.Fprintf(e.Stderr, "swctl: warning: %s\n", w)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if *dry {
				fmt.Fprintf(e.Stdout, "%s: %d entries valid (dry run: nothing written)\n", args[0], len(entries))
				return nil
			}
			db, err := e.DB()
			if err != nil {
				return err
			}
			ch := change{Set: entries, MarkInited: true}
			if *replace {
				ch.Delete, err = staleKeys(ctx, db, entries, !*skipUnknown)
				if err != nil {
					return err
				}
			}
			p.show(true, "writing %d entries", len(entries))
			began := time.Now()
			rep, err := apply(ctx, db.Config(), ch)
			p.clear()
			if err != nil {
				return err
			}
			took := time.Since(began)
			counts := map[string]int{}
			for _, a := range rep {
				counts[a.Action]++
			}
			fmt.Fprintf(e.Stdout, "loaded %s: %d entries (%d set, %d unchanged), %d deleted; %s = 1\n",
				args[0], len(entries), counts["set"], counts["unchanged"], counts["deleted"], schema.KeyConfigDBInitialized)
			if p.on {
				fmt.Fprintf(e.Stderr, "written in %v (%.0f entries/s); following the daemons (Ctrl-C stops only this)\n",
					took.Round(time.Millisecond), float64(len(rep))/max(took.Seconds(), 1e-6))
			}
			followApply(ctx, e, db, p, 5*time.Second)
			return nil
		}
	}
	return c
}

func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}

// strictDecode decodes one JSON value and reports syntax errors with the
// line and column.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col := lineCol(data, se.Offset)
			return fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, se)
		case errors.As(err, &te):
			line, col := lineCol(data, te.Offset)
			return fmt.Errorf("line %d, column %d: found a JSON %s where an object was expected", line, col, te.Value)
		}
		return fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return errors.New("invalid JSON: more than one value in the file")
	}
	return nil
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func saveCommand() *Command {
	c := &Command{
		Name:    "save",
		Args:    "[FILE]",
		Summary: "write CONFIG_DB as a config_db.json (stdout when FILE is - or absent)",
		Long: `Write CONFIG_DB as a config_db.json: every table, switchyard's or not, as
SONiC's config save does. A "field@" hash field becomes the list "field":
[...], the NULL placeholder is dropped (an entry without fields is {}), keys
and fields are sorted, the indent is four spaces. The output is stable:
saving twice gives identical files, and 'config load --replace' of it
restores exactly this CONFIG_DB. FILE is replaced atomically (written to a
temporary file, then renamed).`,
		Examples: []string{
			"swctl config save /etc/switchyard/config_db.json",
			"swctl config save | jq .VLAN",
		},
	}
	c.Setup = func(fs *flag.FlagSet) Runner {
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(c, args, 0, 1); err != nil {
				return err
			}
			db, err := e.DB()
			if err != nil {
				return err
			}
			data, err := renderConfig(ctx, db)
			if err != nil {
				return err
			}
			if len(args) == 0 || args[0] == "-" {
				_, err = e.Stdout.Write(data)
				return err
			}
			return writeFileAtomic(args[0], data)
		}
	}
	return c
}

func writeFileAtomic(name string, data []byte) error {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp, name)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("save %s: %w", name, werr)
	}
	return nil
}

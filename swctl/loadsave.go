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
	"sort"
	"strings"

	"github.com/switchyard-net/switchyard/schema"
)

func loadCommand() *Command {
	c := &Command{
		Name:    "load",
		Args:    "FILE",
		Summary: "validate a config_db.json and write it atomically",
		Long: `Load a config_db.json ({"TABLE": {"key": {"field": "value"}}}, as SONiC's) into
CONFIG_DB. The whole file is validated first and every problem is reported as
"TABLE|key: field …"; if there is any, nothing is written and swctl exits 1.
Otherwise all entries are written in one MULTI/EXEC transaction (entries that
already match are left untouched) and CONFIG_DB_INITIALIZED is set to "1".

Each entry replaces its whole hash. With --replace, keys of switchyard's
tables that the file does not name are deleted too, so CONFIG_DB ends up
holding exactly the file. FILE "-" reads standard input. Field values may be
JSON strings, numbers, booleans or lists (joined with ",").`,
		Examples: []string{
			"swctl config load demo/routed.json",
			"swctl config load --replace backup.json && swctl wait --timeout 30s",
			"swctl config load --dry-run candidate.json",
		},
	}
	c.Setup = func(fs *flag.FlagSet) Runner {
		replace := fs.Bool("replace", false, "also delete keys of known tables that the file does not name")
		dry := fs.Bool("dry-run", false, "validate only; write nothing")
		skipUnknown := fs.Bool("skip-unknown", false, "ignore tables switchyard does not know (warn) instead of failing")
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(c, args, 1, 1); err != nil {
				return err
			}
			data, err := readInput(args[0])
			if err != nil {
				return err
			}
			entries, warnings, err := parseConfigFile(data, *skipUnknown)
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
				ch.Delete, err = staleKeys(ctx, db, entries)
				if err != nil {
					return err
				}
			}
			rep, err := apply(ctx, db.Config(), ch)
			if err != nil {
				return err
			}
			counts := map[string]int{}
			for _, a := range rep {
				counts[a.Action]++
			}
			fmt.Fprintf(e.Stdout, "loaded %s: %d entries (%d set, %d unchanged), %d deleted; %s = 1\n",
				args[0], len(entries), counts["set"], counts["unchanged"], counts["deleted"], schema.KeyConfigDBInitialized)
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

// parseConfigFile decodes and validates a config_db.json. It returns the
// canonical entries in table dependency order, or a *ValidationError with
// every problem of the file.
func parseConfigFile(data []byte, skipUnknown bool) ([]entry, []string, error) {
	var file map[string]json.RawMessage
	if err := strictDecode(data, &file); err != nil {
		return nil, nil, err
	}
	var problems, warnings []string
	byTable := map[string][]entry{}
	seen := map[string]string{} // canonical Redis key → key as written in the file
	tables := make([]string, 0, len(file))
	for t := range file {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		if !isKnownTable(t) {
			msg := fmt.Sprintf("%s: unknown table (switchyard knows %s)", t, strings.Join(knownTables(), ", "))
			if skipUnknown {
				warnings = append(warnings, msg+"; skipped")
			} else {
				problems = append(problems, msg)
			}
			continue
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(file[t], &keys); err != nil {
			problems = append(problems, fmt.Sprintf("%s: want an object {\"key\": {\"field\": \"value\"}}, found %.40s", t, file[t]))
			continue
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sortNatural(names)
		for _, k := range names {
			var raws map[string]json.RawMessage
			if err := json.Unmarshal(keys[k], &raws); err != nil || raws == nil && string(keys[k]) == "null" {
				problems = append(problems, fmt.Sprintf("%s: want an object of fields {\"field\": \"value\"}, found %.40s",
					schema.ConfigKey(t, k), keys[k]))
				continue
			}
			fields := map[string]string{}
			bad := false
			fnames := make([]string, 0, len(raws))
			for f := range raws {
				fnames = append(fnames, f)
			}
			sort.Strings(fnames)
			for _, f := range fnames {
				v, err := fieldValue(raws[f])
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: field %q: %v", schema.ConfigKey(t, k), f, err))
					bad = true
					continue
				}
				fields[f] = v
			}
			if bad {
				continue
			}
			ent, err := canonical(t, k, fields)
			if err != nil {
				problems = append(problems, errorLines(t, k, err)...)
				continue
			}
			if prev, dup := seen[ent.RedisKey()]; dup {
				problems = append(problems, fmt.Sprintf("%s: key: same entry as %q (both are %s)",
					schema.ConfigKey(t, k), prev, ent.RedisKey()))
				continue
			}
			seen[ent.RedisKey()] = k
			byTable[t] = append(byTable[t], ent)
		}
	}
	if len(problems) > 0 {
		return nil, warnings, &ValidationError{Lines: problems}
	}
	var out []entry
	for _, t := range knownTables() {
		out = append(out, byTable[t]...)
	}
	return out, warnings, nil
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

// fieldValue turns a JSON field value into the Redis string.
func fieldValue(raw json.RawMessage) (string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			s, ok := p.(string)
			if !ok {
				return "", fmt.Errorf("a list must hold strings, found %s", string(raw))
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("want a string, number, boolean or list of strings, found %s", string(raw))
}

// staleKeys lists the keys of known tables that are in CONFIG_DB but not
// among entries.
func staleKeys(ctx context.Context, db *DB, entries []entry) ([]string, error) {
	want := map[string]bool{}
	for _, e := range entries {
		want[e.RedisKey()] = true
	}
	var stale []string
	for _, t := range knownTables() {
		keys, err := scanKeys(ctx, db.Config(), globEscape(t+schema.ConfigSep)+"*")
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if !want[k] {
				stale = append(stale, k)
			}
		}
	}
	return stale, nil
}

func saveCommand() *Command {
	c := &Command{
		Name:    "save",
		Args:    "[FILE]",
		Summary: "write CONFIG_DB as a config_db.json (stdout when FILE is - or absent)",
		Long: `Write switchyard's tables of CONFIG_DB as a config_db.json: keys and fields
sorted, four-space indent, the NULL placeholder dropped (an entry without
fields is {}). The output is stable: saving twice gives identical files, and
'config load --replace' of it restores exactly this CONFIG_DB. FILE is replaced
atomically (written to a temporary file, then renamed).`,
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

// renderConfig reads every known table and renders the config_db.json.
func renderConfig(ctx context.Context, db *DB) ([]byte, error) {
	cfg, err := readConfig(ctx, db, knownTables())
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]map[string]string{}
	for t, keys := range cfg {
		if len(keys) > 0 {
			out[t] = keys
		}
	}
	// encoding/json writes map keys sorted: the output is stable.
	data, err := json.MarshalIndent(out, "", "    ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
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

package swctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/switchyard-net/switchyard/schema"
)

// loadOptions are the flags of `config load` that change what is written.
type loadOptions struct {
	Strict      bool // unknown fields of switchyard's tables are errors
	SkipUnknown bool // tables switchyard does not know are not written
}

// listSuffix marks a list-typed field in Redis, as SONiC's
// ConfigDBConnector writes it: JSON ["a", "b"] → field "name@" = "a,b".
const listSuffix = "@"

// parseConfigFile decodes a config_db.json and validates the entries of
// switchyard's tables with the daemons' parser. Every table is returned,
// known or not, as SONiC's ConfigDBConnector would write it (an empty
// object → the NULL placeholder, a list → "name@" with its values joined
// by commas); switchyard's tables come first, in dependency order. On any
// problem the error is a *ValidationError listing all of them.
func parseConfigFile(data []byte, opt loadOptions) ([]entry, []string, error) {
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
		known := isKnownTable(t)
		switch {
		case t == "" || strings.Contains(t, schema.ConfigSep):
			problems = append(problems, fmt.Sprintf("%q: a table name must be non-empty and without %q", t, schema.ConfigSep))
			continue
		case !known && opt.SkipUnknown:
			warnings = append(warnings, fmt.Sprintf("%s: not one of switchyard's tables; skipped (--skip-unknown)", t))
			continue
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(file[t], &keys); err != nil || keys == nil {
			problems = append(problems, fmt.Sprintf("%s: want an object {\"key\": {\"field\": \"value\"}}, found %.40s", t, file[t]))
			continue
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sortNatural(names)
		for _, k := range names {
			fields, lines := entryFields(t, k, keys[k])
			if lines != nil {
				problems = append(problems, lines...)
				continue
			}
			if !known {
				if len(fields) == 0 {
					fields[schema.NullField] = schema.NullField
				}
				byTable[t] = append(byTable[t], entry{Table: t, Key: k, Fields: fields})
				continue
			}
			ent, canon, err := canonical(t, k, fields)
			if err != nil {
				problems = append(problems, errorLines(t, k, err)...)
				continue
			}
			if opt.Strict {
				if err := schema.CheckKnownFields(t, k, fields); err != nil {
					problems = append(problems, err.Error())
					continue
				}
			} else if w := unknownFields(t, k, fields); w != "" {
				warnings = append(warnings, w)
			}
			if prev, dup := seen[canon]; dup {
				problems = append(problems, fmt.Sprintf("%s: key: same entry as %q (both are %s)",
					schema.ConfigKey(t, k), prev, canon))
				continue
			}
			seen[canon] = k
			byTable[t] = append(byTable[t], ent)
		}
	}
	if len(problems) > 0 {
		return nil, warnings, &ValidationError{Lines: problems}
	}
	var out []entry
	for _, t := range knownTables() {
		out = append(out, byTable[t]...)
		delete(byTable, t)
	}
	for _, t := range tables {
		out = append(out, byTable[t]...)
	}
	return out, warnings, nil
}

// entryFields decodes the fields of one entry into its Redis hash (without
// the NULL placeholder), or returns the problems, each naming TABLE|key.
func entryFields(table, key string, raw json.RawMessage) (map[string]string, []string) {
	full := schema.ConfigKey(table, key)
	var raws map[string]json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil || raws == nil {
		return nil, []string{fmt.Sprintf("%s: want an object of fields {\"field\": \"value\"}, found %.40s", full, raw)}
	}
	fnames := make([]string, 0, len(raws))
	for f := range raws {
		fnames = append(fnames, f)
	}
	sort.Strings(fnames)
	fields := map[string]string{}
	var problems []string
	for _, f := range fnames {
		v, list, err := fieldValue(raws[f])
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: field %q: %v", full, f, err))
			continue
		}
		name := f
		if list {
			name += listSuffix
		}
		if _, dup := fields[name]; dup {
			problems = append(problems, fmt.Sprintf("%s: field %q: given both as %q and as a list", full, name, name))
			continue
		}
		fields[name] = v
	}
	if f, ok := fields[schema.NullField]; ok && f == schema.NullField {
		delete(fields, schema.NullField)
	}
	return fields, problems
}

// fieldValue turns a JSON field value into its Redis string, and says
// whether it was a list (stored as "name@", ConfigDBConnector's form).
func fieldValue(raw json.RawMessage) (string, bool, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", false, err
	}
	switch x := v.(type) {
	case string:
		return x, false, nil
	case json.Number:
		return x.String(), false, nil
	case bool:
		if x {
			return "true", false, nil
		}
		return "false", false, nil
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			s, ok := p.(string)
			if !ok {
				return "", false, fmt.Errorf("a list must hold strings, found %s", string(raw))
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), true, nil
	}
	return "", false, fmt.Errorf("want a string, number, boolean or list of strings, found %s", string(raw))
}

// staleKeys lists the CONFIG_DB entries ("TABLE|key") that are not among
// entries: of every table when all is set, else of switchyard's tables.
func staleKeys(ctx context.Context, db *DB, entries []entry, all bool) ([]string, error) {
	want := map[string]bool{}
	for _, e := range entries {
		want[e.RedisKey()] = true
	}
	var keys []string
	if all {
		var err error
		if keys, err = scanKeys(ctx, db.Config(), "*"+globEscape(schema.ConfigSep)+"*"); err != nil {
			return nil, err
		}
	} else {
		for _, t := range knownTables() {
			k, err := scanKeys(ctx, db.Config(), globEscape(t+schema.ConfigSep)+"*")
			if err != nil {
				return nil, err
			}
			keys = append(keys, k...)
		}
	}
	var stale []string
	for _, k := range keys {
		if !want[k] {
			stale = append(stale, k)
		}
	}
	return stale, nil
}

// renderConfig reads every table of CONFIG_DB (every hash whose key has a
// "|") and renders the config_db.json as SONiC's ConfigDBConnector reads
// it: the NULL placeholder dropped (an entry without fields is {}), a
// "name@" field as the list "name": [...] (unless the hash also has a
// plain "name": then it stays a string under "name@", so nothing is lost),
// every other field a string. Tables, keys and fields are sorted and the
// indent is four spaces: the output is byte-stable.
func renderConfig(ctx context.Context, db *DB) ([]byte, error) {
	c := db.Config()
	keys, err := scanKeys(ctx, c, "*"+globEscape(schema.ConfigSep)+"*")
	if err != nil {
		return nil, err
	}
	hashes, err := readHashes(ctx, c, keys, "")
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]map[string]any{}
	for full, h := range hashes {
		table, key, _ := schema.SplitTableKey(full)
		fields := map[string]any{}
		for name, v := range h {
			base, isList := strings.CutSuffix(name, listSuffix)
			if _, plain := h[base]; isList && base != "" && !plain {
				fields[base] = strings.Split(v, ",")
			} else if name != schema.NullField {
				fields[name] = v
			}
		}
		if out[table] == nil {
			out[table] = map[string]map[string]any{}
		}
		out[table][key] = fields
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	// encoding/json writes map keys sorted: the output is stable.
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

package swctl

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
)

func newTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
}

// Column is one column of a show view: its header in the text table and
// its key in --json output.
type Column struct {
	Header string
	Key    string
}

// Row is one line of a view, values by column key. A value is a string or
// a []string (joined with "," in text, an array in JSON).
type Row map[string]any

// View is what a show command prints: an aligned table, or with --json an
// array of objects (one per row, every column present).
type View struct {
	Columns []Column
	Rows    []Row
}

// Write prints v as text or JSON.
func (v *View) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		out := make([]map[string]any, 0, len(v.Rows))
		for _, r := range v.Rows {
			o := make(map[string]any, len(v.Columns))
			for _, c := range v.Columns {
				val, ok := r[c.Key]
				if l, isList := val.([]string); isList && l == nil {
					val = []string{}
				}
				if !ok || val == nil {
					val = ""
				}
				o[c.Key] = val
			}
			out = append(out, o)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := newTabWriter(w)
	head := make([]string, len(v.Columns))
	dash := make([]string, len(v.Columns))
	for i, c := range v.Columns {
		head[i] = c.Header
		dash[i] = strings.Repeat("-", len(c.Header))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	fmt.Fprintln(tw, strings.Join(dash, "\t"))
	for _, r := range v.Rows {
		cells := make([]string, len(v.Columns))
		for i, c := range v.Columns {
			cells[i] = cellText(r[c.Key])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func cellText(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		// A tab or newline would break the alignment.
		return strings.NewReplacer("\t", " ", "\n", " ").Replace(x)
	case []string:
		if len(x) == 0 {
			return "-"
		}
		return strings.Join(x, ",")
	default:
		return fmt.Sprint(x)
	}
}

// naturalLess orders names the way people count: Ethernet2 before
// Ethernet10, Vlan20 before Vlan100.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		ca, cb := a[0], b[0]
		if isDigit(ca) && isDigit(cb) {
			na, ra := leadingNumber(a)
			nb, rb := leadingNumber(b)
			if na != nb {
				return na < nb
			}
			a, b = ra, rb
			continue
		}
		if ca != cb {
			return ca < cb
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func leadingNumber(s string) (uint64, string) {
	i := 0
	for i < len(s) && isDigit(s[i]) && i < 18 {
		i++
	}
	n, _ := strconv.ParseUint(s[:i], 10, 64)
	return n, s[i:]
}

func sortNatural(keys []string) {
	sort.Slice(keys, func(i, j int) bool { return naturalLess(keys[i], keys[j]) })
}

// genericColumns orders the union of the fields of hashes: the preferred
// names first (when present), then the rest alphabetically. It is how show
// copes with fields a daemon adds later without a swctl change.
func genericColumns(hashes map[string]map[string]string, preferred []string, skip ...string) []string {
	seen := map[string]bool{}
	for _, h := range hashes {
		for f := range h {
			seen[f] = true
		}
	}
	for _, s := range skip {
		delete(seen, s)
	}
	var cols []string
	for _, p := range preferred {
		if seen[p] {
			cols = append(cols, p)
			delete(seen, p)
		}
	}
	var rest []string
	for f := range seen {
		rest = append(rest, f)
	}
	sort.Strings(rest)
	return append(cols, rest...)
}

// header turns a field name into a column header: "rx_packets" → "RX_PACKETS".
func header(field string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return '_'
		}
		return unicode.ToUpper(r)
	}, field)
}

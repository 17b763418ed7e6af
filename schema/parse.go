package schema

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// ParseFunc parses one key of a table (the part after "TABLE|") and its
// hash into a Record, or returns a *FieldError.
type ParseFunc = func(key string, f Fields) (Record, error)

var (
	registryMu sync.RWMutex
	// registry holds the parser of every table Parse knows; other files of
	// this package (impairment.go) add theirs from init with RegisterTable.
	registry = map[string]ParseFunc{
		TablePort:        func(k string, f Fields) (Record, error) { return wrap(ParsePort(k, f)) },
		TableVlan:        func(k string, f Fields) (Record, error) { return wrap(ParseVlan(k, f)) },
		TableVlanMember:  func(k string, f Fields) (Record, error) { return wrap(ParseVlanMember(k, f)) },
		TableStaticRoute: func(k string, f Fields) (Record, error) { return wrap(ParseStaticRoute(k, f)) },
		TableFDB:         func(k string, f Fields) (Record, error) { return wrap(ParseFDB(k, f)) },
		TableInterface: func(k string, f Fields) (Record, error) {
			return wrap(ParseInterface(TableInterface, k, f))
		},
		TableVlanInterface: func(k string, f Fields) (Record, error) {
			return wrap(ParseInterface(TableVlanInterface, k, f))
		},
		TableLoopback: func(k string, f Fields) (Record, error) {
			return wrap(ParseInterface(TableLoopback, k, f))
		},
		TableVRF:         func(k string, f Fields) (Record, error) { return wrap(ParseVRF(k, f)) },
		TablePortChannel: func(k string, f Fields) (Record, error) { return wrap(ParsePortChannel(k, f)) },
		TableVxlanTunnel: func(k string, f Fields) (Record, error) { return wrap(ParseVxlanTunnel(k, f)) },
		TableVxlanTunnelMap: func(k string, f Fields) (Record, error) {
			return wrap(ParseVxlanTunnelMap(k, f))
		},
		TableVxlanRemoteVNI: func(k string, f Fields) (Record, error) {
			return wrap(ParseVxlanRemoteVNI(k, f))
		},
		TablePortChannelMember: func(k string, f Fields) (Record, error) {
			return wrap(ParsePortChannelMember(k, f))
		},
		TablePortChannelInterface: func(k string, f Fields) (Record, error) {
			return wrap(ParseInterface(TablePortChannelInterface, k, f))
		},
	}
)

// wrap turns a typed parser result into a (Record, error) pair whose Record
// is nil on error (a zero value in an interface would not be nil).
func wrap[R Record](r R, err error) (Record, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

// RegisterTable makes Parse dispatch table to parse. It is meant for init
// functions and panics when table is empty, parse is nil or the table is
// already registered, so a clash shows at start-up, not as lost config.
func RegisterTable(table string, parse func(key string, f Fields) (Record, error)) {
	if table == "" || parse == nil {
		panic("schema: RegisterTable needs a table name and a parse function")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[table]; dup {
		panic("schema: RegisterTable called twice for " + table)
	}
	registry[table] = parse
}

// Tables returns the names of all tables Parse knows, sorted.
func Tables() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for t := range registry {
		names = append(names, t)
	}
	sort.Strings(names)
	return names
}

// Parse validates and canonicalises one CONFIG_DB entry of any known table.
// key is the part after "TABLE|". Errors are *FieldError, except for an
// unknown table, which wraps ErrUnknownTable.
func Parse(table, key string, f Fields) (Record, error) {
	registryMu.RLock()
	parse := registry[table]
	registryMu.RUnlock()
	if parse == nil {
		return nil, fmt.Errorf("%s%s%s: %w %q: known tables are %s",
			table, ConfigSep, key, ErrUnknownTable, table, strings.Join(Tables(), ", "))
	}
	return parse(key, f)
}

package schema

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownTable is wrapped by Parse for a table nobody registered.
var ErrUnknownTable = errors.New("unknown table")

// Error renders the error as one line an operator can act on:
//
//	PORT|Ethernet0: field "mtu": "banana" is not valid: want an integer 68-9216
//	STATIC_ROUTE|10.0.0.1/8: key: prefix has host bits set: use 10.0.0.0/8
func (e *FieldError) Error() string {
	var b strings.Builder
	// Keys, names and values are user input of any size: quote at most
	// MaxQuote bytes of each.
	b.WriteString(e.Table)
	b.WriteString(ConfigSep)
	b.WriteString(Clip(e.Key))
	if e.Field == "" {
		b.WriteString(": key")
	} else {
		fmt.Fprintf(&b, ": field %q", Clip(e.Field))
	}
	if e.Reason == "" {
		fmt.Fprintf(&b, ": %q is not valid", Clip(e.Value))
	} else {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Allowed != "" {
		b.WriteString(": want ")
		b.WriteString(e.Allowed)
	}
	return b.String()
}

// keyError reports a problem with the key itself.
func keyError(table, key, reason, allowed string) *FieldError {
	return &FieldError{Table: table, Key: key, Value: key, Reason: reason, Allowed: allowed}
}

// valueError reports a field value outside what is allowed.
func valueError(table, key, field, value, allowed string) *FieldError {
	return &FieldError{Table: table, Key: key, Field: field, Value: value, Allowed: allowed}
}

// fieldError reports a field problem that needs its own reason.
func fieldError(table, key, field, value, reason, allowed string) *FieldError {
	return &FieldError{Table: table, Key: key, Field: field, Value: value, Reason: reason, Allowed: allowed}
}

// Package schema is the Redis contract of switchyard in code: database
// numbers, key separators, table and field names, key codecs, one typed
// record per CONFIG_DB table (parse, validate, canonicalise, render) and the
// STATE_DB result rule every daemon uses.
//
// Parse (or the per-table ParseX functions) turns one CONFIG_DB key and its
// hash into a Record, or a *FieldError whose text says what is wrong and
// what to write instead; that text is what daemons store as the STATE_DB
// reason. Keys must be in canonical form (so two Redis keys never name one
// object) and are rejected otherwise; field values are canonicalised.
// Record.Fields renders the canonical hash, and parsing that again gives
// the same record. Fields follow one policy (policy.go): fields switchyard
// acts on are validated, SONiC's other YANG fields are accepted, and
// fields nobody defines are ignored by the parsers and named by
// UnknownFields for the result's warning. Other files of the package add tables with
// RegisterTable (impairment.go registers IMPAIRMENT and IMPAIRMENT_FLOW).
//
// It must not talk to Redis or the kernel: it is pure data, so swctl can
// validate exactly as the daemons do before anything is written.
package schema

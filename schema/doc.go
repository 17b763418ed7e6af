// Package schema is the Redis contract of switchyard in code: database
// numbers, key separators, table names, key codecs, one typed record per
// CONFIG_DB table (parse, validate, canonicalise, render) and the STATE_DB
// result rule every daemon uses.
//
// It must not talk to Redis or the kernel: it is pure data, so swctl can
// validate exactly as the daemons do before anything is written.
package schema

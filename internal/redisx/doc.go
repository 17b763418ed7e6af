// Package redisx is the Redis plumbing shared by every daemon: connecting
// from a --redis URL, keyspace-notification setup, the level-triggered
// table watcher (subscribe, then scan, then resync after reconnects) and the
// STATE_DB writer that owns named fields.
//
// It knows nothing about table contents: that is package schema.
package redisx

// Package enginee2e throws hostile input at the running daemons (real
// redis-server, real kernel in a fresh namespace): wrong Redis types,
// wrong separators, huge and non-UTF-8 values, edge numbers, across every
// table. Every bad key must get a result, good keys written in between must
// apply, the kernel must change only by the good keys, and memory must come
// back once the bad keys are gone.
package enginee2e

package redisx

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The StateWriter's MULTI/EXEC over a connection of its own (dialRaw, on
// the writer's DB): the commands of a flush are encoded into one buffer
// as they are queued — no go-redis command object and argument slice per
// command — and the replies (OK, QUEUED per command, EXEC's array) are
// read without keeping their values. docs/performance.md, "Redis side".

// txWriter collects a flush's commands. A transaction bigger than keepBuf
// is streamed to the connection as it is queued (spill), as go-redis'
// buffered writer did: a 100k-key burst is not held encoded whole.
type txWriter struct {
	cmds [][]string // each command's arguments (for errors; slices of the batch's args)
	buf  []byte     // MULTI, the commands, EXEC as RESP (what is not sent yet)

	spill   func([]byte) error // sends buf so far (set by Flush)
	spilled bool               // part of the transaction was sent
	err     error              // spill's failure: the flush fails with it
}

// txBuf is the transaction buffer a flush keeps: the spill point
// (keepBuf) plus room for the command that crosses it.
const txBuf = keepBuf + keepBuf/4

var (
	respMulti = appendCommand(nil, "MULTI")
	respExec  = appendCommand(nil, "EXEC")
)

// reset empties t for a new flush (its buffers are kept).
func (t *txWriter) reset(spill func([]byte) error) {
	clear(t.cmds)
	t.cmds = t.cmds[:0]
	t.buf = append(t.buf[:0], respMulti...)
	t.spill, t.spilled, t.err = spill, false, nil
}

// add queues one command; args must not change until the flush is done.
func (t *txWriter) add(args []string) {
	t.cmds = append(t.cmds, args)
	if len(t.buf) >= keepBuf/2 && cap(t.buf) < txBuf {
		// Growing towards the spill: straight to txBuf, which a spilling
		// flush then fills and keeps, not doubling through new arrays
		// in every flush of a burst (release let the grown one go).
		t.buf = append(make([]byte, 0, txBuf), t.buf...)
	}
	t.buf = append(t.buf, '*')
	t.buf = strconv.AppendInt(t.buf, int64(len(args)), 10)
	t.buf = append(t.buf, '\r', '\n')
	for _, s := range args {
		t.buf = append(t.buf, '$')
		t.buf = strconv.AppendInt(t.buf, int64(len(s)), 10)
		t.buf = append(t.buf, '\r', '\n')
		t.buf = append(t.buf, s...)
		t.buf = append(t.buf, '\r', '\n')
	}
	if len(t.buf) >= keepBuf && t.spill != nil && t.err == nil {
		t.spilled = true
		t.err = t.spill(t.buf)
		t.buf = t.buf[:0]
	}
}

// Len is the number of commands queued.
func (t *txWriter) Len() int { return len(t.cmds) }

// release drops buffers a big flush grew (over keepBuf), keeping the
// ordinary ones for the next flush.
func (t *txWriter) release() {
	t.spill = nil
	clear(t.cmds)
	if cap(t.cmds) > keepBuf/24 {
		t.cmds = nil
	}
	if cap(t.buf) > txBuf {
		t.buf = nil
	}
}

// exec runs the queued transaction. errs[i] is command i's error (nil,
// its own reply error, or EXECABORT's); err is EXEC's error (EXECABORT),
// else the first command's error, else nil — as go-redis' TxPipeline
// reports them. A connection or protocol failure closes the connection
// and is tried once more on a new one (the transaction's HSET/HDEL/DEL
// give the same result run twice); errs is nil then.
func (w *StateWriter) exec(ctx context.Context, t *txWriter) (errs []error, err error) {
	for attempt := 0; ; attempt++ {
		errs, err, retry := w.execOnce(ctx, t)
		if !retry || t.spilled || attempt == 1 || ctx.Err() != nil {
			return errs, err
		}
	}
}

// execOnce is one attempt of exec; retry says the connection failed.
func (w *StateWriter) execOnce(ctx context.Context, t *txWriter) (errs []error, err error, retry bool) {
	if t.err != nil {
		w.closeConn()
		return nil, t.err, false
	}
	if err := w.dial(ctx); err != nil {
		return nil, err, false
	}
	o, conn, rd := w.c.Options(), w.conn, w.rd
	conn.SetWriteDeadline(ioDeadline(ctx, o.WriteTimeout))
	conn.SetReadDeadline(ioDeadline(ctx, o.ReadTimeout))
	// A cancelled ctx ends a blocked write or read at once.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fail := func(err error) ([]error, error, bool) {
		stop()
		w.closeConn()
		return nil, err, true
	}
	buf := append(t.buf, respExec...)
	t.buf = buf[:len(t.buf)] // EXEC is not part of the queue
	if _, err := conn.Write(buf); err != nil {
		return fail(err)
	}
	multiErr, err := rd.status()
	if err != nil {
		return fail(err)
	}
	errs = make([]error, len(t.cmds))
	for i := range t.cmds {
		// QUEUED, or the command's refusal (EXEC then aborts); after a
		// refused MULTI, the command's own reply.
		if errs[i], err = rd.status(); err != nil {
			return fail(err)
		}
	}
	line, err := rd.line()
	if err != nil {
		return fail(err)
	}
	switch {
	case line[0] == '-':
		execErr := respError(line[1:])
		for i, e := range errs {
			if e == nil {
				errs[i] = execErr
			}
		}
		if multiErr != nil {
			return errs, multiErr, false
		}
		return errs, execErr, false
	case line[0] != '*':
		return fail(fmt.Errorf("%w: exec replied %q", errProtocol, clip(line)))
	}
	n, err := parseLen(line[1:])
	if err != nil {
		return fail(err)
	}
	if n < 0 {
		return nil, errors.New("exec: transaction aborted (WATCH)"), false
	}
	if n != len(t.cmds) {
		return fail(fmt.Errorf("%w: exec replied %d results to %d commands", errProtocol, n, len(t.cmds)))
	}
	for i := range errs {
		if errs[i], err = rd.status(); err != nil {
			return fail(err)
		}
	}
	for _, e := range errs {
		if e != nil {
			return errs, e, false
		}
	}
	return errs, multiErr, false
}

// Dial opens the writer's connection now; otherwise the first Flush
// opens it. A daemon that starts with nothing to write (an empty
// CONFIG_DB) would pay for the dial inside its first burst: tens of ms
// under the VM's emulation (connect, AUTH, SELECT), a first change's
// latency on any machine. A failed dial is only reported: Flush dials
// again.
func (w *StateWriter) Dial(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dial(ctx)
}

// dial makes sure the writer has its connection (under mu).
func (w *StateWriter) dial(ctx context.Context) error {
	if w.conn != nil {
		return nil
	}
	o := w.c.Options()
	conn, rd, err := dialRaw(ctx, o, o.DB)
	if err != nil {
		return err
	}
	w.conn, w.rd = conn, rd
	return nil
}

// closeConn closes the writer's connection; the next flush dials again.
func (w *StateWriter) closeConn() {
	if w.conn != nil {
		w.conn.Close()
	}
	w.conn, w.rd = nil, nil
}

// spiller returns Flush's txWriter.spill: it sends the start of a big
// transaction on the writer's connection.
func (w *StateWriter) spiller(ctx context.Context) func([]byte) error {
	return func(b []byte) error {
		if err := w.dial(ctx); err != nil {
			return err
		}
		w.conn.SetWriteDeadline(ioDeadline(ctx, w.c.Options().WriteTimeout))
		_, err := w.conn.Write(b)
		return err
	}
}

// status reads a reply that is a status, an integer or a bulk string (its
// value dropped): nil, or the reply's respError. err is an I/O or
// protocol error.
func (p *pushReader) status() (reply error, err error) {
	line, err := p.line()
	if err != nil {
		return nil, err
	}
	switch line[0] {
	case '+', ':':
		return nil, nil
	case '-':
		return respError(line[1:]), nil
	case '$':
		size, err := parseLen(line[1:])
		if err != nil || size < 0 {
			return nil, err
		}
		p.scratch = p.scratch[:0]
		err = p.bulkBody(size)
		p.scratch = shrinkScratch(p.scratch)
		return nil, err
	}
	return nil, fmt.Errorf("%w: want a status, got %q", errProtocol, clip(line))
}

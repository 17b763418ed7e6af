package redisx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// oddHashes are hashes whose fields and values go-redis and the reply
// reader must read alike: binary, CRLF and RESP markers inside, empty
// names and values, a 1 MB value, many fields, NULL alone and beside
// others.
func oddHashes() map[string]map[string]string {
	many := map[string]string{}
	for i := 0; i < 5000; i++ {
		many[fmt.Sprintf("f%d", i)] = strings.Repeat("v", i%97)
	}
	bin := string([]byte{0, 1, 2, 0xff, 0xfe, '\r', '\n', '$', '*', '-', 0})
	return map[string]map[string]string{
		"T|binary":   {bin: bin, "x": "\x00"},
		"T|crlf":     {"a\r\nb": "\r\n", "$3\r\nabc": "*2\r\n", "-ERR": "+OK\r\n"},
		"T|empty":    {"": "", "e": ""},
		"T|big":      {"v": strings.Repeat("0123456789abcdef", 1<<16)},
		"T|many":     many,
		"T|nullonly": {NullField: NullField},
		"T|null+one": {NullField: NullField, "mtu": "9100"},
		"T|utf8":     {"ключ": "значение ✓", "emoji": "😀"},
	}
}

// rawConnTo dials the server of c with dialRaw on c's DB.
func rawConnTo(t *testing.T, c *redis.Client) *readConn {
	t.Helper()
	conn, rd, err := dialRaw(context.Background(), c.Options(), c.Options().DB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &readConn{conn: conn, rd: rd}
}

// TestReplyReaderMatchesGoRedis: every odd hash, an absent key, a string
// key (WRONGTYPE) and odd string values read in one pipeline by the reply
// reader give what go-redis' HGetAll and Get give (NULL removed).
func TestReplyReaderMatchesGoRedis(t *testing.T) {
	_, cn := startRedis(t)
	c := cn.DB(3)
	ctx := context.Background()
	hashes := oddHashes()
	for k, h := range hashes {
		if err := c.HSet(ctx, k, h).Err(); err != nil {
			t.Fatal(err)
		}
	}
	strs := map[string]string{"s-empty": "", "s-crlf": "a\r\n$-1\r\n", "s-big": strings.Repeat("x", 1<<20+3), "s-bin": "\x00\xff"}
	for k, v := range strs {
		if err := c.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rc := rawConnTo(t, c)
	var buf []byte
	var hkeys, skeys []string
	for k := range hashes {
		hkeys = append(hkeys, k)
	}
	hkeys = append(hkeys, "T|absent", "s-crlf") // s-crlf: WRONGTYPE
	for k := range strs {
		skeys = append(skeys, k)
	}
	skeys = append(skeys, "s-absent", "T|many") // T|many: WRONGTYPE
	for _, k := range hkeys {
		buf = appendCommand(buf, "HGETALL", k)
	}
	for _, k := range skeys {
		buf = appendCommand(buf, "GET", k)
	}
	if _, err := rc.conn.Write(buf); err != nil {
		t.Fatal(err)
	}
	for _, k := range hkeys {
		got, gerr := rc.rd.hash()
		want, werr := c.HGetAll(ctx, k).Result()
		if (gerr == nil) != (werr == nil) || (werr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("hgetall %s: error %v, go-redis %v", k, gerr, werr)
		}
		if werr != nil {
			if !isServerError(gerr) {
				t.Fatalf("hgetall %s: %v is not a server error", k, gerr)
			}
			continue
		}
		if len(want) == 0 {
			if got != nil {
				t.Fatalf("hgetall %s (absent): %v, want nil", k, got)
			}
			continue
		}
		delete(want, NullField)
		if got == nil || !maps.Equal(got, want) {
			t.Fatalf("hgetall %s: %d fields differ from go-redis' %d", k, len(got), len(want))
		}
	}
	for _, k := range skeys {
		got, null, gerr := rc.rd.bulk()
		want, werr := c.Get(ctx, k).Result()
		switch {
		case errors.Is(werr, redis.Nil):
			if !null || gerr != nil {
				t.Fatalf("get %s: %q null=%v %v, want null", k, got, null, gerr)
			}
		case werr != nil:
			if gerr == nil || gerr.Error() != werr.Error() || !isServerError(gerr) {
				t.Fatalf("get %s: error %v, go-redis %v", k, gerr, werr)
			}
		case gerr != nil || null || got != want:
			t.Fatalf("get %s: %d bytes null=%v %v, go-redis %d bytes", k, len(got), null, gerr, len(want))
		}
	}
}

// TestReplyReaderRejects: replies that are not what HGETALL or GET send
// are protocol errors (the connection is dropped), not events.
func TestReplyReaderRejects(t *testing.T) {
	for _, in := range []string{
		"*1\r\n$1\r\na\r\n",                // odd element count
		"*2\r\n$1\r\na\r\n:1\r\n",          // an integer inside
		"*2\r\n$1\r\na\r\n$-1\r\n",         // a null inside
		"*2\r\n$1\r\na\r\n$1\r\nbXY",       // bulk not ended by CRLF
		"+OK\r\n",                          // a status
		"*2\r\n$1\r\na\r\n$9999999999\r\n", // absurd length
		"*2\r\n$1\r\na\r\n$5\r\nab",        // cut short
	} {
		_, err := newPushReader(strings.NewReader(in)).hash()
		if err == nil || isServerError(err) {
			t.Errorf("hash(%q) = %v, want a protocol or I/O error", in, err)
		}
	}
	for _, in := range []string{"*1\r\n$1\r\na\r\n", ":1\r\n", "$3\r\nabXY", "$-2\r\n"} {
		_, _, err := newPushReader(strings.NewReader(in)).bulk()
		if err == nil || isServerError(err) {
			t.Errorf("bulk(%q) = %v, want a protocol or I/O error", in, err)
		}
	}
}

// FuzzReplyReader: any bytes read as HGETALL, GET and the transaction's
// status replies give a value
// or an error, never a panic or an endless read; a hash re-encoded reads
// back the same.
func FuzzReplyReader(f *testing.F) {
	f.Add([]byte("*4\r\n$3\r\nmtu\r\n$4\r\n9100\r\n$4\r\nNULL\r\n$4\r\nNULL\r\n$-1\r\n"))
	f.Add([]byte("*0\r\n$3\r\nabc\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"))
	f.Add([]byte("-NOPERM this user has no permissions to access one of the keys used as arguments\r\n$0\r\n\r\n"))
	f.Add([]byte("*2\r\n$2\r\na\n\r\n$0\r\n\r\n*-1\r\n"))
	f.Add([]byte("*0\r\n$-1\r\n+QUEUED\r\n*0\r\n$1\r\nx\r\n:1\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := newPushReader(bytes.NewReader(data))
		for i := 0; i < len(data)+1; i++ {
			switch i % 3 {
			case 1:
				if _, _, err := rd.bulk(); err != nil && !isServerError(err) {
					return
				}
				continue
			case 2: // the StateWriter's transaction replies
				if reply, err := rd.status(); err != nil {
					return
				} else if reply != nil && !isServerError(reply) {
					t.Fatalf("status reply %v is not a server error", reply)
				}
				continue
			}
			h, err := rd.hash()
			if err != nil {
				if isServerError(err) {
					continue
				}
				return
			}
			var enc []byte
			args := []string{}
			for k, v := range h {
				args = append(args, k, v)
			}
			enc = appendCommand(enc, args...)
			back, err := newPushReader(bytes.NewReader(enc)).hash()
			if err != nil || (len(h) > 0 && !maps.Equal(back, h)) || (len(h) == 0 && back != nil) {
				t.Fatalf("%q re-encoded as %q read back as %q, %v", h, enc, back, err)
			}
		}
		t.Fatal("more replies than bytes")
	})
}

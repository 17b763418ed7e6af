package redisx

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/switchyard-net/switchyard/internal/shrink"
)

// hashReply encodes h as an HGETALL reply, fields in map order.
func hashReply(h map[string]string) []byte {
	args := []string{}
	for k, v := range h {
		args = append(args, k, v)
	}
	return appendCommand(nil, args...) // an array of bulks, as HGETALL's
}

// samePackedRead reads data once with hash and once with hashPacked and
// fails unless they agree: the same error (or none), exists exactly when
// hash found the key, packed = shrink.Pack of hash's map. It reports
// whether both read a reply (false: an error ended the stream).
func samePackedRead(t *testing.T, a, b *pushReader) bool {
	t.Helper()
	h, herr := a.hash()
	packed, exists, perr := b.hashPacked()
	if (herr == nil) != (perr == nil) || herr != nil && herr.Error() != perr.Error() {
		t.Fatalf("hash: %v, hashPacked: %v", herr, perr)
	}
	if herr != nil {
		return isServerError(herr)
	}
	if exists != (h != nil) || packed != shrink.Pack(h) {
		t.Fatalf("hash read %q (nil %v), hashPacked %q exists %v, want %q", h, h == nil, packed, exists, shrink.Pack(h))
	}
	return true
}

// The packed read of every odd hash (binary, CRLF inside, empty names,
// NULL alone and beside others, 5,000 fields, 1 MB), of an absent key and
// of an error reply is the map read, packed.
func TestHashPackedMatchesHash(t *testing.T) {
	var data []byte
	for _, h := range oddHashes() {
		data = append(data, hashReply(h)...)
	}
	data = append(data, "*0\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"...)
	a, b := newPushReader(bytes.NewReader(data)), newPushReader(bytes.NewReader(data))
	for i := 0; i < len(oddHashes())+2; i++ {
		if !samePackedRead(t, a, b) {
			t.Fatalf("reply %d ended the stream", i)
		}
	}
	if _, _, err := b.hashPacked(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the replies: %v, want EOF", err)
	}
}

// FuzzHashPacked: any bytes read with hashPacked give what hash gives,
// packed (or the same error), never a panic.
func FuzzHashPacked(f *testing.F) {
	f.Add([]byte("*4\r\n$6\r\nifname\r\n$9\r\nEthernet0\r\n$7\r\nnexthop\r\n$8\r\n10.0.0.2\r\n"))
	f.Add([]byte("*4\r\n$3\r\nmtu\r\n$4\r\n9100\r\n$4\r\nNULL\r\n$4\r\nNULL\r\n*0\r\n"))
	f.Add([]byte("*2\r\n$4\r\nNULL\r\n$4\r\nNULL\r\n-NOPERM no\r\n*1\r\n$1\r\na\r\n"))
	f.Add([]byte("*6\r\n$1\r\nb\r\n$0\r\n\r\n$1\r\na\r\n$1\r\n\x00\r\n$0\r\n\r\n$0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := newPushReader(bytes.NewReader(data)), newPushReader(bytes.NewReader(data))
		for i := 0; i <= len(data); i++ {
			if !samePackedRead(t, a, b) {
				return
			}
		}
		t.Fatal("more replies than bytes")
	})
}

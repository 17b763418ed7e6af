package e2eutil

import "strings"

// HasLine reports whether one line the process printed so far holds every
// part (all on the same line: one log record).
func (p *Proc) HasLine(parts ...string) bool {
	for _, line := range strings.Split(p.Output(), "\n") {
		ok := true
		for _, part := range parts {
			ok = ok && strings.Contains(line, part)
		}
		if ok {
			return true
		}
	}
	return false
}

// WaitLog waits until the process has printed a line holding every part;
// what names the line in the failure message.
func (p *Proc) WaitLog(what string, parts ...string) {
	p.t.Helper()
	Eventually(p.t, Wait, p.name+" logs "+what, func() (bool, string) {
		return p.HasLine(parts...), "no such line yet"
	})
}

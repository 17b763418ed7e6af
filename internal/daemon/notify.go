package daemon

import (
	"fmt"
	"net"
	"os"

	"github.com/sirupsen/logrus"
)

// Notify sends state (e.g. "READY=1", "STOPPING=1") to the service manager
// at $NOTIFY_SOCKET, as sd_notify(3) does: one datagram on a unix socket,
// an address starting with '@' being in the abstract namespace. Without
// $NOTIFY_SOCKET (not started by systemd with Type=notify) it does nothing
// and returns false.
func Notify(state string) (bool, error) {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return false, nil
	}
	if addr[0] == '@' {
		addr = "\x00" + addr[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return false, fmt.Errorf("notify socket %s: %w", os.Getenv("NOTIFY_SOCKET"), err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return false, fmt.Errorf("notify socket %s: send %q: %w", os.Getenv("NOTIFY_SOCKET"), state, err)
	}
	return true, nil
}

// NotifyReady tells systemd (Type=notify) that the daemon is ready: called
// once its first full reconcile is done. A failure is logged, not fatal.
func NotifyReady(log *logrus.Entry) {
	sent, err := Notify("READY=1")
	switch {
	case err != nil:
		log.WithError(err).Warn("cannot tell systemd the daemon is ready")
	case sent:
		log.Info("ready: told systemd (READY=1)")
	}
}

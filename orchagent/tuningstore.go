package orchagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultStateDir is where orchagent keeps what must survive its own
// restart but not a reboot (tmpfs /run): the values PORT_TUNING replaced.
const DefaultStateDir = "/run/switchyard"

// tuningStore is the original value of every kernel file PORT_TUNING has
// written, per port, persisted to one JSON file per namespace
// (<dir>/orchagent/port_tuning-<netns>.json) before the first write, so a
// restarted orchagent still restores the originals. /run is emptied by a
// reboot, as are the values themselves.
type tuningStore struct {
	path string
	data tuningData
}

type tuningData struct {
	// BootID is the kernel's boot_id when the file was written: a file
	// from another boot (a /run that is not a tmpfs, a container volume)
	// describes devices and values that are gone, and is ignored.
	BootID string `json:"boot_id"`
	// Ports holds, per port, the device it was read from and the
	// original content of each file written (path → value).
	Ports map[string]*savedPort `json:"ports"`
	// SockFlow is net.core.rps_sock_flow_entries before the first
	// write, and what was written last (restored only while it still
	// holds that).
	SockFlow *savedGlobal `json:"rps_sock_flow_entries,omitempty"`
}

type savedPort struct {
	Ifindex int               `json:"ifindex"`
	Files   map[string]string `json:"files"`
}

type savedGlobal struct {
	Original string `json:"original"`
	Written  string `json:"written"`
}

// openTuningStore loads the store of namespace netns ("" = the current
// one) under dir; a missing file is an empty store.
func openTuningStore(dir, netns string) (*tuningStore, error) {
	if netns == "" {
		netns = "default"
	}
	s := &tuningStore{path: filepath.Join(dir, "orchagent", "port_tuning-"+netns+".json")}
	b, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read saved PORT_TUNING originals: %w", err)
	default:
		if err := json.Unmarshal(b, &s.data); err != nil {
			return nil, fmt.Errorf("read saved PORT_TUNING originals %s: %w (remove it to forget them)", s.path, err)
		}
		if s.data.BootID != bootID() {
			s.data = tuningData{}
		}
	}
	if s.data.Ports == nil {
		s.data.Ports = map[string]*savedPort{}
	}
	return s, nil
}

// save writes the store atomically (temp file, rename); an empty store
// removes the file.
func (s *tuningStore) save() error {
	if len(s.data.Ports) == 0 && s.data.SockFlow == nil {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", s.path, err)
		}
		return nil
	}
	s.data.BootID = bootID()
	b, err := json.MarshalIndent(&s.data, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("save PORT_TUNING originals: %w", err)
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("save PORT_TUNING originals: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("save PORT_TUNING originals: %w", err)
	}
	return nil
}

// bootID is /proc/sys/kernel/random/boot_id ("" where unreadable).
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

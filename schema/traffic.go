package schema

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// TRAFFIC_GEN|<port>|<name>: a background traffic stream trafficd sends
// out of a switch port (docs/trafficd.md).

// TableTrafficGen is the CONFIG_DB table of background traffic streams.
const TableTrafficGen = "TRAFFIC_GEN"

// TrafficGenCountersTable is the COUNTERS_DB table of the streams:
// TRAFFIC_GEN_COUNTERS:<port>|<name>.
const TrafficGenCountersTable = "TRAFFIC_GEN_COUNTERS"

// TRAFFIC_GEN field names (src, dst, proto, sport, dport, dscp, vlan, rate
// and seed share the IMPAIRMENT_FLOW / IMPAIRMENT names).
const (
	FieldTrafficSize     = "size"
	FieldTrafficSrcMAC   = "src_mac"
	FieldTrafficDstMAC   = "dst_mac"
	FieldTrafficPattern  = "pattern"
	FieldTrafficOn       = "on"
	FieldTrafficOff      = "off"
	FieldTrafficDuration = "duration"
	FieldTrafficCount    = "count"
	FieldTrafficPath     = "path"
)

// Limits of the TRAFFIC_GEN fields.
const (
	// MinFrameSize and MaxFrameSize bound size: Ethernet frames including
	// the 4-byte FCS, as RFC 2544 and Linux pktgen count them.
	MinFrameSize = 64
	MaxFrameSize = 9216
	// FCSLen is the frame check sequence the NIC (not the generator)
	// appends; a size-byte frame is handed to the kernel as size-4 bytes.
	FCSLen = 4
	// MaxTrafficPPS bounds a packet rate.
	MaxTrafficPPS = 1_000_000_000
	// MaxTrafficDuration bounds duration, on and off.
	MaxTrafficDuration = 30 * 24 * time.Hour
)

// TrafficPattern is how a stream spaces its packets.
type TrafficPattern string

// Patterns: evenly spaced; on/off bursts at rate during on; exponential
// gaps (a Poisson process) with rate as the mean.
const (
	PatternConstant TrafficPattern = "constant"
	PatternBursty   TrafficPattern = "bursty"
	PatternPoisson  TrafficPattern = "poisson"
)

// TrafficPath is the transmit path a stream asks for.
type TrafficPath string

// Paths: auto tries AF_XDP and falls back to the packet socket.
const (
	PathAuto   TrafficPath = "auto"
	PathXDP    TrafficPath = "xdp"
	PathPacket TrafficPath = "packet"
)

// SizeKind is the frame size distribution of a stream.
type SizeKind string

// Size distributions.
const (
	SizeFixed   SizeKind = "fixed"
	SizeUniform SizeKind = "uniform"
	SizeIMIX    SizeKind = "imix"
)

// IMIX is the simple IMIX: 7 frames of 64, 4 of 576 and 1 of 1500 bytes
// in every 12 (sizes with FCS).
var IMIX = []struct{ Size, Weight int }{{64, 7}, {576, 4}, {1500, 1}}

// FrameSizes is a stream's size distribution; Min = Max for fixed.
type FrameSizes struct {
	Kind     SizeKind
	Min, Max int
}

// String renders the size as the field takes it.
func (s FrameSizes) String() string {
	switch s.Kind {
	case SizeIMIX:
		return string(SizeIMIX)
	case SizeUniform:
		return fmt.Sprintf("uniform %d-%d", s.Min, s.Max)
	}
	return strconv.Itoa(s.Min)
}

// TrafficGen is a TRAFFIC_GEN entry "port|name".
type TrafficGen struct {
	Port, Name string
	// Rate is packets/s, or bit/s (frames with FCS) when RateBits.
	Rate     uint64
	RateBits bool
	Size     FrameSizes
	// SrcMAC nil = the port's MAC; DstMAC nil = broadcast.
	SrcMAC, DstMAC net.HardwareAddr
	// Src and Dst: invalid = the defaults of the family (DefaultSrc/Dst).
	Src, Dst     netip.Addr
	Proto        string // udp, tcp or icmp (echo request; ICMPv6 over IPv6)
	Sport, Dport int    // -1 = default (DefaultSport, DefaultDport)
	VLAN         int    // 802.1Q VID 1-4094; 0 = untagged
	DSCP         int    // 0-63; -1 = not given (0)
	Pattern      TrafficPattern
	On, Off      time.Duration // bursty only
	Duration     time.Duration // 0 = until deleted
	Count        uint64        // 0 = no limit
	Seed         *uint64       // uniform sizes, poisson gaps; nil = 1
	Path         TrafficPath
}

// Defaults of the addressing fields: the RFC 2544 / RFC 5180 benchmarking
// ranges (never routed), UDP to the discard port.
var (
	DefaultSrc4 = netip.MustParseAddr("198.18.0.1")
	DefaultDst4 = netip.MustParseAddr("198.19.0.1")
	DefaultSrc6 = netip.MustParseAddr("2001:2::1")
	DefaultDst6 = netip.MustParseAddr("2001:2::2")
)

// Default L4 ports.
const (
	DefaultSport = 1024
	DefaultDport = 9
)

// Table implements Record.
func (r TrafficGen) Table() string { return TableTrafficGen }

// Key implements Record.
func (r TrafficGen) Key() string { return r.Port + ConfigSep + r.Name }

// Is6 reports whether the stream is IPv6.
func (r TrafficGen) Is6() bool {
	return (r.Src.IsValid() && r.Src.Is6()) || (r.Dst.IsValid() && r.Dst.Is6())
}

// Addrs are the source and destination, defaults filled in.
func (r TrafficGen) Addrs() (src, dst netip.Addr) {
	src, dst = r.Src, r.Dst
	if r.Is6() {
		if !src.IsValid() {
			src = DefaultSrc6
		}
		if !dst.IsValid() {
			dst = DefaultDst6
		}
		return src, dst
	}
	if !src.IsValid() {
		src = DefaultSrc4
	}
	if !dst.IsValid() {
		dst = DefaultDst4
	}
	return src, dst
}

// Ports are the L4 ports, defaults filled in.
func (r TrafficGen) Ports() (sport, dport int) {
	sport, dport = r.Sport, r.Dport
	if sport < 0 {
		sport = DefaultSport
	}
	if dport < 0 {
		dport = DefaultDport
	}
	return sport, dport
}

// HeaderLen is the bytes of headers in every frame, FCS included: the
// smallest size the stream can have.
func (r TrafficGen) HeaderLen() int {
	n := 14 + FCSLen
	if r.VLAN != 0 {
		n += 4
	}
	if r.Is6() {
		n += 40
	} else {
		n += 20
	}
	if r.Proto == "tcp" {
		return n + 20
	}
	return n + 8 // UDP, ICMP echo
}

// FormatTrafficRate renders a rate as the field takes it.
func FormatTrafficRate(rate uint64, bits bool) string {
	if bits {
		return FormatRate(rate)
	}
	return strconv.FormatUint(rate, 10) + "pps"
}

// Fields implements Record.
func (r TrafficGen) Fields() Fields {
	f := Fields{FieldRate: FormatTrafficRate(r.Rate, r.RateBits)}
	if r.Size.Kind != SizeFixed || r.Size.Min != MinFrameSize {
		f[FieldTrafficSize] = r.Size.String()
	}
	if r.SrcMAC != nil {
		f[FieldTrafficSrcMAC] = r.SrcMAC.String()
	}
	if r.DstMAC != nil {
		f[FieldTrafficDstMAC] = r.DstMAC.String()
	}
	if r.Src.IsValid() {
		f[FieldSrc] = r.Src.String()
	}
	if r.Dst.IsValid() {
		f[FieldDst] = r.Dst.String()
	}
	if r.Proto != "udp" {
		f[FieldProto] = r.Proto
	}
	if r.Sport >= 0 {
		f[FieldSport] = strconv.Itoa(r.Sport)
	}
	if r.Dport >= 0 {
		f[FieldDport] = strconv.Itoa(r.Dport)
	}
	if r.VLAN != 0 {
		f[FieldFlowVLAN] = strconv.Itoa(r.VLAN)
	}
	if r.DSCP >= 0 {
		f[FieldDSCP] = strconv.Itoa(r.DSCP)
	}
	if r.Pattern != PatternConstant {
		f[FieldTrafficPattern] = string(r.Pattern)
	}
	if r.Pattern == PatternBursty {
		f[FieldTrafficOn] = formatEDTDuration(r.On)
		f[FieldTrafficOff] = formatEDTDuration(r.Off)
	}
	if r.Duration != 0 {
		f[FieldTrafficDuration] = formatEDTDuration(r.Duration)
	}
	if r.Count != 0 {
		f[FieldTrafficCount] = strconv.FormatUint(r.Count, 10)
	}
	if r.Seed != nil {
		f[FieldSeed] = strconv.FormatUint(*r.Seed, 10)
	}
	if r.Path != PathAuto {
		f[FieldTrafficPath] = string(r.Path)
	}
	return f
}

// trafficFields are the fields TRAFFIC_GEN takes.
var trafficFields = []string{
	FieldRate, FieldTrafficSize, FieldTrafficSrcMAC, FieldTrafficDstMAC, FieldSrc, FieldDst, FieldProto,
	FieldSport, FieldDport, FieldFlowVLAN, FieldDSCP, FieldTrafficPattern, FieldTrafficOn, FieldTrafficOff,
	FieldTrafficDuration, FieldTrafficCount, FieldSeed, FieldTrafficPath,
}

func init() {
	RegisterTable(TableTrafficGen, func(k string, f Fields) (Record, error) { return wrap(ParseTrafficGen(k, f)) })
}

// Allowed-value texts of the TRAFFIC_GEN errors.
const (
	trafficRateAllowed = "packets/s such as 10000pps, 1kpps or 1.5mpps, or bit/s such as 100mbit or 1gbit (kbps/mbps/gbps are bytes/s as in tc)"
	trafficSizeAllowed = "a frame size in bytes with FCS (64-9216), uniform MIN-MAX (e.g. uniform 64-1500) or imix (7:4:1 of 64/576/1500)"
	trafficDurHint     = "a duration such as 10s, 500ms or 2m"
)

// ParseTrafficGen parses and validates a TRAFFIC_GEN entry "port|name".
func ParseTrafficGen(key string, f Fields) (TrafficGen, error) {
	var zero TrafficGen
	t := TableTrafficGen
	parts := strings.Split(key, ConfigSep)
	const allowed = "port|name, e.g. Ethernet0|bg1"
	if len(parts) != 2 {
		return zero, keyError(t, key, "key needs exactly two parts", allowed)
	}
	if p := impPortProblem(parts[0]); p != "" {
		return zero, keyError(t, key, p, allowed)
	}
	if p := flowNameProblem(parts[1]); p != "" {
		return zero, keyError(t, key, strings.Replace(p, "flow name", "stream name", 1), allowed)
	}
	r := TrafficGen{Port: parts[0], Name: parts[1], Size: FrameSizes{SizeFixed, MinFrameSize, MinFrameSize},
		Proto: "udp", Sport: -1, Dport: -1, DSCP: -1, Pattern: PatternConstant, Path: PathAuto}
	v, ok := f[FieldRate]
	if !ok {
		return zero, fieldError(t, key, FieldRate, "", "rate is required", trafficRateAllowed)
	}
	if r.Rate, r.RateBits, ok = parseTrafficRate(v); !ok {
		return zero, valueError(t, key, FieldRate, v, trafficRateAllowed)
	}
	if v, ok := f[FieldTrafficSize]; ok {
		if r.Size, ok = parseFrameSizes(v); !ok {
			return zero, valueError(t, key, FieldTrafficSize, v, trafficSizeAllowed)
		}
	}
	for _, m := range []struct {
		name string
		dst  *net.HardwareAddr
	}{{FieldTrafficSrcMAC, &r.SrcMAC}, {FieldTrafficDstMAC, &r.DstMAC}} {
		v, ok := f[m.name]
		if !ok {
			continue
		}
		mac, ok := parseMAC(v)
		if !ok {
			return zero, valueError(t, key, m.name, v, "a 48-bit MAC such as 02:00:00:00:00:01")
		}
		if m.name == FieldTrafficSrcMAC && mac[0]&1 != 0 {
			return zero, fieldError(t, key, m.name, v, "a source MAC cannot be multicast or broadcast", "")
		}
		*m.dst = mac
	}
	for _, a := range []struct {
		name string
		dst  *netip.Addr
	}{{FieldSrc, &r.Src}, {FieldDst, &r.Dst}} {
		v, ok := f[a.name]
		if !ok {
			continue
		}
		ip, err := netip.ParseAddr(v)
		if err != nil || ip.Zone() != "" {
			return zero, valueError(t, key, a.name, v, "an IPv4 or IPv6 address such as 198.18.0.1 or 2001:2::1")
		}
		if ip.Is4In6() {
			return zero, fieldError(t, key, a.name, v, "IPv4-mapped IPv6 addresses are not supported: use the IPv4 form", "")
		}
		*a.dst = ip
	}
	if r.Src.IsValid() && r.Dst.IsValid() && r.Src.Is4() != r.Dst.Is4() {
		return zero, fieldError(t, key, FieldDst, f[FieldDst], "src and dst are of different address families", "")
	}
	if v, ok := f[FieldProto]; ok {
		switch v {
		case "udp", "tcp", "icmp":
			r.Proto = v
		default:
			return zero, valueError(t, key, FieldProto, v, "udp, tcp or icmp (echo requests; ICMPv6 when src/dst are IPv6)")
		}
	}
	for _, pf := range []struct {
		name string
		dst  *int
	}{{FieldSport, &r.Sport}, {FieldDport, &r.Dport}} {
		v, ok := f[pf.name]
		if !ok {
			continue
		}
		if r.Proto == "icmp" {
			return zero, fieldError(t, key, pf.name, v, "ports need proto udp or tcp", "")
		}
		n, ok := impDigits(v)
		if !ok || n > 65535 {
			return zero, valueError(t, key, pf.name, v, "a port 0-65535")
		}
		*pf.dst = n
	}
	if v, ok := f[FieldFlowVLAN]; ok {
		n, ok := impDigits(v)
		if !ok || n < MinVlanID || n > MaxVlanID {
			return zero, valueError(t, key, FieldFlowVLAN, v, "a VLAN ID 1-4094 (the frames carry an 802.1Q tag)")
		}
		r.VLAN = n
	}
	if v, ok := f[FieldDSCP]; ok {
		n, ok := impDigits(v)
		if !ok || n > 63 {
			return zero, valueError(t, key, FieldDSCP, v, "an integer 0-63")
		}
		r.DSCP = n
	}
	if err := parseTrafficTiming(t, key, f, &r); err != nil {
		return zero, err
	}
	if v, ok := f[FieldSeed]; ok {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil || strings.HasPrefix(v, "+") {
			return zero, valueError(t, key, FieldSeed, v, "an unsigned 64-bit integer")
		}
		r.Seed = &s
	}
	if v, ok := f[FieldTrafficPath]; ok {
		switch TrafficPath(v) {
		case PathAuto, PathXDP, PathPacket:
			r.Path = TrafficPath(v)
		default:
			return zero, valueError(t, key, FieldTrafficPath, v, "auto (AF_XDP, else packet socket), xdp or packet")
		}
	}
	if min := r.HeaderLen(); r.Size.Min < min {
		return zero, fieldError(t, key, FieldTrafficSize, r.Size.String(), fmt.Sprintf(
			"frames of %d bytes cannot hold the headers: %s needs at least %d bytes with FCS", r.Size.Min, r.headerText(), min), "")
	}
	return r, nil
}

// headerText names the headers of a frame ("802.1Q IPv6 UDP").
func (r TrafficGen) headerText() string {
	s := "Ethernet"
	if r.VLAN != 0 {
		s += " 802.1Q"
	}
	if r.Is6() {
		s += " IPv6 "
	} else {
		s += " IPv4 "
	}
	if r.Proto == "icmp" {
		return s + "ICMP echo"
	}
	return s + strings.ToUpper(r.Proto)
}

// parseTrafficTiming reads pattern, on, off, duration and count.
func parseTrafficTiming(t, key string, f Fields, r *TrafficGen) error {
	dur := func(name string) (time.Duration, bool, error) {
		v, ok := f[name]
		if !ok {
			return 0, false, nil
		}
		d, err := parseEDTDuration(name, v, MaxTrafficDuration)
		if err != nil {
			return 0, true, valueError(t, key, name, v, trafficDurHint+" (units ns, us, ms, s; at most 30 days)")
		}
		if d == 0 {
			return 0, true, fieldError(t, key, name, v, name+" must be more than 0", trafficDurHint)
		}
		return d, true, nil
	}
	if v, ok := f[FieldTrafficPattern]; ok {
		switch TrafficPattern(v) {
		case PatternConstant, PatternBursty, PatternPoisson:
			r.Pattern = TrafficPattern(v)
		default:
			return valueError(t, key, FieldTrafficPattern, v, "constant, bursty (needs on and off) or poisson")
		}
	}
	for _, p := range []struct {
		name string
		dst  *time.Duration
	}{{FieldTrafficOn, &r.On}, {FieldTrafficOff, &r.Off}} {
		d, ok, err := dur(p.name)
		if err != nil {
			return err
		}
		if ok && r.Pattern != PatternBursty {
			return fieldError(t, key, p.name, f[p.name], fmt.Sprintf("%s needs pattern bursty (pattern is %s)", p.name, r.Pattern), "")
		}
		if !ok && r.Pattern == PatternBursty {
			return fieldError(t, key, p.name, "", "pattern bursty needs on and off", trafficDurHint)
		}
		*p.dst = d
	}
	d, _, err := dur(FieldTrafficDuration)
	if err != nil {
		return err
	}
	r.Duration = d
	if v, ok := f[FieldTrafficCount]; ok {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n < 1 || strings.HasPrefix(v, "+") || n > math.MaxInt64 {
			return valueError(t, key, FieldTrafficCount, v, "a number of packets >= 1")
		}
		r.Count = n
	}
	return nil
}

// pps units of a packet rate.
var ppsUnits = []struct {
	suffix string
	mult   float64
}{{"gpps", 1e9}, {"mpps", 1e6}, {"kpps", 1e3}, {"pps", 1}}

// parseTrafficRate accepts packets/s ("10000pps", "1kpps", "1.5mpps",
// whole packets from 1 to MaxTrafficPPS) or a tc bit rate (ParseRate).
func parseTrafficRate(s string) (uint64, bool, bool) {
	low := strings.ToLower(s)
	for _, u := range ppsUnits {
		if !strings.HasSuffix(low, u.suffix) {
			continue
		}
		x, ok := parseUnsignedDecimal(strings.TrimSuffix(low, u.suffix))
		if !ok {
			return 0, false, false
		}
		p := x * u.mult
		if p != math.Trunc(p) || p < 1 || p > MaxTrafficPPS {
			return 0, false, false
		}
		return uint64(p), false, true
	}
	r, ok := ParseRate(s)
	return r, true, ok
}

// parseFrameSizes accepts "64", "uniform 64-1500" or "imix".
func parseFrameSizes(s string) (FrameSizes, bool) {
	if s == string(SizeIMIX) {
		return FrameSizes{SizeIMIX, 64, 1500}, true
	}
	size := func(v string) (int, bool) {
		n, ok := impDigits(v)
		return n, ok && n >= MinFrameSize && n <= MaxFrameSize
	}
	if rest, ok := strings.CutPrefix(s, string(SizeUniform)+" "); ok {
		lo, hi, ok := strings.Cut(rest, "-")
		a, ok1 := size(lo)
		b, ok2 := size(hi)
		if !ok || !ok1 || !ok2 || b <= a {
			return FrameSizes{}, false
		}
		return FrameSizes{SizeUniform, a, b}, true
	}
	n, ok := size(s)
	return FrameSizes{SizeFixed, n, n}, ok
}

package netlinkmgr

// AddBatch is Add of each address in order; see Addrs.AddBatch.
func (x fakeAddrs) AddBatch(as []AddrInfo) []error {
	errs := make([]error, len(as))
	for i, a := range as {
		errs[i] = x.Add(a)
	}
	return errs
}

// AddBatch is Add of each VLAN in order; see BridgeVlans.AddBatch.
func (x fakeVlans) AddBatch(vs []BridgeVlanInfo) []error {
	errs := make([]error, len(vs))
	for i, v := range vs {
		errs[i] = x.Add(v)
	}
	return errs
}

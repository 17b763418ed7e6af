package schema

// netem's remaining models on IMPAIRMENT and IMPAIRMENT_FLOW: loss
// correlation (loss_corr), the 4-state Markov loss model (loss_model
// state, p13 p31 p32 p23 p14) and duplication (duplicate). The slot
// fields are EDT's (impairment_edt.go).

import (
	"fmt"
	"strconv"
)

// LossState is netem's 4-state Markov loss model ("loss state p13 p31
// p32 p23 p14", Salsano et al.): state 1 good reception, 2 good reception
// within a burst, 3 burst loss, 4 isolated loss.
const LossState LossModel = "state"

// Field names of the netem models.
const (
	FieldLossCorr  = "loss_corr"
	FieldP13       = "p13"
	FieldP31       = "p31"
	FieldP32       = "p32"
	FieldP23       = "p23"
	FieldP14       = "p14"
	FieldDuplicate = "duplicate"
)

// stateFields are the transition probabilities of loss_model state in
// netem's order.
var stateFields = []string{FieldP13, FieldP31, FieldP32, FieldP23, FieldP14}

// modelFields lists the fields parseModels reads.
var modelFields = []string{FieldLossCorr, FieldP13, FieldP31, FieldP32, FieldP23, FieldP14, FieldDuplicate}

// StateDefaults fills the 4-state probabilities tc leaves out as tc does
// ("loss state p13" alone is Bernoulli loss): p31 = 100 - p13, p32 = 0,
// p23 = 100, p14 = 0.
func stateDefaults(p13 float64) [5]float64 { return [5]float64{p13, 100 - p13, 0, 100, 0} }

// parseModels reads loss_corr, p13..p14 and duplicate into p (after the
// loss model and loss are known), marking them used.
func parseModels(t, key string, f Fields, used map[string]bool, p *ImpairmentProfile) error {
	for _, n := range modelFields {
		used[n] = true
	}
	pct := func(name string) (float64, bool, error) {
		v, ok := f[name]
		if !ok {
			return 0, false, nil
		}
		x, ok := parsePercent(v)
		if !ok {
			return 0, true, valueError(t, key, name, v, "a percentage 0-100, decimals allowed (e.g. 0.5)")
		}
		return x, true, nil
	}
	corr, ok, err := pct(FieldLossCorr)
	if err != nil {
		return err
	}
	if ok {
		if p.LossModel != LossRandom {
			return fieldError(t, key, FieldLossCorr, f[FieldLossCorr], fmt.Sprintf("loss_corr needs loss_model random (loss_model is %s)", p.LossModel), "")
		}
		if _, has := f[FieldLoss]; !has {
			return fieldError(t, key, FieldLossCorr, f[FieldLossCorr], "loss_corr needs loss (it correlates the random loss)", "")
		}
		if p.Loss > 0 { // with loss 0 the correlation has nothing to correlate
			p.LossCorr = corr
		}
	}
	var vals [5]float64
	var given [5]bool
	for i, n := range stateFields {
		if vals[i], given[i], err = pct(n); err != nil {
			return err
		}
		if given[i] && p.LossModel != LossState {
			return fieldError(t, key, n, f[n], fmt.Sprintf("%s needs loss_model state (loss_model is %s)", n, p.LossModel), "")
		}
	}
	if p.LossModel == LossState {
		if !given[0] {
			return fieldError(t, key, FieldP13, "", "loss_model state needs p13 (p31, p32, p23, p14 default as in tc)", "a percentage 0-100")
		}
		def := stateDefaults(vals[0])
		for i := range vals {
			if !given[i] {
				vals[i] = def[i]
			}
		}
		p.P13, p.P31, p.P32, p.P23, p.P14 = vals[0], vals[1], vals[2], vals[3], vals[4]
		if p.P13+p.P14 > 100 {
			return fieldError(t, key, FieldP14, f[FieldP14], "p13 + p14 exceed 100 (both leave state 1)", "")
		}
		if p.P31+p.P32 > 100 {
			name := FieldP32
			if !given[2] {
				name = FieldP31
			}
			reason := "p31 + p32 exceed 100 (both leave state 3)"
			if !given[1] {
				reason += "; p31 defaults to 100 - p13 as in tc: give p31"
			}
			return fieldError(t, key, name, f[name], reason, "")
		}
	}
	dup, ok, err := pct(FieldDuplicate)
	if err != nil {
		return err
	}
	if ok {
		p.Duplicate = dup
	}
	return nil
}

// modelsFields renders the netem model fields of p into f.
func (p *ImpairmentProfile) modelsFields(f Fields) {
	pct := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	if p.LossModel == LossRandom && p.LossCorr != 0 {
		f[FieldLossCorr] = pct(p.LossCorr)
	}
	if p.LossModel == LossState {
		f[FieldLossModel] = string(LossState)
		for i, v := range []float64{p.P13, p.P31, p.P32, p.P23, p.P14} {
			f[stateFields[i]] = pct(v)
		}
	}
	if p.Duplicate != 0 {
		f[FieldDuplicate] = pct(p.Duplicate)
	}
}

package layers

import (
	"fmt"
	"strings"

	"strata/stack"
)

// All lists every layer kind, for validation of hand-written stacks.
var All = map[string]stack.Spec{
	BottomSpec.Name: BottomSpec, Pt2ptSpec.Name: Pt2ptSpec, FragSpec.Name: FragSpec,
	Pt2ptwSpec.Name: Pt2ptwSpec, RpcSpec.Name: RpcSpec, TopSpec.Name: TopSpec,
	MnakSpec.Name: MnakSpec, GmsSpec.Name: GmsSpec, StableSpec.Name: StableSpec, MflowSpec.Name: MflowSpec, LocalSpec.Name: LocalSpec, TotalSpec.Name: TotalSpec,
	SuspectSpec.Name: SuspectSpec, ElectSpec.Name: ElectSpec, SyncSpec.Name: SyncSpec,
}

// order is the canonical bottom-to-top order: the point-to-point layers,
// then the group layers (whose casts then ride on whatever point-to-point
// properties were asked for).
var order = []stack.Spec{BottomSpec, Pt2ptSpec, FragSpec, Pt2ptwSpec, RpcSpec, MnakSpec, LocalSpec, SuspectSpec, ElectSpec, GmsSpec, SyncSpec, StableSpec, MflowSpec, TotalSpec, TopSpec}

// knownProps are the properties ParseProps accepts.
var knownProps = []stack.Prop{stack.Reliable, stack.FIFO, stack.Fragment, stack.Flow, stack.RPC, stack.Datagram, stack.Multicast, stack.Stability, stack.SelfDelivery, stack.Total, stack.Membership, stack.Vsync, stack.CastFlow, stack.FailureDetection, stack.Election}

// Choice is a configured stack with the reason each layer is in it.
type Choice struct {
	Specs    []stack.Spec // bottom first
	Reasons  []string
	Provides []stack.Prop
}

// ParseProps reads a comma- or space-separated property list.
func ParseProps(s string) ([]stack.Prop, error) {
	known := map[string]stack.Prop{}
	var names []string
	for _, p := range knownProps {
		known[strings.ToLower(string(p))] = p
		names = append(names, string(p))
	}
	var out []stack.Prop
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '+' }) {
		p, ok := known[strings.ToLower(f)]
		if !ok {
			return nil, fmt.Errorf("unknown property %q (known: %s)", f, strings.Join(names, ", "))
		}
		out = append(out, p)
	}
	return out, nil
}

// Configure chooses the smallest stack that provides every property in
// want, in the canonical order, and validates it.
func Configure(want []stack.Prop) (Choice, error) {
	need := map[stack.Prop]bool{}
	for _, p := range want {
		need[p] = true
	}
	// What each property pulls in (including what its layer requires).
	if need[stack.Fragment] || need[stack.Flow] || need[stack.RPC] {
		need[stack.Reliable] = true
	}
	if need[stack.Fragment] || need[stack.Flow] {
		need[stack.FIFO] = true
	}
	if need[stack.Vsync] {
		need[stack.Membership] = true
	}
	if need[stack.Membership] {
		// Its own messages (flush answers carry casts) need reliable,
		// fragmented point-to-point delivery.
		need[stack.Vsync], need[stack.Multicast], need[stack.Reliable], need[stack.FIFO], need[stack.Fragment] = true, true, true, true, true
		need[stack.FailureDetection], need[stack.Election] = true, true
	}
	if need[stack.Total] {
		need[stack.SelfDelivery] = true
	}
	if need[stack.Total] || need[stack.SelfDelivery] || need[stack.Stability] {
		need[stack.Multicast] = true
	}
	if need[stack.Multicast] {
		// mnak keeps every cast until it is stable, and a sender must
		// not outrun stability without bound.
		need[stack.Stability], need[stack.CastFlow] = true, true
	}
	if need[stack.CastFlow] || need[stack.Stability] {
		need[stack.Multicast], need[stack.SelfDelivery] = true, true
	}
	var ch Choice
	for _, s := range order {
		var why string
		switch s.Name {
		case "bottom":
			why = "every stack binds a transport"
		case "top":
			why = "every stack has an application interface"
		default:
			for _, p := range s.Provides {
				if need[p] {
					why = fmt.Sprintf("provides %s", p)
					if !contains(want, p) {
						why += " (needed by a layer above)"
					}
					break
				}
			}
		}
		if why == "" {
			continue
		}
		ch.Specs = append(ch.Specs, s)
		ch.Reasons = append(ch.Reasons, why)
	}
	provides, err := stack.Validate(ch.Specs)
	if err != nil {
		return ch, err
	}
	ch.Provides = provides
	for _, p := range want {
		if !contains(provides, p) {
			return ch, fmt.Errorf("no configuration provides %s", p)
		}
	}
	return ch, nil
}

func contains(ps []stack.Prop, p stack.Prop) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// Named builds a hand-written stack, given top first as people write
// them ("top,rpc,pt2pt,bottom"), and validates it.
func Named(list string) ([]stack.Spec, error) {
	names := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == ':' })
	specs := make([]stack.Spec, 0, len(names))
	for i := len(names) - 1; i >= 0; i-- {
		s, ok := All[strings.ToLower(names[i])]
		if !ok {
			return nil, fmt.Errorf("unknown layer %q", names[i])
		}
		specs = append(specs, s)
	}
	if _, err := stack.Validate(specs); err != nil {
		return nil, err
	}
	return specs, nil
}

// Build instantiates specs with cfg.
func Build(specs []stack.Spec, cfg stack.Config) []stack.Layer {
	for _, s := range specs {
		cfg.Unreliable = cfg.Unreliable || s.SendsUnreliable
	}
	ls := make([]stack.Layer, len(specs))
	for i, s := range specs {
		ls[i] = s.New(cfg)
	}
	return ls
}

package layers

import (
	"strings"
	"testing"

	"strata/stack"
)

func names(specs []stack.Spec) string {
	var s []string
	for i := len(specs) - 1; i >= 0; i-- {
		s = append(s, specs[i].Name)
	}
	return strings.Join(s, ",")
}

func TestConfigureChoosesMinimalStacks(t *testing.T) {
	cases := map[string]string{
		"":                           "top,bottom",
		"Reliable":                   "top,pt2pt,bottom",
		"FIFO":                       "top,pt2pt,bottom",
		"Fragment":                   "top,frag,pt2pt,bottom",
		"Flow":                       "top,pt2ptw,pt2pt,bottom",
		"RPC":                        "top,rpc,pt2pt,bottom",
		"RPC,Fragment":               "top,rpc,frag,pt2pt,bottom",
		"Reliable,Fragment,Flow,RPC": "top,rpc,pt2ptw,frag,pt2pt,bottom",
	}
	for in, want := range cases {
		props, err := ParseProps(in)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := Configure(props)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := names(ch.Specs); got != want {
			t.Errorf("Configure(%q) = %s, want %s", in, got, want)
		}
		if len(ch.Reasons) != len(ch.Specs) {
			t.Errorf("%q: %d reasons for %d layers", in, len(ch.Reasons), len(ch.Specs))
		}
	}
	if _, err := ParseProps("Reliable,Telepathy"); err == nil || !strings.Contains(err.Error(), "Telepathy") {
		t.Errorf("unknown property: %v", err)
	}
}

// A hand-written stack is rejected with a message naming the layer and
// what it lacks.
func TestNamedStackValidation(t *testing.T) {
	if _, err := Named("top,rpc,frag,pt2pt,bottom"); err != nil {
		t.Fatal(err)
	}
	bad := map[string][]string{
		"top,frag,bottom":        {`"frag"`, "Reliable", "FIFO", "Datagram"},
		"top,rpc,bottom":         {`"rpc"`, "Reliable"},
		"top,pt2pt":              {`"pt2pt"`, "Datagram", "nothing"},
		"top,pt2ptw,frag,bottom": {`"frag"`},
		"top,zigzag,bottom":      {"zigzag"},
	}
	for list, wants := range bad {
		_, err := Named(list)
		if err == nil {
			t.Errorf("%s accepted", list)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %s", list, err, w)
			}
		}
	}
}

// Package geolayout lays an emulated geo-distributed deployment out on one
// machine: a geo plan's data sites and front ends each on a loopback host
// of its own (127.0.1.N), and the WAN file (internal/wan) that puts each
// host in its site, so that every process on a site's host, whatever its
// port, is delayed as that site. `strata up --geo` and `strata bench
// geo-kv` use it.
package geolayout

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"strata/geo"
	"strata/internal/wan"
	"strata/wor"
)

// MaxHosts bounds the sites of a layout (127.0.1.1 to 127.0.1.250).
const MaxHosts = 250

// Layout is a plan laid out on loopback hosts.
type Layout struct {
	Plan   geo.Plan
	EC     wor.ECPlan // the plan as the ec engine takes it (validated)
	Access []string   // the front ends' regions
	Hosts  map[string]string
}

// New lays plan out for the front ends in access: its data sites first,
// in order, then the front ends' regions not among them, each site on
// host 127.0.1.N. The plan must be one the ec engine accepts.
func New(plan geo.Plan, access []string) (*Layout, error) {
	b, err := json.Marshal(plan)
	if err != nil {
		return nil, err
	}
	ec, err := wor.ParseECPlan(b)
	if err != nil {
		return nil, err
	}
	if err := ec.Validate(len(plan.Sites)); err != nil {
		return nil, fmt.Errorf("the plan for %s: %w", strings.Join(access, ","), err)
	}
	l := &Layout{Plan: plan, EC: ec, Access: slices.Clone(access), Hosts: map[string]string{}}
	for _, s := range append(slices.Clone(plan.Sites), access...) {
		if _, ok := l.Hosts[s]; !ok {
			if len(l.Hosts) >= MaxHosts {
				return nil, fmt.Errorf("more than %d sites", MaxHosts)
			}
			l.Hosts[s] = fmt.Sprintf("127.0.1.%d", len(l.Hosts)+1)
		}
	}
	return l, nil
}

// WriteWAN writes the WAN file that puts each site's host in its site,
// and checks that it loads as the servers will load it.
func (l *Layout) WriteWAN(path string) error {
	if len(l.Hosts) == 0 {
		return errors.New("geolayout: no sites")
	}
	f := wan.File{Sites: map[string]string{}}
	for site, host := range l.Hosts {
		f.Sites[host] = site
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	_, err = wan.Load(path)
	return err
}

// FrontEnd is the planner's figures for the front end in region name.
func (l *Layout) FrontEnd(name string) (geo.FrontEnd, bool) {
	for _, fe := range l.Plan.FrontEnds {
		if fe.Name == name {
			return fe, true
		}
	}
	return geo.FrontEnd{}, false
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"strata/geo"
	"strata/internal/wan"
	"strata/stack"
	"strata/stack/layers"
	"strata/stack/transport"
)

// The emulated WAN of this process: --wan and --wan-site (persistent flags
// of the commands that run nodes), else STRATA_WAN and STRATA_WAN_SITE, so
// that the servers `strata up` (or any script) starts inherit it. Set by
// flag parsing before a command runs, read by listenNode while it runs.
var wanFile, wanSite string

// Environment variables read when the flags are not given.
const (
	wanFileEnv = "STRATA_WAN"
	wanSiteEnv = "STRATA_WAN_SITE"
)

const (
	wanFlagHelp = "emulate a wide-area network: delay what this process sends by the one-way latency between sites named in this JSON file (see docs/wan.md; default $" + wanFileEnv + ")"
	wanSiteHelp = "this process's site with --wan, when its address is in no site of the file (default $" + wanSiteEnv + ")"
)

// addWANFlags gives a command that runs a node (and its subcommands)
// --wan and --wan-site.
func addWANFlags(c *cobra.Command) {
	c.PersistentFlags().StringVar(&wanFile, "wan", "", wanFlagHelp)
	c.PersistentFlags().StringVar(&wanSite, "wan-site", "", wanSiteHelp)
}

// addWANChildFlag gives a command that starts servers (up) --wan, which
// it passes on to them (wanChildEnv).
func addWANChildFlag(c *cobra.Command) {
	c.Flags().StringVar(&wanFile, "wan", "", "emulate a wide-area network between the servers: pass them this WAN file, each server in the site its address is listed in (see docs/wan.md; default: they inherit $"+wanFileEnv+")")
}

// wanSettings returns the WAN file and site in force: the flags', else the
// environment's.
func wanSettings() (file, site string) {
	file, site = wanFile, wanSite
	if file == "" {
		file = os.Getenv(wanFileEnv)
	}
	if site == "" {
		site = os.Getenv(wanSiteEnv)
	}
	return file, site
}

// withWAN adds the emulated WAN, if one is configured, to transport
// options.
func withWAN(o transport.Options) (transport.Options, error) {
	file, site := wanSettings()
	if file == "" {
		if site != "" {
			return o, fmt.Errorf("--wan-site (or %s) needs --wan (or %s)", wanSiteEnv, wanFileEnv)
		}
		return o, nil
	}
	c, err := wan.Load(file)
	if err != nil {
		return o, fmt.Errorf("--wan: %w", err)
	}
	if site != "" {
		if _, err := c.Site(site); err != nil {
			return o, fmt.Errorf("--wan-site: %w", err)
		}
	}
	o.Wrap = c.Wrap(site)
	return o, nil
}

// listenNode is how every command opens its node: layers.Listen with the
// emulated WAN, sealed links and TLS in force, if any.
func listenNode(listen, props string) (*stack.Node, error) {
	return listenNodeOpts(listen, props, transport.Options{})
}

// listenNodeOpts is listenNode with transport options.
func listenNodeOpts(listen, props string, o transport.Options) (*stack.Node, error) {
	o, err := withWAN(o)
	if err != nil {
		return nil, err
	}
	if o, err = withSeal(o); err != nil {
		return nil, err
	}
	if o, err = withTLS(o); err != nil {
		return nil, err
	}
	return layers.ListenOpts(listen, props, o)
}

// wanChildEnv is what a parent passes to the servers it starts: the WAN
// file in force (its absolute path: a child may run elsewhere), and an
// empty STRATA_WAN_SITE, because each server's site is the one its address
// is listed in, not a site the parent's environment names.
func wanChildEnv() []string {
	file, _ := wanSettings()
	if file == "" {
		return nil
	}
	if p, err := filepath.Abs(file); err == nil {
		file = p
	}
	return []string{wanFileEnv + "=" + file, wanSiteEnv + "="}
}

func wanCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "wan",
		Short: "Emulated wide-area network: show the delays a WAN file sets, list site names",
		Long: `Strata can emulate a wide-area network between processes on one machine:
with --wan FILE (or STRATA_WAN=FILE) every command that runs a node (stack
serve/call/chat, wor, kv, log, tx, and the servers "strata up --wan FILE"
starts) holds each datagram it sends for the one-way delay between its own site and the destination's, taken from the
geo latency matrix (half the measured round trip), plus optional jitter.
FILE is JSON:

  {"sites": {"udp:127.0.0.1:7001": "az_eastus",
             "udp:127.0.0.1:7002": "az_westeurope",
             "127.0.0.3": "az_japaneast"},
   "jitter_ms": 2}

A key is a transport address, or a bare host that stands for every address
on it. A process's own site is the one its address is in, or --wan-site.
Datagrams to an address in no site are not delayed (beyond the jitter).
See docs/wan.md.`,
	}
	c.AddCommand(wanShowCmd(), wanRegionsCmd())
	return c
}

func wanShowCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "show",
		Short:   "Print the sites of a WAN file and the one-way delay between each pair",
		Example: "  strata wan show --wan wan.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, _ := wanSettings()
			if file == "" {
				return fmt.Errorf("--wan FILE (or %s) is required", wanFileEnv)
			}
			c, err := wan.Load(file)
			if err != nil {
				return fmt.Errorf("--wan: %w", err)
			}
			out := cmd.OutOrStdout()
			sites := c.Sites()
			fmt.Fprintln(out, "sites:")
			for _, s := range sites {
				fmt.Fprintf(out, "  %s: %s\n", c.Matrix.Names[s], strings.Join(c.Members(s), ", "))
			}
			fmt.Fprintf(out, "one-way delay in ms (row: from, column: to; jitter adds [0, %v)):\n", c.Jitter)
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprint(tw, "\t")
			for _, s := range sites {
				fmt.Fprintf(tw, "%s\t", c.Matrix.Names[s])
			}
			fmt.Fprintln(tw)
			for _, i := range sites {
				fmt.Fprintf(tw, "%s\t", c.Matrix.Names[i])
				for _, j := range sites {
					fmt.Fprintf(tw, "%.1f\t", float64(c.OneWay(i, j).Microseconds())/1000)
				}
				fmt.Fprintln(tw)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&wanFile, "wan", "", "the WAN file to show (default $"+wanFileEnv+")")
	return c
}

func wanRegionsCmd() *cobra.Command {
	var matrix string
	c := &cobra.Command{
		Use:   "regions",
		Short: "List the site names a WAN file may use (the latency matrix's regions)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m := geo.Default()
			if matrix != "" {
				var err error
				if m, err = geo.LoadMatrixDir(matrix); err != nil {
					return fmt.Errorf("--matrix: %w", err)
				}
			}
			for _, n := range m.Names {
				fmt.Fprintln(cmd.OutOrStdout(), n)
			}
			return nil
		},
	}
	c.Flags().StringVar(&matrix, "matrix", "", "folder with loc-index-map.txt and net-only-latency.txt (default: the embedded data)")
	return c
}

package kit

import (
	"os/exec"
	"runtime/debug"
	"strings"
)

// StrataVersion names the code Strata's side of a benchmark ran: the
// commit the binary was built from when its build information has one,
// else the commit of the source tree it runs in (the Makefile builds with
// -buildvcs=false, so `make build` binaries carry no stamp), said as such.
func StrataVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", ""
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = " (modified)"
				}
			}
		}
		if rev != "" {
			return "built from " + rev + dirty
		}
	}
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=12").Output()
	if err != nil {
		return "unknown (no VCS stamp in the binary, no git tree here)"
	}
	return "source tree at " + strings.TrimSpace(string(out))
}

package nfsbench

// How Run gets its systems (realHost) and the settings the report prints
// for each.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"strata/bench/kit"
	"strata/nfs"
	"strata/nfs/rpc"
)

// DiskMiB is the disk of Strata's server and of GoNFS: a file on the
// project disk.
const DiskMiB = 4096

const transport = "NFSv3 over TCP on loopback (127.0.0.1), AUTH_SYS uid 0"

// runSettings are the run's settings for the report.
func runSettings(cfg *Config) kit.Settings {
	app := "not run"
	if cfg.app() {
		app = cfg.AppSrc
	}
	s := kit.Settings{
		"rounds":       cfg.Rounds,
		"order":        "rotates every round (kit.Order); each server runs alone",
		"clients":      cfg.Clients,
		"driver":       "one RPC-level NFSv3 client (strata/nfs.Client, no kernel mount), one TCP connection per client, the same for every server",
		"transport":    transport,
		"smallfile":    fmt.Sprintf("per file: CREATE, WRITE 100 B UNSTABLE, COMMIT, REMOVE; window %v after a %v warm-up", cfg.Duration, cfg.Duration/5),
		"largefile":    fmt.Sprintf("%d MiB in 64 KiB UNSTABLE WRITEs (16 in flight), COMMIT (timed together), then 64 KiB READs, every byte compared", cfg.Large>>20),
		"app":          app,
		"app_workload": "copy the tree in (64 KiB UNSTABLE WRITEs, COMMIT per file), read every file back and compare",
		"dir":          cfg.Dir,
	}
	if cfg.CellTimeout > 0 {
		s["cell_deadline"] = cfg.CellTimeout.String()
	} else {
		s["cell_deadline"] = fmt.Sprintf("smallfile %v, largefile %v, app %v, clnt-smallfile %v",
			cfg.CellDeadline("smallfile"), cfg.CellDeadline("largefile"), cfg.CellDeadline("app"), cfg.CellDeadline("clnt-smallfile"))
	}
	return s
}

// strataArgs are `strata nfs serve`'s arguments for a disk file.
func strataArgs(img string, async bool) []string {
	args := []string{"nfs", "serve", "--disk", img, "--size", fmt.Sprint(DiskMiB), "--listen", "127.0.0.1:0", "--mount-listen", "127.0.0.1:0", "--export", "/"}
	if async {
		args = append(args, "--async")
	}
	return args
}

// systemSettings are system name's settings for the report (versions
// found while preparing are added then).
func systemSettings(cfg *Config, name string) kit.Settings {
	switch name {
	case Strata, StrataAsync:
		s := kit.Settings{
			"server":    "strata " + strings.Join(strataArgs(filepath.Join(cfg.Dir, "strata-nfs.img"), name == StrataAsync), " "),
			"version":   kit.StrataVersion(),
			"disk":      fmt.Sprintf("%d MiB journal file in %s, fresh every start", DiskMiB, cfg.Dir),
			"transport": transport + "; NFS and MOUNT on their own ports",
			"max_io":    nfs.MaxIO,
		}
		if name == Strata {
			s["durability"] = "RFC 1813: metadata operations (CREATE, REMOVE, SETATTR, ...) durable before the reply; UNSTABLE WRITE data durable at COMMIT"
		} else {
			s["durability"] = "--async: metadata operations answered once committed in memory, durable with the next group commit (within about 2 ms) or COMMIT; UNSTABLE WRITE data durable at COMMIT"
		}
		return s
	case Ganesha:
		return kit.Settings{
			"server":     "ganesha.nfsd -F (Debian nfs-ganesha, nfs-ganesha-vfs)",
			"fsal":       "VFS, exporting a fresh directory in " + cfg.Dir,
			"durability": "VFS FSAL: CREATE, REMOVE and other metadata operations are not synced (left to the local file system); COMMIT fsyncs the file",
			"config":     "NFSv3 only, TCP, Bind_addr 127.0.0.1, NLM and RQUOTA off, Squash No_Root_Squash, Pseudo /; every other setting Ganesha's default",
			"transport":  transport + "; NFS and MOUNT on their own ports",
		}
	case GoNFS:
		return kit.Settings{
			"server":     fmt.Sprintf("go-nfsd -disk FILE -size %d -unstable=%t (bench/nfs/gonfsd/cmd/go-nfsd: go-nfsd's main with WRITE data copied out of the pooled request buffer, which v0.6.0 corrupts otherwise)", DiskMiB, GoNFSUnstable),
			"version":    "github.com/mit-pdos/go-nfsd " + GoNFSVersion + ", github.com/mit-pdos/go-journal " + GoJournalVersion,
			"unstable":   GoNFSUnstable,
			"durability": "metadata operations commit GoJournal with wait before the reply; UNSTABLE WRITEs commit to its in-memory log (-unstable=true, go-nfsd's default) and COMMIT flushes the log",
			"disk":       fmt.Sprintf("%d MB file in %s, fresh every start", DiskMiB, cfg.Dir),
			"transport":  transport + "; MOUNT and NFS share one port, found through rpcbind",
		}
	case Null:
		return kit.Settings{
			"server":     "strata bench nfs --serve-null: Strata's RPC server (nfs/rpc, defaults as strata nfs serve) with a back end that stores no data",
			"durability": "none: nothing is stored, COMMIT has nothing to do",
			"workloads":  "largefile only",
			"read":       "the largefile driver's data computed from the offset and the file's first aligned written word",
			"transport":  transport + "; NFS and MOUNT on their own ports",
		}
	}
	return kit.Settings{}
}

// realHost starts the real systems.
func realHost() *host { return &host{prepare: prepareReal, start: startReal} }

// prepareReal starts rpcbind if a peer (or clnt-smallfile) needs it,
// installs Ganesha, builds go-nfsd and installs fio, before round 1, so
// that a missing piece stops the run before it measures anything.
func prepareReal(ctx context.Context, cfg *Config, rep *kit.Report) (func(), error) {
	progress := cfg.Progress
	var stops []func()
	cleanup := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	fail := func(err error) (func(), error) { cleanup(); return nil, err }
	for _, s := range cfg.Systems {
		if (s == Strata || s == StrataAsync || s == Null) && cfg.Self == "" {
			return fail(fmt.Errorf("%s: no strata binary to run (Config.Self)", s))
		}
	}
	var peers []string
	for _, s := range cfg.Systems {
		if slices.Contains(Peers, s) {
			peers = append(peers, s)
		}
	}
	if len(peers) > 0 || cfg.Clnt {
		stop, err := EnsureRpcbind(ctx, progress)
		if err != nil {
			return fail(fmt.Errorf("rpcbind, which %s need(s), did not start (skip the peers with --no-peers): %w", strings.Join(append(peers, clntName(cfg)...), " and "), err))
		}
		stops = append(stops, stop)
	}
	if slices.Contains(cfg.Systems, Ganesha) {
		v, err := InstallGanesha(ctx, progress)
		if err != nil {
			return fail(fmt.Errorf("ganesha could not be installed (%s): %w", skipHint(Ganesha, cfg.Systems), err))
		}
		rep.Config[Ganesha]["version"] = "nfs-ganesha " + v
	}
	if slices.Contains(cfg.Systems, GoNFS) || cfg.Clnt {
		if _, err := BuildGoNFS(ctx, progress); err != nil {
			return fail(fmt.Errorf("go-nfsd could not be built (%s): %w", skipHint(GoNFS, cfg.Systems), err))
		}
	}
	if cfg.Clnt {
		rep.System("clnt-smallfile", kit.Settings{
			"client":   "go-nfsd " + GoNFSVersion + " cmd/clnt-smallfile -threads=4 -start=4, against every server but null (finds it through rpcbind)",
			"per_file": "LOOKUP, CREATE, LOOKUP, GETATTR, WRITE 100 B FILE_SYNC, GETATTR, REMOVE",
		})
	}
	if cfg.Fio {
		if _, err := exec.LookPath("fio"); err != nil {
			if err := kit.AptInstall(ctx, progress, "fio"); err != nil {
				// Information only: the run goes on without it.
				fmt.Fprintf(progress, "fio could not be installed (%v): no disk figure\n", err)
				cfg.Fio = false
			}
		}
		if cfg.Fio {
			rep.System("fio", kit.Settings{
				"version": FioVersion(ctx),
				"job":     fmt.Sprintf("--rw=write --bs=64k --size=%d --ioengine=psync --end_fsync=1 in %s", cfg.Large, cfg.Dir),
				"role":    "information only: the disk's sequential write bandwidth; no ratio or target uses it",
			})
		}
	}
	return cleanup, nil
}

func clntName(cfg *Config) []string {
	if cfg.Clnt {
		return []string{"clnt-smallfile"}
	}
	return nil
}

// startReal starts system name on a fresh disk or export.
func startReal(ctx context.Context, cfg *Config, name string) (*system, error) {
	// Only one server may be registered with rpcbind for NFS v3 at a time
	// (Strata's registers too, for clnt-smallfile).
	rpc.PmapUnset(ctx, nfs.ProgNFS, nfs.VersNFS)
	rpc.PmapUnset(ctx, nfs.ProgMount, nfs.VersMount)
	switch name {
	case Strata, StrataAsync:
		img := filepath.Join(cfg.Dir, "strata-nfs.img")
		os.Remove(img)
		sys, err := startChild(ctx, cfg, name, append([]string{cfg.Self}, strataArgs(img, name == StrataAsync)...),
			"serving / on nfs port", "serving / on nfs port %d, mount port %d")
		if err != nil {
			return nil, err
		}
		stop := sys.stop
		sys.stop = func() { stop(); os.Remove(img) }
		return sys, nil
	case Null:
		return startChild(ctx, cfg, name, []string{cfg.Self, "bench", "nfs", "--serve-null"},
			"null server:", "null server: nfs port %d, mount port %d")
	case Ganesha:
		exp := filepath.Join(cfg.Dir, "ganesha-export")
		os.RemoveAll(exp)
		if err := os.MkdirAll(exp, 0o777); err != nil {
			return nil, err
		}
		p, err := StartGanesha(ctx, exp, cfg.Progress)
		if err != nil {
			os.RemoveAll(exp)
			return nil, err
		}
		// What the workloads wrote (the app workload copies Go sources)
		// must not stay in the working tree, where `go vet ./...` sees it.
		return &system{server: Server{Name: name, NFSAddr: p.NFSAddr, MountAddr: p.MountAddr, Export: p.Export},
			stop: func() { p.Stop(); os.RemoveAll(exp) }, dumpStacks: p.DumpStacks}, nil
	case GoNFS:
		p, err := StartGoNFS(ctx, cfg.Dir, DiskMiB, cfg.Progress)
		if err != nil {
			return nil, err
		}
		return &system{server: Server{Name: name, NFSAddr: p.NFSAddr, MountAddr: p.MountAddr, Export: p.Export},
			stop: func() { p.Stop() }, dumpStacks: p.DumpStacks}, nil
	}
	return nil, fmt.Errorf("unknown system %q", name)
}

// startChild starts a server of this binary (Strata's or the null one)
// that prints a ready line starting with prefix and holding its NFS and
// MOUNT ports (format).
func startChild(ctx context.Context, cfg *Config, name string, argv []string, prefix, format string) (*system, error) {
	p, err := kit.Start(ctx, kit.Cmd{
		Name:         name,
		Argv:         argv,
		Ready:        func(line string) bool { return strings.HasPrefix(line, prefix) },
		ReadyTimeout: 2 * time.Minute,
		Stderr:       cfg.Progress,
		// Both exit cleanly on SIGINT (Strata closes its journal).
		StopSignal: os.Interrupt,
	})
	if err != nil {
		return nil, err
	}
	var np, mp int
	if _, err := fmt.Sscanf(p.Ready, format, &np, &mp); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s: unexpected ready line %q: %w", name, p.Ready, err)
	}
	return &system{
		server: Server{Name: name, NFSAddr: fmt.Sprintf("127.0.0.1:%d", np), MountAddr: fmt.Sprintf("127.0.0.1:%d", mp), Export: "/"},
		stop: func() {
			if err := p.Stop(); err != nil {
				fmt.Fprintf(cfg.Progress, "%s: %v\n", name, err)
			}
		},
	}, nil
}

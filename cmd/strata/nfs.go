package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"strata/journal"
	"strata/journal/disk"
	"strata/nfs"
	"strata/nfs/fs"
	"strata/nfs/rpc"
)

func nfsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "nfs",
		Short: "NFSv3 file server on the journal (GoNFS design)",
	}
	c.AddCommand(nfsServeCmd(), nfsFsckCmd())
	return c
}

// openNFSDisk opens the file system's disk, creating and formatting it
// (journal and file system) if the file does not exist.
func openNFSDisk(path string, sizeMiB, inodes uint64, opt fs.Options, log *slog.Logger) (*journal.Journal, *fs.FS, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && sizeMiB < 16 {
		return nil, nil, fmt.Errorf("--size %d MiB: at least 16 MiB", sizeMiB)
	}
	j, created, err := journal.OpenFile(path, sizeMiB<<20/disk.BlockSize, journal.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("disk %s: %w", path, err)
	}
	if created {
		if inodes == 0 {
			inodes = max(1024, j.Size()/4)
		}
		if err := fs.Mkfs(j, inodes); err != nil {
			j.Close()
			return nil, nil, fmt.Errorf("mkfs %s: %w", path, err)
		}
		log.Info("created file system", "disk", path, "blocks", j.Size(), "inodes", inodes)
	}
	f, err := fs.OpenOptions(j, opt)
	if err != nil {
		j.Close()
		if errors.Is(err, fs.ErrCorrupt) {
			return nil, nil, damagedErr(path, err)
		}
		return nil, nil, fmt.Errorf("file system on %s: %w", path, err)
	}
	if created {
		// Root is squashed by default, so a root directory of root's
		// with mode 0755 would let no client create anything at the
		// top: make it 1777, like /tmp (anyone creates, only owners
		// remove).
		mode := uint32(0o1777)
		t := time.Now()
		if _, _, err := f.SetAttr(f.Root(), fs.SetAttr{Mode: &mode}, nil, fs.Time{Sec: uint32(t.Unix()), Nsec: uint32(t.Nanosecond())}); err != nil {
			j.Close()
			return nil, nil, fmt.Errorf("file system on %s: root directory mode: %w", path, err)
		}
	}
	return j, f, nil
}

// damagedErr is the error that refuses to serve a damaged image.
func damagedErr(path string, err error) error {
	return fmt.Errorf("file system on %s is damaged, not serving it: %w\nrun `strata nfs fsck %s` (with no server on it) for a full report", path, err, path)
}

func nfsServeCmd() *cobra.Command {
	var (
		diskPath, listen, mountListen, export, metrics, exportsFile string
		sizeMiB, inodes                                             uint64
		rpcbind, async, check                                       bool
	)
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve a file system over NFSv3 and MOUNT v3 until interrupted",
		Long: `serve runs an NFSv3 server (RFC 1813, all 22 procedures) and its MOUNT v3
service over TCP and UDP. The file system lives in a journal on --disk,
created and formatted (--size MiB) when the file does not exist; every NFS
operation is one atomic journal operation, so a crash (even kill -9) leaves
a consistent file system with every write acknowledged as stable.

Clients that take explicit ports need no rpcbind, e.g. libnfs:
  nfs-ls 'nfs://127.0.0.1/strata/?version=3&nfsport=20049&mountport=20048'
With --rpcbind (default) the server also registers with a running rpcbind.

--async answers metadata operations (CREATE, REMOVE, RENAME, SETATTR, ...)
once they are committed in memory instead of once they are durable, like
an "async" export of the Linux server and like NFS-Ganesha's VFS back-end,
which leaves them to the local file system's journal. RFC 1813 asks for
the synchronous behaviour, the default. Each operation stays atomic and
the journal keeps their order: a crash loses at most the operations of
the last moments (the journal logs operations nobody waits for within
2 ms), never a COMMIT or stable WRITE that was answered, nor anything
before one.

Who may use the export is set by --exports FILE, one export per line as
in exports(5): a path (--export, default /strata, is the file system's
root; a path below it exports that directory) and clients, each an IP
address, a CIDR or *, with options in parentheses: ro or rw (default),
root_squash (default) or no_root_squash, all_squash, anonuid=N and
anongid=N (default 65534), sec=sys (default), sec=none or sec=sys:none.
For example:
  /strata      127.0.0.1(rw) 10.0.0.0/8(ro)
  /strata/pub  *(ro,all_squash)
Without --exports, only loopback clients (127.0.0.0/8, ::1) may mount
and use the export, read-write, with root squashed to 65534. Calls from
other addresses are denied (AUTH_BADCRED), AUTH_NONE where AUTH_SYS is
required gets AUTH_TOOWEAK, modifying calls on a read-only export get
NFS3ERR_ROFS, and handles of an export the client may not use are STALE.
A new file system's root directory is mode 1777 (like /tmp), so that
squashed root and other users can create files at the top.

At start serve checks the superblock, the root inode and the orphan table
and refuses a damaged image, pointing at strata nfs fsck. --check also
runs the full check first; it reads every inode, bitmap, directory and
indirect block, so its time grows with the image, and it is not done by
default. Damage met later fails that call with NFS3ERR_IO and is logged at
error level with the inode and block.`,
		Example: "  strata nfs serve --disk strata-data/nfs.img --size 1024",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			export = strings.TrimSuffix(export, "/")
			if export == "" {
				export = "/"
			}
			if err := nfs.CheckRoot(export); err != nil {
				return fmt.Errorf("--export: %w", err)
			}
			exports := nfs.DefaultExports(export)
			if exportsFile != "" {
				data, err := os.ReadFile(exportsFile)
				if err != nil {
					return fmt.Errorf("--exports: %w", err)
				}
				if exports, err = nfs.ParseExports(exportsFile, data, export); err != nil {
					return fmt.Errorf("--exports: %w", err)
				}
			}
			j, f, err := openNFSDisk(diskPath, sizeMiB, inodes, fs.Options{UnstableMetadata: async}, log)
			if err != nil {
				return err
			}
			defer j.Close()
			if check {
				rep, err := f.Check()
				if err != nil {
					return fmt.Errorf("checking %s: %w", diskPath, err)
				}
				if !rep.Clean() {
					return damagedErr(diskPath, errors.New(rep.String()))
				}
				log.Info("file system checked", "disk", diskPath, "report", rep.String())
			}
			defer func() {
				st := j.Stats()
				log.Info("journal at shutdown", "records", st.Records, "barriers", st.Barriers, "logged_blocks", st.LoggedBlks,
					"absorbed", st.Absorbed, "installed", st.Installed, "logger_busy", st.LogBusy,
					"direct_blocks", st.DirectBlks, "data_barriers", st.DataBarrier)
			}()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			srv := nfs.NewServer(f, export, log)
			srv.SetExports(exports)
			for _, e := range exports.List() {
				rules := make([]string, len(e.Rules))
				for i := range e.Rules {
					rules[i] = e.Rules[i].String()
				}
				log.Info("export", "path", e.Path, "clients", strings.Join(rules, " "))
			}
			r := rpc.NewServer(log)
			srv.Register(r)
			nfsPort, err := serveRPC(ctx, r, listen, log)
			if err != nil {
				return err
			}
			mountPort, err := serveRPC(ctx, r, mountListen, log)
			if err != nil {
				return err
			}
			if rpcbind {
				registerRpcbind(ctx, log, nfsPort, mountPort)
			}
			if metrics != "" {
				stopMetrics, err := serveNFSMetrics(metrics, srv, r, j, log)
				if err != nil {
					return err
				}
				defer stopMetrics()
			}
			fmt.Fprintf(cmd.OutOrStdout(), "serving %s on nfs port %d, mount port %d\n", export, nfsPort, mountPort)
			fmt.Fprintf(cmd.OutOrStdout(), "try: nfs-ls 'nfs://127.0.0.1%s/?version=3&nfsport=%d&mountport=%d'\n", export, nfsPort, mountPort)
			<-ctx.Done()
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&diskPath, "disk", "strata-data/nfs.img", "disk file (created if absent)")
	f.Uint64Var(&sizeMiB, "size", 1024, "size of a new disk in MiB")
	f.Uint64Var(&inodes, "inodes", 0, "inodes of a new file system (default: one per 4 blocks)")
	f.StringVar(&listen, "listen", "127.0.0.1:20049", "NFS address (TCP and UDP)")
	f.StringVar(&mountListen, "mount-listen", "127.0.0.1:20048", "MOUNT address (TCP and UDP)")
	f.StringVar(&export, "export", "/strata", "the path clients mount the file system's root as")
	f.StringVar(&exportsFile, "exports", "", "exports file: who may mount what, how (see above; default: loopback clients, rw, root_squash)")
	f.BoolVar(&rpcbind, "rpcbind", true, "register with rpcbind on 127.0.0.1:111 if it runs")
	f.StringVar(&metrics, "metrics", "", "serve Prometheus metrics on this HOST:PORT")
	f.BoolVar(&async, "async", false, "answer metadata operations before they are durable (see above)")
	f.BoolVar(&check, "check", false, "run the full file system check before serving; refuse a damaged image")
	return c
}

// serveRPC serves r on TCP and UDP at addr (port 0: any, the same for
// both) and returns the port.
func serveRPC(ctx context.Context, r *rpc.Server, addr string, log *slog.Logger) (uint32, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return 0, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	host, _, _ := net.SplitHostPort(addr)
	pc, err := net.ListenPacket("udp", net.JoinHostPort(host, fmt.Sprint(port)))
	if err != nil {
		ln.Close()
		return 0, fmt.Errorf("udp on the TCP port %d: %w", port, err)
	}
	go func() {
		if err := r.ServeTCP(ctx, ln); err != nil && ctx.Err() == nil {
			log.Error("rpc tcp", "err", err)
		}
	}()
	go func() {
		if err := r.ServeUDP(ctx, pc); err != nil && ctx.Err() == nil {
			log.Error("rpc udp", "err", err)
		}
	}()
	return uint32(port), nil
}

func registerRpcbind(ctx context.Context, log *slog.Logger, nfsPort, mountPort uint32) {
	for _, p := range []struct{ prog, vers, port uint32 }{
		{nfs.ProgNFS, nfs.VersNFS, nfsPort}, {nfs.ProgMount, nfs.VersMount, mountPort},
	} {
		rpc.PmapUnset(ctx, p.prog, p.vers) // a stale registration from an earlier run (all protocols)
		for _, proto := range []uint32{rpc.IPProtoTCP, rpc.IPProtoUDP} {
			ok, err := rpc.PmapSet(ctx, p.prog, p.vers, proto, p.port)
			switch {
			case errors.Is(err, rpc.ErrNoRpcbind):
				log.Info("no rpcbind on 127.0.0.1:111; clients need explicit ports")
				return
			case err != nil || !ok:
				log.Warn("rpcbind registration failed", "prog", p.prog, "err", err)
			}
		}
	}
}

func nfsFsckCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "fsck DISK",
		Short: "Recover a file system image's journal and check the file system offline",
		Long: `fsck recovers the image's journal and checks the file system without
changing it (inodes pending in the orphan table are left for the server
to free): the
superblock; the bitmaps against the blocks and inodes in use (leaked, doubly
used, or used but free); the inode table (types, sizes, used counts, block
pointers inside the data area); every directory tree (node kinds, key order,
depths, names, entries naming live inodes of the right generation); link
counts; parents of directories; reachability from the root; the orphan
table. It exits non-zero and lists the problems if there are any.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := disk.OpenFile(args[0])
			if err != nil {
				return err
			}
			j, err := journal.Open(d, journal.Options{})
			if err != nil {
				d.Close()
				return fmt.Errorf("journal: %w", err)
			}
			defer j.Close()
			f, err := fs.OpenOptions(j, fs.Options{KeepOrphans: true})
			if errors.Is(err, fs.ErrCorrupt) {
				return fmt.Errorf("file system has problems:\n  %w", err)
			}
			if err != nil {
				return err
			}
			rep, err := f.Check()
			if err != nil {
				return err
			}
			if !rep.Clean() {
				return fmt.Errorf("file system has problems:\n%s", rep)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "file system OK: %d inodes (%d directories), %d blocks, %d entries\n", rep.Inodes, rep.Dirs, rep.Blocks, rep.Entries)
			return nil
		},
	}
	return c
}

// serveNFSMetrics exports NFS calls by procedure, error replies, RPC
// counters and journal barriers.
func serveNFSMetrics(addr string, srv *nfs.Server, r *rpc.Server, j *journal.Journal, log *slog.Logger) (func(), error) {
	reg := prometheus.NewRegistry()
	for i, name := range nfs.ProcNames {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_nfs_calls_total", Help: "NFSv3 calls answered, by procedure.", ConstLabels: prometheus.Labels{"proc": name},
		}, func() float64 { calls, _ := srv.Calls(); return float64(calls[i]) }))
	}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_nfs_error_replies_total", Help: "NFSv3 replies with a status other than NFS3_OK."},
		func() float64 { _, e := srv.Calls(); return float64(e) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_nfs_refused_total",
		Help: "NFS and MOUNT calls refused by the exports (address not admitted, AUTH_NONE where AUTH_SYS is needed, read-only export, another export's handle)."},
		func() float64 { return float64(srv.Refused()) }))
	for _, m := range []struct {
		name, help string
		f          func(rpc.Stats) uint64
	}{
		{"strata_rpc_calls_total", "RPC messages parsed as calls.", func(s rpc.Stats) uint64 { return s.Calls }},
		{"strata_rpc_garbage_total", "RPC messages dropped as undecodable.", func(s rpc.Stats) uint64 { return s.Garbage }},
		{"strata_rpc_denied_total", "RPC calls denied (version or credential).", func(s rpc.Stats) uint64 { return s.Denied }},
		{"strata_rpc_bad_records_total", "TCP records over the limit or cut off.", func(s rpc.Stats) uint64 { return s.BadRecords }},
		{"strata_rpc_connections_total", "TCP connections accepted.", func(s rpc.Stats) uint64 { return s.Conns }},
	} {
		f := m.f
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: m.name, Help: m.help}, func() float64 { return float64(f(r.Stats())) }))
	}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_journal_barriers_total", Help: "Journal barriers."},
		func() float64 { return float64(j.Stats().Barriers) }))
	return serveMetrics(addr, reg, nil, log)
}

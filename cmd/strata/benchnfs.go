package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	nfsbench "strata/bench/nfs"
)

func benchNFSCmd() *cobra.Command {
	var (
		quick, asJSON, noPeers, async, clnt, null, fio, serveNull bool
		clientsFlag, peersFlag                                    string
		dir, plotPath, appSrc                                     string
		dur, cellTimeout                                          time.Duration
		rounds, largeMB                                           int
	)
	c := &cobra.Command{
		Use:   "nfs",
		Short: "NFS smallfile, largefile and app workloads: Strata vs NFS-Ganesha, GoNFS and a null server",
		Long: `Runs the GoJournal paper's workloads through one RPC-level NFSv3 client
driver (no kernel mount; NFSv3 over TCP on loopback, AUTH_SYS uid 0, one
connection per client) against every server, side by side in one run:

  smallfile  per client: CREATE, WRITE 100 bytes UNSTABLE, COMMIT, REMOVE,
             repeated for --duration after a warm-up of a fifth of it
  largefile  one client writes --large-mb MiB in 64 KiB UNSTABLE WRITEs (16
             in flight), COMMITs (timed with the writes), and reads the file
             back in 64 KiB READs, comparing every byte
  app        N clients copy a real source tree (--app-src, default the Go
             toolchain's src/net) in, then every file is read back and
             compared

The servers, each on a fresh disk file or directory under --dir:

  strata        strata nfs serve (this binary), 4096 MiB journal file:
                RFC 1813 durability, metadata operations (CREATE, REMOVE,
                ...) durable before the reply, UNSTABLE data at COMMIT
  strata-async  strata nfs serve --async: metadata answered once committed
                in memory, durable with the next group commit (about 2 ms)
                or COMMIT; data at COMMIT (--async=false skips it)
  ganesha       NFS-Ganesha (Debian nfs-ganesha, nfs-ganesha-vfs, installed
                with apt-get if missing), VFS FSAL, NFSv3 over TCP, its
                defaults otherwise: creates and removes not synced, COMMIT
                fsyncs the file
  gonfs         GoNFS, github.com/mit-pdos/go-nfsd v0.6.0 (GoJournal
                v0.4.0) built from bench/nfs/gonfsd, 4096 MB disk file, with
                its default -unstable=true: metadata committed with wait,
                UNSTABLE WRITEs to the in-memory log, COMMIT flushes it.
                WRITE data is copied out of the pooled request buffer
                (unmodified, v0.6.0 corrupts file data)
  null          Strata's own RPC server (nfs/rpc) with a back end that stores
                nothing: the largefile ceiling of this machine's RPC path
                (largefile only; its READ returns the driver's data computed
                from the offset, so the byte comparison stays on;
                --null=false skips it)

Ganesha and GoNFS need rpcbind, which the benchmark starts if none runs;
--peers chooses them, --no-peers runs Strata (and null) only.

Ratios (> 1: Strata better) are the median of per-round ratios, with the
range over rounds, and exist only between systems of like durability:
strata-async/ganesha and strata/gonfs on every workload; strata/ganesha on
largefile, whose timed part has the same durability in both Strata modes;
strata/null and strata-async/null on largefile (fraction of the ceiling).
One cross-durability ratio, the issue's target for the synchronous mode,
is keyed "smallfile strata/ganesha-own-durability clients=N". A targets
table says which targets are met: largefile write and read >= 0.8 of null,
largefile write and read strata-async >= 1.2x Ganesha, smallfile
synchronous Strata >= 1.0x Ganesha-with-its-own-durability and app
strata-async >= 1.3x Ganesha at 4 and 16 clients. Each round also runs fio
on the same disk (the largefile's bytes in 64 KiB writes, fsync at the
end) for the disk's sequential write bandwidth: information only
(--fio=false skips it).

Rounds rotate the order of the servers; each server runs alone. Every
cell (one workload at one client count on one server) has a deadline:
smallfile --duration x 1.2 + 2 min, app 5 min, largefile 3 min + 1 s per
MiB of --large-mb, clnt-smallfile --duration + 3 min (--cell-timeout sets
one deadline for all); a smallfile client still waiting for a reply 20 s
after the window fails its cell too. A cell that fails or passes its
deadline is reported as FAILED with the reason and left out of the
medians and ratios; for GoNFS a timed-out cell also saves go-nfsd's
goroutine stacks in --dir (go-nfsd v0.6.0 can deadlock when clients
create files in a directory and its subdirectory at once: a directory
cache rebuild locks the child while holding the parent, and the child's
rebuild locks ".." while holding the child). The server is then
restarted on a fresh disk for its remaining cells and the run goes on.

Exit status: non-zero if a system does not start (the message names it
and the flag that skips it), or if a cell of Strata or of the null server
failed; a peer's FAILED cell is only reported. With --clnt go-nfsd's own
raw-RPC client clnt-smallfile (4 threads, WRITE 100 B FILE_SYNC) also runs
against every server but null as an independent check.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if serveNull {
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return nfsbench.ServeNull(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"clients": "1,4,16", "duration": "2s", "rounds": "1", "large-mb": "32"}); err != nil {
					return err
				}
			}
			clients, err := parseInts("--clients", clientsFlag, 1, 256)
			if err != nil {
				return err
			}
			if rounds < 1 {
				return fmt.Errorf("--rounds %d: want at least 1", rounds)
			}
			if largeMB < 1 {
				return fmt.Errorf("--large-mb %d: want at least 1", largeMB)
			}
			if dur <= 0 {
				return fmt.Errorf("--duration %v: want a positive duration", dur)
			}
			if cellTimeout < 0 {
				return fmt.Errorf("--cell-timeout %v: must not be negative", cellTimeout)
			}
			systems := []string{nfsbench.Strata}
			if async {
				systems = append(systems, nfsbench.StrataAsync)
			}
			if !noPeers {
				for _, p := range strings.Split(peersFlag, ",") {
					p = strings.TrimSpace(p)
					if !slices.Contains(nfsbench.Peers, p) {
						return fmt.Errorf("--peers: unknown peer %q (want %s, comma-separated; --no-peers for none)", p, strings.Join(nfsbench.Peers, ", "))
					}
					if !slices.Contains(systems, p) {
						systems = append(systems, p)
					}
				}
			}
			if null {
				systems = append(systems, nfsbench.Null)
			}
			if appSrc == "" {
				if out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output(); err == nil {
					appSrc = filepath.Join(strings.TrimSpace(string(out)), "src", "net")
				}
			}
			if appSrc != "" && appSrc != "none" {
				if st, err := os.Stat(appSrc); err != nil || !st.IsDir() {
					return fmt.Errorf("--app-src %s: not a directory (use --app-src none to skip the app workload)", appSrc)
				}
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding this binary (it runs Strata's server): %w", err)
			}
			rep, err := nfsbench.Run(ctx, nfsbench.Config{
				Systems: systems, Clients: clients, Duration: dur, Rounds: rounds, Large: int64(largeMB) << 20,
				Dir: dir, Plot: plotPath, Clnt: clnt, AppSrc: appSrc, Fio: fio, CellTimeout: cellTimeout,
				Self: self, Progress: cmd.ErrOrStderr(),
			})
			if rep == nil {
				return err
			}
			var failed *nfsbench.StrataFailedError
			if err != nil && !errors.As(err, &failed) {
				fmt.Fprintf(cmd.ErrOrStderr(), "%v\n", err) // e.g. the plot; the figures still print
			}
			if asJSON {
				if jerr := rep.WriteJSON(cmd.OutOrStdout()); jerr != nil {
					return jerr
				}
			} else {
				nfsbench.Print(cmd.OutOrStdout(), rep)
			}
			return failedCells(rep, err)
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 1, 4 and 16 clients, 2 s cells, 32 MiB largefile, 1 round")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&noPeers, "no-peers", false, "no Ganesha, no GoNFS: Strata (and the null server) only")
	f.BoolVar(&async, "async", true, "also run Strata with metadata answered before it is durable (strata nfs serve --async: Ganesha's durability)")
	f.BoolVar(&null, "null", true, "also run the null server (stores nothing) on largefile: the ceiling Strata's largefile figures are a fraction of")
	f.BoolVar(&fio, "fio", true, "also measure the disk's sequential write bandwidth with fio every round (information only)")
	f.BoolVar(&clnt, "clnt", false, "also run go-nfsd's clnt-smallfile against every server but null")
	f.StringVar(&clientsFlag, "clients", "1,2,4,8,16", "concurrent smallfile and app clients")
	f.StringVar(&peersFlag, "peers", "ganesha,gonfs", "peers, comma-separated: ganesha, gonfs")
	f.DurationVar(&dur, "duration", 5*time.Second, "measured time per smallfile cell")
	f.IntVar(&rounds, "rounds", 3, "rounds, rotating the order of the servers")
	f.DurationVar(&cellTimeout, "cell-timeout", 0, "deadline of every cell (0: smallfile duration x 1.2 + 2m, app 5m, largefile 3m + 1s per MiB, clnt-smallfile duration + 3m)")
	f.IntVar(&largeMB, "large-mb", 100, "largefile size in MiB")
	f.StringVar(&dir, "dir", "strata-data/bench-nfs", "data folder on the project disk")
	f.StringVar(&plotPath, "plot", "strata-data/bench/nfs-smallfile.png", "write the smallfile plot here ('' to skip)")
	f.StringVar(&appSrc, "app-src", "", "source tree the app workload copies (default: $(go env GOROOT)/src/net; none: skip)")
	f.BoolVar(&serveNull, "serve-null", false, "run the null server (the benchmark's child process) until interrupted")
	f.MarkHidden("serve-null")
	return c
}

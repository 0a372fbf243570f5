package nfsbench

// The peers Strata's NFS server is compared with, and their load generator:
//
//   - NFS-Ganesha (Debian packages nfs-ganesha and nfs-ganesha-vfs), a
//     userspace NFSv3 server exporting a directory through its VFS FSAL;
//   - GoNFS, the server of the GoJournal paper (github.com/mit-pdos/go-nfsd
//     v0.6.0), built from the separate module bench/nfs/gonfsd, on a file
//     disk (its server command is bench/nfs/gonfsd/cmd/go-nfsd, go-nfsd's
//     own main plus a copy of WRITE data that fixes v0.6.0's data
//     corruption), run with go-nfsd's default -unstable=true;
//   - clnt-smallfile, GoNFS's raw-RPC smallfile client (ClntSmallfile).
//
// Both servers register with rpcbind (EnsureRpcbind), and clnt-smallfile
// finds its server through rpcbind. rpcbind holds one mapping per (program,
// version, protocol), so only one NFSv3 server can be registered at a time:
// a benchmark runs the peers one after the other (start, measure, Stop),
// never two at once. StartGanesha and StartGoNFS refuse to start while
// another live server holds the NFSv3 mapping (stale mappings of dead
// servers are removed).
//
// Nothing here is meant for CI: the peers need Debian packages (apt-get)
// and a build of a Go module that downloads its dependencies.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"strata/bench/kit"
	"strata/internal/freeport"
	"strata/nfs/rpc"
	"strata/nfs/xdr"
)

// ONC RPC programs and versions used here.
const (
	NFSProg   = 100003
	NFSVers   = 3
	MountProg = 100005
	MountVers = 3
)

// Portmapper (rpcbind version 2) GETPORT.
const (
	pmapAddr        = "127.0.0.1:111"
	pmapProcNull    = 0
	pmapProcGetPort = 3
)

// The versions bench/nfs/gonfsd/go.mod pins (TestGoNFSVersions checks).
const (
	GoNFSVersion     = "v0.6.0"
	GoJournalVersion = "v0.4.0"
)

// GoNFSUnstable is go-nfsd's -unstable flag here: its default, true, under
// which an UNSTABLE WRITE is committed to GoJournal's in-memory log and
// made durable by COMMIT (as Strata and Ganesha do); false would make every
// write synchronous, a durability the other servers do not give.
const GoNFSUnstable = true

// GoNFSExport is the path GoNFS answers MNT for. go-nfsd's MOUNTPROC3_MNT
// ignores its argument and always returns the root file handle;
// clnt-smallfile mounts "/".
const GoNFSExport = "/"

// GaneshaExport is the path to MNT on the Ganesha peer: its export is
// configured with Pseudo = / and mount_path_pseudo = true, so NFSv3 clients
// mount "/" (which is also what clnt-smallfile mounts).
const GaneshaExport = "/"

// Ganesha's Debian packages.
var ganeshaPackages = []string{"nfs-ganesha", "nfs-ganesha-vfs"}

// Peer is a running NFSv3 server other than Strata.
type Peer struct {
	Name      string // "ganesha" or "gonfs"
	NFSAddr   string // "127.0.0.1:PORT" (TCP) of the NFS program (100003 v3)
	MountAddr string // "127.0.0.1:PORT" (TCP) of MOUNT (100005 v3)
	Export    string // the export path to MNT

	proc    *kit.Proc
	logFile *os.File // the child's output, if it does not write its own log
	goProg  bool     // a Go program: SIGQUIT prints its goroutine stacks
	tmpDir  string   // removed by Stop
	logPath string   // the server's log (inside tmpDir)
	ports   []uint32 // the server's ports, for removing its rpcbind mappings
}

// Stop stops the server (its clean-exit signal, then its process group is
// killed after 15 s), removes rpcbind mappings still pointing at its ports
// and deletes its temporary files (for GoNFS including its disk file). It
// is safe to call more than once.
func (p *Peer) Stop() error {
	var errs []error
	if p.proc != nil {
		if err := p.proc.Stop(); err != nil && !exitedBySignal(err) {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
		}
	}
	if p.logFile != nil {
		p.logFile.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := unsetMappingsTo(ctx, p.ports); err != nil {
		errs = append(errs, err)
	}
	if p.tmpDir != "" {
		if err := os.RemoveAll(p.tmpDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// exitedBySignal says whether a child's exit error is a death by signal
// (what a server stopped by its stop signal, or killed after a SIGQUIT
// dump, reports): not a failure of Stop.
func exitedBySignal(err error) bool {
	var ee interface{ Sys() any }
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			return ws.Signaled() || ws.ExitStatus() == 2 // Go's exit status after SIGQUIT's dump
		}
	}
	return false
}

// Exited reports whether the server process has exited (it should not
// before Stop).
func (p *Peer) Exited() bool {
	select {
	case <-p.proc.Exited():
		return true
	default:
		return false
	}
}

// LogTail returns the last n lines of the server's log (empty after Stop).
func (p *Peer) LogTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	return kit.Tail(string(b), n)
}

// DumpStacks is for a server that stopped answering: it copies the
// server's log to dst, for GoNFS (a Go program) after sending it SIGQUIT,
// on which the Go runtime writes every goroutine's stack to the log and
// exits. GoNFS is gone afterwards; Stop is still needed (rpcbind mappings,
// temporary files, which include the log). For Ganesha it only copies the
// log.
func (p *Peer) DumpStacks(dst string) error {
	if p.goProg && !p.Exited() {
		if err := p.proc.Signal(syscall.SIGQUIT); err != nil {
			return fmt.Errorf("%s: SIGQUIT: %w", p.Name, err)
		}
		select {
		case <-p.proc.Exited():
		case <-time.After(10 * time.Second):
		}
	}
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// failStart stops a peer that did not come up and wraps err with its log.
func (p *Peer) failStart(err error) error {
	tail := p.LogTail(30)
	p.Stop()
	if tail != "" {
		return fmt.Errorf("%s: %w\n--- %s log (last lines) ---\n%s", p.Name, err, p.Name, tail)
	}
	return fmt.Errorf("%s: %w", p.Name, err)
}

// ---------------------------------------------------------------------------
// rpcbind

// PmapGetPort asks rpcbind on 127.0.0.1:111 (portmapper version 2,
// PMAPPROC_GETPORT, over UDP) for the port of (prog, vers, proto), proto
// being rpc.IPProtoTCP (6) or rpc.IPProtoUDP (17). It returns 0 and no
// error when nothing is registered.
func PmapGetPort(ctx context.Context, prog, vers, proto uint32) (uint32, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := rpc.Dial(ctx, "udp", pmapAddr)
	if err != nil {
		return 0, fmt.Errorf("portmapper: %w", err)
	}
	defer c.Close()
	c.SetRetry(250*time.Millisecond, 6)
	var w xdr.Writer
	w.Uint32(prog)
	w.Uint32(vers)
	w.Uint32(proto)
	w.Uint32(0)
	res, err := c.Call(ctx, rpc.PmapProg, rpc.PmapVers, pmapProcGetPort, w.Bytes())
	if err != nil {
		return 0, fmt.Errorf("portmapper GETPORT(%d, %d, %d): %w", prog, vers, proto, err)
	}
	r := xdr.NewReader(res)
	port := r.Uint32()
	if err := r.Err(); err != nil {
		return 0, fmt.Errorf("portmapper GETPORT result: %w", err)
	}
	return port, nil
}

// rpcbindAnswers reports whether a portmapper answers a NULL call on
// 127.0.0.1:111 over TCP.
func rpcbindAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return rpcNull(ctx, pmapAddr, rpc.PmapProg, rpc.PmapVers) == nil
}

// rpcNull makes a NULL call (procedure 0) to prog/vers over TCP at addr.
func rpcNull(ctx context.Context, addr string, prog, vers uint32) error {
	c, err := rpc.Dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Call(ctx, prog, vers, pmapProcNull, nil)
	return err
}

// rpcbindBinary finds rpcbind.
func rpcbindBinary() string { return kit.FindBinary("rpcbind", "/usr/sbin/rpcbind", "/sbin/rpcbind") }

// EnsureRpcbind starts rpcbind if nothing answers on 127.0.0.1:111
// (mkdir -p /run/rpcbind; rpcbind -f: foreground, all interfaces; this
// Debian build crashes with -h), installing the Debian package rpcbind with
// apt-get if it is missing. The returned stop func stops rpcbind only if
// this call started it (otherwise it does nothing). Stopping rpcbind drops
// every registration, so call it after the peers' Stop.
func EnsureRpcbind(ctx context.Context, log io.Writer) (stop func(), err error) {
	noop := func() {}
	if rpcbindAnswers(ctx) {
		fmt.Fprintln(log, "rpcbind: already running on 127.0.0.1:111")
		return noop, nil
	}
	bin := rpcbindBinary()
	if bin == "" {
		if err := kit.AptInstall(ctx, log, "rpcbind"); err != nil {
			return nil, err
		}
		if bin = rpcbindBinary(); bin == "" {
			return nil, errors.New("rpcbind: installed the package but found no rpcbind binary")
		}
		if rpcbindAnswers(ctx) { // the package's scripts started it
			fmt.Fprintln(log, "rpcbind: started by its package")
			return noop, nil
		}
	}
	if err := os.MkdirAll("/run/rpcbind", 0o755); err != nil {
		return nil, err
	}
	// rpcbind prints no ready line: Start returns at once and the loop
	// below waits for it to answer. Its context is not ctx: it must
	// outlive nothing but the run, which stops it.
	p, err := kit.Start(context.WithoutCancel(ctx), kit.Cmd{Name: "rpcbind", Argv: []string{bin, "-f"}, Grace: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	stop = func() { p.Stop() }
	deadline := time.Now().Add(10 * time.Second)
	for !rpcbindAnswers(ctx) {
		select {
		case <-p.Exited():
			return nil, fmt.Errorf("rpcbind exited (%v): %s", p.Err(), p.Tail(20))
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("rpcbind does not answer after 10s: %s", p.Tail(20))
		}
	}
	fmt.Fprintf(log, "rpcbind: started (pid %d)\n", p.Pid())
	return stop, nil
}

// mapping is one (program, version) an NFS server registers over TCP.
type mapping struct{ prog, vers uint32 }

var nfsMappings = []mapping{{NFSProg, NFSVers}, {MountProg, MountVers}, {MountProg, 1}}

// checkNFSMappingFree fails if a live server holds the NFSv3 or MOUNTv3
// mapping in rpcbind, and removes mappings that point at dead ports.
func checkNFSMappingFree(ctx context.Context, log io.Writer) error {
	if !rpcbindAnswers(ctx) {
		return errors.New("rpcbind does not answer on 127.0.0.1:111 (call EnsureRpcbind first)")
	}
	for _, m := range nfsMappings {
		port, err := PmapGetPort(ctx, m.prog, m.vers, rpc.IPProtoTCP)
		if err != nil {
			return err
		}
		if port == 0 {
			continue
		}
		if tcpAlive(ctx, fmt.Sprintf("127.0.0.1:%d", port)) {
			return fmt.Errorf("another server is registered with rpcbind for program %d v%d at port %d: "+
				"only one NFSv3 server can be registered at a time; stop it first", m.prog, m.vers, port)
		}
		fmt.Fprintf(log, "rpcbind: removing stale mapping of program %d v%d to dead port %d\n", m.prog, m.vers, port)
		if _, err := rpc.PmapUnset(ctx, m.prog, m.vers); err != nil {
			return err
		}
	}
	return nil
}

// unsetMappingsTo removes the NFS and MOUNT mappings that point at one of
// ports (left behind by a server that was killed).
func unsetMappingsTo(ctx context.Context, ports []uint32) error {
	if len(ports) == 0 || !rpcbindAnswers(ctx) {
		return nil
	}
	for _, m := range nfsMappings {
		port, err := PmapGetPort(ctx, m.prog, m.vers, rpc.IPProtoTCP)
		if err != nil {
			return err
		}
		for _, p := range ports {
			if port != 0 && port == p {
				if _, err := rpc.PmapUnset(ctx, m.prog, m.vers); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

func tcpAlive(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// waitServing polls until NULL calls to MOUNT v3 and NFS v3 succeed (the
// server accepts connections and runs its RPC loop), the process exits, or
// timeout passes.
func (p *Peer) waitServing(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = rpcNull(cctx, p.MountAddr, MountProg, MountVers)
		if last == nil {
			last = rpcNull(cctx, p.NFSAddr, NFSProg, NFSVers)
		}
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.proc.Exited():
			return fmt.Errorf("server exited (%v)", p.proc.Err())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("MOUNT/NFS not answering after %v: %w", timeout, last)
		}
	}
}

// ---------------------------------------------------------------------------
// NFS-Ganesha

// ganeshaBinary finds ganesha.nfsd.
func ganeshaBinary() string {
	return kit.FindBinary("ganesha.nfsd", "/usr/bin/ganesha.nfsd", "/usr/sbin/ganesha.nfsd")
}

// InstallGanesha installs the Debian packages nfs-ganesha and
// nfs-ganesha-vfs if missing and returns the installed nfs-ganesha
// version.
func InstallGanesha(ctx context.Context, log io.Writer) (string, error) {
	var missing []string
	for _, pkg := range ganeshaPackages {
		if !kit.DebInstalled(ctx, pkg) {
			missing = append(missing, pkg)
		}
	}
	if len(missing) > 0 {
		if err := kit.AptInstall(ctx, log, missing...); err != nil {
			return "", err
		}
	}
	if ganeshaBinary() == "" {
		return "", errors.New("no ganesha.nfsd binary after installing nfs-ganesha")
	}
	return kit.DebVersion(ctx, "nfs-ganesha"), nil
}

// StartGanesha starts NFS-Ganesha exporting dir (a directory on the project
// disk, created if missing) over NFSv3 only, TCP, on 127.0.0.1 and ports it
// picks free, installing it first if missing (InstallGanesha). rpcbind must
// be running (EnsureRpcbind); Ganesha registers NFS v3 and MOUNT v3 there,
// which clnt-smallfile uses. It returns once NULL calls to MOUNT and NFS
// succeed and rpcbind maps NFS v3 to Ganesha's port. Its config, log and
// PID file live in a temporary directory that Stop removes; dir itself is
// left in place.
func StartGanesha(ctx context.Context, dir string, log io.Writer) (*Peer, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := InstallGanesha(ctx, log); err != nil {
		return nil, fmt.Errorf("ganesha: %w", err)
	}
	if err := checkNFSMappingFree(ctx, log); err != nil {
		return nil, err
	}
	ports, err := freeport.TCP(4)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "strata-ganesha-")
	if err != nil {
		return nil, err
	}
	p := &Peer{
		Name:      "ganesha",
		NFSAddr:   fmt.Sprintf("127.0.0.1:%d", ports[0]),
		MountAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		Export:    GaneshaExport,
		tmpDir:    tmp,
		logPath:   filepath.Join(tmp, "ganesha.log"),
		ports:     []uint32{uint32(ports[0]), uint32(ports[1])},
	}
	conf := filepath.Join(tmp, "ganesha.conf")
	if err := os.WriteFile(conf, []byte(ganeshaConfig(dir, ports)), 0o644); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	// Ganesha keeps NFSv4 recovery state here even with NFSv4 off.
	os.MkdirAll("/var/lib/nfs/ganesha", 0o755)
	os.MkdirAll("/run/ganesha", 0o755)
	t0 := time.Now()
	// -L: Ganesha writes its own log (the kit keeps the tail of anything
	// else it prints). No ready line: waitServing polls.
	p.proc, err = kit.Start(ctx, kit.Cmd{
		Name: "ganesha.nfsd",
		Argv: []string{ganeshaBinary(), "-F", "-L", p.logPath, "-f", conf, "-p", filepath.Join(tmp, "ganesha.pid")},
	})
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start ganesha: %w", err)
	}
	if err := p.waitServing(ctx, 60*time.Second); err != nil {
		return nil, p.failStart(err)
	}
	if err := p.waitRegistered(ctx, uint32(ports[0]), 20*time.Second); err != nil {
		return nil, p.failStart(err)
	}
	fmt.Fprintf(log, "ganesha: serving %s (NFS %s, MOUNT %s, pid %d) after %v\n",
		dir, p.NFSAddr, p.MountAddr, p.proc.Pid(), time.Since(t0).Round(time.Millisecond))
	return p, nil
}

// ganeshaConfig is the configuration of PEERS.md: NFSv3 over TCP on
// loopback, no NLM, no RQUOTA, one VFS export of dir at pseudo path "/".
func ganeshaConfig(dir string, ports []int) string {
	return fmt.Sprintf(`NFS_CORE_PARAM {
	Bind_addr = 127.0.0.1;
	NFS_Port = %d;
	MNT_Port = %d;
	NLM_Port = %d;
	Rquota_Port = %d;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Protocols = 3;
	mount_path_pseudo = true;
}
NFSV4 {
	Graceless = true;
}
NFS_KRB5 {
	Active_krb5 = false;
}
EXPORT {
	Export_Id = 1;
	Path = %q;
	Pseudo = /;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Protocols = 3;
	Transports = TCP;
	SecType = sys;
	FSAL {
		Name = VFS;
	}
}
`, ports[0], ports[1], ports[2], ports[3], dir)
}

// waitRegistered polls until rpcbind maps NFS v3 over TCP to nfsPort.
func (p *Peer) waitRegistered(ctx context.Context, nfsPort uint32, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		port, err := PmapGetPort(ctx, NFSProg, NFSVers, rpc.IPProtoTCP)
		if err != nil {
			return err
		}
		if port == nfsPort {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rpcbind maps NFS v3 to port %d, not to the server's port %d", port, nfsPort)
		}
		select {
		case <-p.proc.Exited():
			return fmt.Errorf("server exited (%v)", p.proc.Err())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ---------------------------------------------------------------------------
// GoNFS

// BuildGoNFS builds go-nfsd (bench/nfs/gonfsd/cmd/go-nfsd: go-nfsd's server
// with its WRITE data aliasing fixed) and clnt-smallfile from the
// bench/nfs/gonfsd module (kit.BuildGo: cached by the module's contents)
// and returns the folder holding them.
func BuildGoNFS(ctx context.Context, log io.Writer) (string, error) {
	dir, err := kit.Module("nfs/gonfsd")
	if err != nil {
		return "", fmt.Errorf("gonfs: %w", err)
	}
	bins, err := kit.BuildGo(ctx, dir, []string{"./cmd/go-nfsd", "github.com/mit-pdos/go-nfsd/cmd/clnt-smallfile"}, log)
	if err != nil {
		return "", fmt.Errorf("gonfs: %w", err)
	}
	return bins, nil
}

// StartGoNFS builds the go-nfsd binaries (once; BuildGoNFS) and starts
// `go-nfsd -disk FILE -size sizeMB -unstable=true` (GoNFSUnstable), FILE
// being in a new temporary directory under dataDir (use a directory on the
// project disk). go-nfsd listens on a random port (all interfaces; MOUNT
// and NFS share it), registers it with rpcbind, which must be running
// (EnsureRpcbind), and prints its port. It returns once rpcbind maps both
// programs to that port and NULL calls to MOUNT and NFS succeed. Stop
// deletes the temporary directory and the disk file. The export path is
// GoNFSExport ("/"; go-nfsd accepts any path).
func StartGoNFS(ctx context.Context, dataDir string, sizeMB int, log io.Writer) (*Peer, error) {
	if sizeMB <= 0 {
		return nil, fmt.Errorf("gonfs: size %d MB", sizeMB)
	}
	bins, err := BuildGoNFS(ctx, log)
	if err != nil {
		return nil, err
	}
	if err := checkNFSMappingFree(ctx, log); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dataDir, "gonfsd-")
	if err != nil {
		return nil, err
	}
	tmp, _ = filepath.Abs(tmp)
	p := &Peer{
		Name:    "gonfs",
		Export:  GoNFSExport,
		goProg:  true,
		tmpDir:  tmp,
		logPath: filepath.Join(tmp, "go-nfsd.log"),
	}
	// Its whole output goes to the log (a goroutine dump is longer than
	// the kit's tail).
	if p.logFile, err = os.Create(p.logPath); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	t0 := time.Now()
	p.proc, err = kit.Start(ctx, kit.Cmd{
		Name: "go-nfsd",
		Argv: []string{filepath.Join(bins, "go-nfsd"), "-disk", filepath.Join(tmp, "disk.img"),
			"-size", strconv.Itoa(sizeMB), "-unstable=" + strconv.FormatBool(GoNFSUnstable)},
		// Printed once both programs are registered with rpcbind.
		Ready:        func(line string) bool { return bytes.HasPrefix([]byte(line), []byte("go-nfsd: serving")) },
		ReadyTimeout: time.Minute,
		Stdout:       p.logFile,
		Stderr:       p.logFile,
		// go-nfsd unregisters from rpcbind and shuts its journal down on
		// SIGINT.
		StopSignal: os.Interrupt,
	})
	if err != nil {
		p.logFile.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("gonfs: %w", err)
	}
	var port uint32
	if _, err := fmt.Sscanf(p.proc.Ready, "go-nfsd: serving MOUNT and NFS on port %d", &port); err != nil || port == 0 {
		return nil, p.failStart(fmt.Errorf("unexpected ready line %q", p.proc.Ready))
	}
	p.ports = []uint32{port}
	for _, m := range []mapping{{NFSProg, NFSVers}, {MountProg, MountVers}} {
		got, err := PmapGetPort(ctx, m.prog, m.vers, rpc.IPProtoTCP)
		if err != nil {
			return nil, p.failStart(err)
		}
		if got != port {
			return nil, p.failStart(fmt.Errorf("rpcbind maps program %d v%d to port %d, not to go-nfsd's %d", m.prog, m.vers, got, port))
		}
	}
	p.NFSAddr = fmt.Sprintf("127.0.0.1:%d", port)
	p.MountAddr = p.NFSAddr
	if err := p.waitServing(ctx, 60*time.Second); err != nil {
		return nil, p.failStart(err)
	}
	fmt.Fprintf(log, "gonfs: serving a %d MB disk file in %s (NFS and MOUNT %s, pid %d) after %v\n",
		sizeMB, tmp, p.NFSAddr, p.proc.Pid(), time.Since(t0).Round(time.Millisecond))
	return p, nil
}

// ---------------------------------------------------------------------------
// clnt-smallfile

// ClntSmallfile runs go-nfsd's raw-RPC smallfile client with threads
// concurrent clients for d (`clnt-smallfile -benchtime=d -start=threads
// -threads=threads`; with -start=1 the tool would also run every smaller
// thread count, one after the other) and returns the files/s it prints.
// Each client does, per file: LOOKUP (absent), CREATE, LOOKUP, GETATTR,
// WRITE of 100 bytes FILE_SYNC, GETATTR, REMOVE, in its own directory
// d<random> that it makes under the export root and leaves there.
//
// It measures whichever server rpcbind on localhost maps MOUNT v3 and NFS
// v3 (TCP) to: the peer started last and not yet stopped (Strata's own
// server too, which registers). It MNTs "/", the export of every server
// here, with AUTH_SYS uid 0.
func ClntSmallfile(ctx context.Context, threads int, d time.Duration, log io.Writer) (float64, error) {
	if threads < 1 {
		return 0, fmt.Errorf("clnt-smallfile: bad thread count %d", threads)
	}
	if d <= 0 {
		return 0, fmt.Errorf("clnt-smallfile: bad duration %v", d)
	}
	bins, err := BuildGoNFS(ctx, log)
	if err != nil {
		return 0, err
	}
	port, err := PmapGetPort(ctx, NFSProg, NFSVers, rpc.IPProtoTCP)
	if err != nil {
		return 0, err
	}
	if port == 0 {
		return 0, errors.New("clnt-smallfile: no NFS v3 server is registered with rpcbind")
	}
	fmt.Fprintf(log, "clnt-smallfile: %d threads, %v, against the NFS v3 server rpcbind maps to port %d\n", threads, d, port)
	// The tool has no timeout of its own: allow its run time plus a margin.
	ctx, cancel := context.WithTimeout(ctx, d+2*time.Minute)
	defer cancel()
	out, err := kit.Output(ctx, kit.Cmd{
		Name: "clnt-smallfile",
		Argv: []string{filepath.Join(bins, "clnt-smallfile"), "-benchtime=" + d.String(),
			"-start=" + strconv.Itoa(threads), "-threads=" + strconv.Itoa(threads)},
	})
	if err != nil {
		return 0, err
	}
	return parseClnt(out, threads)
}

// parseClnt finds clnt-smallfile's result line for threads
// ("clnt-smallfile: <threads> <files/s> file/s") in its output.
func parseClnt(out []byte, threads int) (float64, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var t int
		var r float64
		if n, _ := fmt.Sscanf(sc.Text(), "clnt-smallfile: %d %g file/s", &t, &r); n == 2 && t == threads {
			return r, nil
		}
	}
	return 0, fmt.Errorf("clnt-smallfile: no result for %d threads in its output:\n%s", threads, kit.Tail(string(out), 30))
}

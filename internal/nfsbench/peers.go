// Package nfsbench runs the NFSv3 servers that Strata's NFS server is
// compared with, and the peers' own load generator:
//
//   - NFS-Ganesha 4.3 (Debian packages nfs-ganesha and nfs-ganesha-vfs), a
//     userspace NFSv3 server exporting a directory through its VFS FSAL;
//   - GoNFS, the server of the GoJournal paper (github.com/mit-pdos/go-nfsd
//     v0.6.0), built from the separate module bench/gonfsd, on a file disk
//     (its server command is bench/gonfsd/cmd/go-nfsd, go-nfsd's own main
//     plus a copy of WRITE data that fixes v0.6.0's data corruption);
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
// Nothing here is meant for CI: the Start functions install Debian packages
// (apt-get) and build Go modules.
package nfsbench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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

// GoNFSVersion is the go-nfsd release pinned by bench/gonfsd/go.mod.
const GoNFSVersion = "v0.6.0"

// GoNFSExport is the path GoNFS answers MNT for. go-nfsd's MOUNTPROC3_MNT
// ignores its argument and always returns the root file handle;
// clnt-smallfile mounts "/".
const GoNFSExport = "/"

// GaneshaExport is the path to MNT on the Ganesha peer: its export is
// configured with Pseudo = / and mount_path_pseudo = true, so NFSv3 clients
// mount "/" (which is also what clnt-smallfile mounts).
const GaneshaExport = "/"

var (
	// GoNFSSource is the directory of the bench/gonfsd module. Empty means:
	// search for bench/gonfsd from the working directory and the
	// executable's directory upwards.
	GoNFSSource string
	// GoNFSBinDir is where the go-nfsd binaries are built once and reused.
	// Empty means $XDG_CACHE_HOME/strata/gonfsd-<hash of go.mod, go.sum,
	// cmd/go-nfsd/main.go> (~/.cache/... when XDG_CACHE_HOME is unset).
	GoNFSBinDir string
)

// Peer is a running NFSv3 server other than Strata.
type Peer struct {
	Name      string // "ganesha" or "gonfs"
	NFSAddr   string // "127.0.0.1:PORT" (TCP) of the NFS program (100003 v3)
	MountAddr string // "127.0.0.1:PORT" (TCP) of MOUNT (100005 v3)
	Export    string // the export path to MNT

	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd.Wait returned
	waitErr error         // cmd.Wait's result, once exited is closed
	stopSig os.Signal     // the signal that makes the server exit cleanly
	goProg  bool          // a Go program: SIGQUIT prints its goroutine stacks
	tmpDir  string        // removed by Stop
	logPath string        // the server's log (inside tmpDir)
	ports   []uint32      // the server's ports, for removing its rpcbind mappings

	stopOnce sync.Once
	stopErr  error
}

// Stop stops the server (its clean-exit signal, then SIGKILL after 15 s),
// removes rpcbind mappings still pointing at its ports and deletes its
// temporary files (for GoNFS including its disk file). It is safe to call
// more than once.
func (p *Peer) Stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.stop() })
	return p.stopErr
}

func (p *Peer) stop() error {
	var errs []error
	if p.cmd != nil && p.cmd.Process != nil {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Signal(p.stopSig)
			select {
			case <-p.exited:
			case <-time.After(15 * time.Second):
				if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
					errs = append(errs, fmt.Errorf("kill %s: %w", p.Name, err))
				}
				<-p.exited
			}
		}
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

// Exited reports whether the server process has exited (it should not
// before Stop).
func (p *Peer) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// LogTail returns the last n lines of the server's log (empty after Stop).
func (p *Peer) LogTail(n int) string { return tailFile(p.logPath, n) }

// DumpStacks is for a server that stopped answering: it copies the
// server's log to dst, for GoNFS (a Go program) after sending it SIGQUIT,
// on which the Go runtime writes every goroutine's stack to the log and
// exits. GoNFS is gone afterwards; Stop is still needed (rpcbind mappings,
// temporary files, which include the log). For Ganesha it only copies the
// log.
func (p *Peer) DumpStacks(dst string) error {
	if p.goProg && p.cmd != nil && p.cmd.Process != nil && !p.Exited() {
		if err := p.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
			return fmt.Errorf("%s: SIGQUIT: %w", p.Name, err)
		}
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
		}
	}
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// start runs cmd (its output appended to p.logPath) and watches its exit.
func (p *Peer) start(cmd *exec.Cmd) error {
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // the child has its own copy
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // no terminal signals from the caller's group
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd = cmd
	p.exited = make(chan struct{})
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return nil
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
	bin := findBinary("rpcbind", "/usr/sbin/rpcbind", "/sbin/rpcbind")
	if bin == "" {
		if err := aptInstall(ctx, log, "rpcbind"); err != nil {
			return nil, err
		}
		if bin = findBinary("rpcbind", "/usr/sbin/rpcbind", "/sbin/rpcbind"); bin == "" {
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
	var out lockedBuffer
	cmd := exec.Command(bin, "-f")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start rpcbind: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop = func() {
		select {
		case <-exited:
			return
		default:
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !rpcbindAnswers(ctx) {
		select {
		case <-exited:
			return nil, fmt.Errorf("rpcbind exited: %s", out.String())
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("rpcbind does not answer after 10s: %s", out.String())
		}
	}
	fmt.Fprintf(log, "rpcbind: started (pid %d)\n", cmd.Process.Pid)
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
		case <-p.exited:
			return fmt.Errorf("server exited (%v)", p.waitErr)
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

// StartGanesha starts NFS-Ganesha exporting dir (a directory on the project
// disk, created if missing) over NFSv3 only, TCP, on 127.0.0.1 and ports it
// picks free, installing the Debian packages nfs-ganesha and
// nfs-ganesha-vfs if missing. rpcbind must be running (EnsureRpcbind);
// Ganesha registers NFS v3 and MOUNT v3 there, which clnt-smallfile uses.
// It returns once NULL calls to MOUNT and NFS succeed and rpcbind maps NFS
// v3 to Ganesha's port. Its config, log and PID file live in a temporary
// directory that Stop removes; dir itself is left in place.
func StartGanesha(ctx context.Context, dir string, log io.Writer) (*Peer, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var missing []string
	for _, pkg := range []string{"nfs-ganesha", "nfs-ganesha-vfs"} {
		if !debInstalled(ctx, pkg) {
			missing = append(missing, pkg)
		}
	}
	if len(missing) > 0 {
		if err := aptInstall(ctx, log, missing...); err != nil {
			return nil, err
		}
	}
	bin := findBinary("ganesha.nfsd", "/usr/bin/ganesha.nfsd", "/usr/sbin/ganesha.nfsd")
	if bin == "" {
		return nil, errors.New("ganesha: no ganesha.nfsd binary after installing nfs-ganesha")
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
		stopSig:   syscall.SIGTERM,
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
	cmd := exec.Command(bin, "-F", "-L", p.logPath, "-f", conf, "-p", filepath.Join(tmp, "ganesha.pid"))
	t0 := time.Now()
	if err := p.start(cmd); err != nil {
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
		dir, p.NFSAddr, p.MountAddr, cmd.Process.Pid, time.Since(t0).Round(time.Millisecond))
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
		case <-p.exited:
			return fmt.Errorf("server exited (%v)", p.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ---------------------------------------------------------------------------
// GoNFS

// StartGoNFS builds the go-nfsd binaries (once; see GoNFSBinDir) and starts
// `go-nfsd -disk FILE -size sizeMB -unstable=false`, FILE being in a new
// temporary directory under dataDir (use a directory on the project disk).
// go-nfsd listens on a random port (all interfaces; MOUNT and NFS share
// it) and registers it with rpcbind, which must be running (EnsureRpcbind):
// the port is found with PmapGetPort. It returns once NULL calls to MOUNT
// and NFS succeed. Stop deletes the temporary directory and the disk file.
// The export path is GoNFSExport ("/"; go-nfsd accepts any path).
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
		stopSig: os.Interrupt, // go-nfsd unregisters from rpcbind on SIGINT only
		goProg:  true,
		tmpDir:  tmp,
		logPath: filepath.Join(tmp, "go-nfsd.log"),
	}
	cmd := exec.Command(filepath.Join(bins, "go-nfsd"), "-disk", filepath.Join(tmp, "disk.img"),
		"-size", strconv.Itoa(sizeMB), "-unstable=false")
	t0 := time.Now()
	if err := p.start(cmd); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start go-nfsd: %w", err)
	}
	// go-nfsd registers MOUNT, then NFS, both with its one listening port.
	deadline := time.Now().Add(30 * time.Second)
	var nfsPort, mntPort uint32
	for {
		nfsPort, err = PmapGetPort(ctx, NFSProg, NFSVers, rpc.IPProtoTCP)
		if err == nil {
			mntPort, err = PmapGetPort(ctx, MountProg, MountVers, rpc.IPProtoTCP)
		}
		if err != nil {
			return nil, p.failStart(err)
		}
		if nfsPort != 0 && mntPort != 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, p.failStart(errors.New("not registered with rpcbind after 30s"))
		}
		select {
		case <-p.exited:
			return nil, p.failStart(fmt.Errorf("exited (%v)", p.waitErr))
		case <-ctx.Done():
			return nil, p.failStart(ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	p.NFSAddr = fmt.Sprintf("127.0.0.1:%d", nfsPort)
	p.MountAddr = fmt.Sprintf("127.0.0.1:%d", mntPort)
	p.ports = []uint32{nfsPort, mntPort}
	if err := p.waitServing(ctx, 60*time.Second); err != nil {
		return nil, p.failStart(err)
	}
	fmt.Fprintf(log, "gonfs: serving a %d MB disk file in %s (NFS %s, MOUNT %s, pid %d) after %v\n",
		sizeMB, tmp, p.NFSAddr, p.MountAddr, cmd.Process.Pid, time.Since(t0).Round(time.Millisecond))
	return p, nil
}

var buildMu sync.Mutex

// BuildGoNFS builds go-nfsd (bench/gonfsd/cmd/go-nfsd: go-nfsd's server
// with its WRITE data aliasing fixed), clnt-smallfile and clnt-null from the
// bench/gonfsd module into GoNFSBinDir (default: a directory in the user
// cache named by a hash of go.mod, go.sum and the server's main.go), unless
// they are already there, and returns that directory.
func BuildGoNFS(ctx context.Context, log io.Writer) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	src, err := findGoNFSSource()
	if err != nil {
		return "", err
	}
	dir := GoNFSBinDir
	if dir == "" {
		h := sha256.New()
		for _, f := range []string{"go.mod", "go.sum", "cmd/go-nfsd/main.go"} {
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				return "", err
			}
			h.Write(b)
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, "strata", "gonfsd-"+GoNFSVersion+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	}
	cmds := []string{"go-nfsd", "clnt-smallfile", "clnt-null"}
	have := true
	for _, c := range cmds {
		if st, err := os.Stat(filepath.Join(dir, c)); err != nil || !st.Mode().IsRegular() {
			have = false
		}
	}
	if have {
		return dir, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("gonfs: building go-nfsd needs the Go toolchain: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	args := []string{"build", "-o", tmp + string(filepath.Separator)}
	for _, c := range cmds {
		if c == "go-nfsd" {
			// bench/gonfsd's own copy of go-nfsd's main, which copies
			// WRITE data out of the pooled RPC request buffer (the
			// v0.6.0 server keeps aliases to it and corrupts files).
			args = append(args, "./cmd/go-nfsd")
			continue
		}
		args = append(args, "github.com/mit-pdos/go-nfsd/cmd/"+c)
	}
	fmt.Fprintf(log, "gonfs: building go-nfsd %s from %s into %s (first build downloads modules)\n", GoNFSVersion, src, dir)
	t0 := time.Now()
	b := exec.CommandContext(ctx, goBin, args...)
	b.Dir = src
	var out bytes.Buffer
	b.Stdout, b.Stderr = &out, &out
	if err := b.Run(); err != nil {
		return "", fmt.Errorf("gonfs: go %s in %s: %w\n%s", strings.Join(args, " "), src, err, out.String())
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "gonfs: built in %v\n", time.Since(t0).Round(time.Millisecond))
	return dir, nil
}

func findGoNFSSource() (string, error) {
	if GoNFSSource != "" {
		if _, err := os.Stat(filepath.Join(GoNFSSource, "go.mod")); err != nil {
			return "", fmt.Errorf("gonfs: GoNFSSource: %w", err)
		}
		return GoNFSSource, nil
	}
	self, _ := os.Executable()
	wd, _ := os.Getwd()
	for _, d := range []string{wd, filepath.Dir(self)} {
		for d != "" {
			p := filepath.Join(d, "bench", "gonfsd")
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return p, nil
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return "", errors.New("gonfs: cannot find bench/gonfsd (run from the Strata source tree or set nfsbench.GoNFSSource)")
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
// server too, if it registered). It MNTs "/", the export of both peers
// here, with AUTH_SYS uid 0.
func ClntSmallfile(ctx context.Context, threads int, d time.Duration, log io.Writer) (float64, error) {
	rates, err := ClntSmallfileSweep(ctx, threads, threads, d, log)
	if err != nil {
		return 0, err
	}
	return rates[threads], nil
}

// ClntSmallfileSweep runs clnt-smallfile once for each thread count from
// `from` to `to` (its -start and -threads), d each, and returns files/s by
// thread count. See ClntSmallfile.
func ClntSmallfileSweep(ctx context.Context, from, to int, d time.Duration, log io.Writer) (map[int]float64, error) {
	if from < 1 || to < from {
		return nil, fmt.Errorf("clnt-smallfile: bad thread range %d..%d", from, to)
	}
	if d <= 0 {
		return nil, fmt.Errorf("clnt-smallfile: bad duration %v", d)
	}
	bins, err := BuildGoNFS(ctx, log)
	if err != nil {
		return nil, err
	}
	port, err := PmapGetPort(ctx, NFSProg, NFSVers, rpc.IPProtoTCP)
	if err != nil {
		return nil, err
	}
	if port == 0 {
		return nil, errors.New("clnt-smallfile: no NFS v3 server is registered with rpcbind")
	}
	fmt.Fprintf(log, "clnt-smallfile: %d..%d threads, %v each, against the NFS v3 server rpcbind maps to port %d\n",
		from, to, d, port)
	// The tool has no timeout of its own: allow its run time plus a margin.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(to-from+1)*d+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bins, "clnt-smallfile"),
		"-benchtime="+d.String(), "-start="+strconv.Itoa(from), "-threads="+strconv.Itoa(to))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("clnt-smallfile: %w\n%s", err, tail(out.String(), 30))
	}
	rates := map[int]float64{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		// Its result lines: "clnt-smallfile: <threads> <files/s> file/s".
		var t int
		var r float64
		if n, _ := fmt.Sscanf(sc.Text(), "clnt-smallfile: %d %g file/s", &t, &r); n == 2 {
			rates[t] = r
			fmt.Fprintf(log, "clnt-smallfile: %d threads: %.1f files/s\n", t, r)
		}
	}
	for t := from; t <= to; t++ {
		if _, ok := rates[t]; !ok {
			return nil, fmt.Errorf("clnt-smallfile: no result for %d threads in its output:\n%s", t, tail(out.String(), 30))
		}
	}
	return rates, nil
}

// ---------------------------------------------------------------------------
// helpers

// findBinary returns name from PATH or the first of paths that exists.
func findBinary(name string, paths ...string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// debInstalled reports whether the Debian package pkg is installed.
func debInstalled(ctx context.Context, pkg string) bool {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}", pkg).Output()
	return err == nil && strings.Contains(string(out), "install ok installed")
}

// aptInstall installs Debian packages with apt-get (running apt-get update
// and retrying once if the first attempt fails), its output going to log.
func aptInstall(ctx context.Context, log io.Writer, pkgs ...string) error {
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		return cmd.Run()
	}
	fmt.Fprintf(log, "apt-get install -y %s\n", strings.Join(pkgs, " "))
	t0 := time.Now()
	args := append([]string{"install", "-y"}, pkgs...)
	if err := run(args...); err != nil {
		fmt.Fprintf(log, "apt-get install failed (%v); running apt-get update and retrying\n", err)
		if err := run("update"); err != nil {
			return fmt.Errorf("apt-get update: %w", err)
		}
		if err := run(args...); err != nil {
			return fmt.Errorf("apt-get install %s: %w", strings.Join(pkgs, " "), err)
		}
	}
	fmt.Fprintf(log, "installed %s in %v\n", strings.Join(pkgs, " "), time.Since(t0).Round(time.Millisecond))
	return nil
}

func tailFile(path string, n int) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return tail(string(b), n)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lockedBuffer is a bytes.Buffer safe for a writer goroutine and readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

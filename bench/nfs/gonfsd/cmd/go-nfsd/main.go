// Command go-nfsd serves go-nfsd v0.6.0's file system (GoNFS, the GoJournal
// paper's server) for strata's NFS benchmark, with WRITE data copied before
// go-nfsd sees it. Flags: -disk FILE, -size MB, -unstable (as go-nfsd's own
// command). It listens on a free TCP port for MOUNT and NFS, registers both
// with the local rpcbind, prints "go-nfsd: serving MOUNT and NFS on port N"
// on stdout (the benchmark's ready line), and unregisters on SIGINT or
// SIGTERM.
//
// Why the copy: go-rpcgen v0.1.4's server reads each request into a pooled
// buffer and returns the buffer to the pool after replying, and its XDR
// decoder leaves WRITE3args.Data pointing into that buffer. go-nfsd v0.6.0
// passes whole aligned 4 KiB blocks of it to its journal without copying
// (inode/inode.go), which keeps the slice; a later request that reuses the
// buffer then changes file data already written and committed (measured:
// after FILE_SYNC writes of 4096 'A's to one file and 4096 'B's to another,
// 32 of 300 reads of the first file returned 'B's; 0 of 300 with the copy).
// The benchmark's read-back checks fail on the unmodified server.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/tchajed/goose/machine/disk"
	"github.com/zeldovich/go-rpcgen/rfc1057"
	"github.com/zeldovich/go-rpcgen/xdr"

	gonfs "github.com/mit-pdos/go-nfsd/nfs"
	"github.com/mit-pdos/go-nfsd/nfstypes"
)

// copiedWrites is go-nfsd's server whose WRITE owns its data; every other
// procedure is go-nfsd's.
type copiedWrites struct{ *gonfs.Nfs }

func (s copiedWrites) NFSPROC3_WRITE(args nfstypes.WRITE3args) nfstypes.WRITE3res {
	args.Data = append([]byte(nil), args.Data...)
	return s.Nfs.NFSPROC3_WRITE(args)
}

// pmap sets (port > 0) or unsets (port 0) the TCP mapping of prog/vers in
// the local rpcbind.
func pmap(prog, vers, port uint32) error {
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", rfc1057.PMAP_PORT))
	if err != nil {
		return fmt.Errorf("rpcbind: %w", err)
	}
	defer c.Close()
	none := rfc1057.Opaque_auth{Flavor: rfc1057.AUTH_NONE}
	proc := uint32(rfc1057.PMAPPROC_UNSET)
	if port > 0 {
		proc = rfc1057.PMAPPROC_SET
	}
	var ok xdr.Bool
	m := rfc1057.Mapping{Prog: prog, Vers: vers, Prot: rfc1057.IPPROTO_TCP, Port: port}
	if err := rfc1057.MakeClient(c, rfc1057.PMAP_PROG, rfc1057.PMAP_VERS).Call(proc, none, none, &m, &ok); err != nil {
		return fmt.Errorf("rpcbind: %w", err)
	}
	if port > 0 && !ok {
		return fmt.Errorf("rpcbind refused program %d version %d on port %d", prog, vers, port)
	}
	return nil
}

func main() {
	diskFile := flag.String("disk", "", "disk image file (empty: in memory)")
	sizeMB := flag.Uint64("size", 400, "file system size in MB")
	unstable := flag.Bool("unstable", true, "honour UNSTABLE writes (false: every write is stable)")
	flag.Parse()

	blocks := 1500 + *sizeMB*1024/4 // what go-nfsd's own command allots
	var d disk.Disk
	if *diskFile == "" {
		d = disk.NewMemDisk(blocks)
	} else {
		fd, err := disk.NewFileDisk(*diskFile, blocks)
		if err != nil {
			log.Fatalf("go-nfsd: disk %s: %v", *diskFile, err)
		}
		d = fd
	}
	fs := gonfs.MakeNfs(d)
	fs.Unstable = *unstable

	l, err := net.Listen("tcp", ":0")
	if err != nil {
		log.Fatalf("go-nfsd: %v", err)
	}
	port := uint32(l.Addr().(*net.TCPAddr).Port)
	progs := [][2]uint32{{nfstypes.MOUNT_PROGRAM, nfstypes.MOUNT_V3}, {nfstypes.NFS_PROGRAM, nfstypes.NFS_V3}}
	unregister := func() {
		for _, p := range progs {
			if err := pmap(p[0], p[1], 0); err != nil {
				log.Printf("go-nfsd: unregister: %v", err)
			}
		}
	}
	for _, p := range progs {
		pmap(p[0], p[1], 0) // a stale mapping from an earlier run
		if err := pmap(p[0], p[1], port); err != nil {
			log.Fatalf("go-nfsd: register: %v", err)
		}
	}

	srv := rfc1057.MakeServer()
	srv.RegisterMany(nfstypes.MOUNT_PROGRAM_MOUNT_V3_regs(fs))
	srv.RegisterMany(nfstypes.NFS_PROGRAM_NFS_V3_regs(copiedWrites{fs}))
	fmt.Printf("go-nfsd: serving MOUNT and NFS on port %d\n", port)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		l.Close()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			break // closed by the signal handler
		}
		go srv.Run(c)
	}
	unregister()
	fs.ShutdownNfs()
}

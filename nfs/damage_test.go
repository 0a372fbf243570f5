package nfs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"strata/journal"
	"strata/nfs/xdr"
)

// lockedBuffer is a log destination the test reads while the server writes.
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

// TestDamagedImageIsIO: damage an NFS call meets in the image is answered
// NFS3ERR_IO and logged at error level with the inode and block; the call
// changes nothing and the server goes on serving the rest.
func TestDamagedImageIsIO(t *testing.T) {
	ts := startTestServer(t, filepath.Join(t.TempDir(), "nfs.img"))
	var log lockedBuffer
	ts.srv.log = slog.New(slog.NewTextHandler(&log, nil))
	c := dialTest(t, ts)
	root, st := c.mnt("/strata")
	if st != 0 {
		t.Fatalf("mnt: %d", st)
	}
	fh, st := c.create(root, "f")
	if st != nfsOK {
		t.Fatalf("create: %d", st)
	}
	if st := c.write(fh, 0, bytes.Repeat([]byte("f"), 3*4096), 2); st != nfsOK {
		t.Fatalf("write: %d", st)
	}
	gh, _ := c.create(root, "g")
	if st := c.write(gh, 0, []byte("still here"), 2); st != nfsOK {
		t.Fatalf("write: %d", st)
	}
	_, h, err := ts.srv.fh.decode(fh)
	if err != nil {
		t.Fatal(err)
	}
	// Below the file system, point f's second block at block 2 (metadata).
	// The layout is nfs/fs's (layout.go): the superblock's itStart field
	// at byte 64, inode i at block itStart+i/32, byte i%32*128, its block
	// pointers from byte 80.
	sb, err := ts.j.Begin().ReadBuf(journal.Addr{Blkno: 0}, journal.BlockBits)
	if err != nil {
		t.Fatal(err)
	}
	itStart := binary.LittleEndian.Uint64(sb.Data[64:])
	op := ts.j.Begin()
	ptr1 := journal.Addr{Blkno: itStart + uint64(h.Ino)/32, Off: (uint64(h.Ino)%32*128 + 80 + 4) * 8}
	if err := op.OverWrite(ptr1, 32, binary.LittleEndian.AppendUint32(nil, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Commit(true); err != nil {
		t.Fatal(err)
	}

	if _, _, st := c.read(fh, 4096, 100); st != errIO {
		t.Fatalf("READ of the damaged block: status %d, want NFS3ERR_IO (%d)", st, errIO)
	}
	if _, st := c.call(procRemove, func(w *xdr.Writer) { dirop(w, root, "f") }); st != errIO {
		t.Fatalf("REMOVE of the damaged file: status %d, want NFS3ERR_IO", st)
	}
	for _, want := range []string{"level=ERROR", "proc=read", "proc=remove", fmt.Sprintf("inode=%d", h.Ino), "block=2", "outside the data area"} {
		if !strings.Contains(log.String(), want) {
			t.Fatalf("log lacks %q:\n%s", want, log.String())
		}
	}
	// The failed REMOVE changed nothing; the rest is served.
	if _, st := c.lookup(root, "f"); st != nfsOK {
		t.Fatalf("LOOKUP f after the failed REMOVE: %d", st)
	}
	if data, _, st := c.read(fh, 0, 100); st != nfsOK || string(data) != strings.Repeat("f", 100) {
		t.Fatalf("READ of f's first block: %d %q", st, data)
	}
	if data, _, st := c.read(gh, 0, 100); st != nfsOK || string(data) != "still here" {
		t.Fatalf("READ g: %d %q", st, data)
	}
	if names, st := c.readdir(root); st != nfsOK || len(names) != 4 {
		t.Fatalf("READDIR: %v %d", names, st)
	}
	rep, err := ts.fs.Check()
	if err != nil || rep.Clean() || !strings.Contains(rep.String(), "outside the data area") {
		t.Fatalf("check: %v %v", rep, err)
	}
}

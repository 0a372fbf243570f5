package fs

import (
	"fmt"
	"strings"

	"strata/journal"
	"strata/journal/wal"
)

const (
	maxRead = 1 << 22 // longest Read reply, bytes
)

func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%w: bad name %q", ErrInval, name)
	}
	if len(name) > MaxName {
		return fmt.Errorf("%w: %d bytes", ErrNameTooLong, len(name))
	}
	return nil
}

func isDot(name string) bool { return name == "." || name == ".." }

// newName checks a name for an entry about to be created.
func newName(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if isDot(name) {
		return fmt.Errorf("%w: %q", ErrExist, name)
	}
	return nil
}

func (f *FS) lock(inums ...Inum) []uint64 {
	keys := make([]uint64, len(inums))
	for i, n := range inums {
		keys[i] = uint64(n)
	}
	return f.locks.AcquireAll(keys)
}

func (f *FS) unlock(keys []uint64) { f.locks.ReleaseAll(keys) }

// commitMeta commits a metadata operation (durable unless the file system
// runs with UnstableMetadata).
func (f *FS) commitMeta(t *tx) error { return t.commit(f.syncMeta) }

// GetAttr returns the attributes of h: ErrStale for a freed inode or a
// generation mismatch.
func (f *FS) GetAttr(h Handle) (Attr, error) {
	f.gate.RLock()
	defer f.gate.RUnlock()
	defer f.unlock(f.lock(h.Ino))
	t := f.begin()
	defer t.abort()
	ip, err := t.live(h)
	if err != nil {
		return Attr{}, err
	}
	return ip.attr(), nil
}

// SetAttr changes attributes. With guard, the file's ctime must equal
// *guard (else ErrNotSync). ctime becomes now; a size change also sets
// mtime unless sa sets it. Shrinking is done in steps (see the package
// comment); the guard is checked before the first.
func (f *FS) SetAttr(h Handle, sa SetAttr, guard *Time, now Time) (WCC, Attr, error) {
	f.gate.RLock()
	defer f.gate.RUnlock()
	defer f.unlock(f.lock(h.Ino))
	return f.setAttrLocked(h, sa, guard, now)
}

func (f *FS) setAttrLocked(h Handle, sa SetAttr, guard *Time, now Time) (WCC, Attr, error) {
	t := f.begin()
	ip, err := t.live(h)
	if err != nil {
		return WCC{}, Attr{}, err
	}
	pre := ip.wcc()
	t.abort()
	if guard != nil && *guard != ip.ctime {
		return pre, ip.attr(), ErrNotSync
	}
	if sa.Size != nil {
		switch {
		case ip.typ == TypeDir:
			return pre, ip.attr(), fmt.Errorf("%w: cannot set the size of a directory", ErrIsDir)
		case ip.typ != TypeReg:
			return pre, ip.attr(), fmt.Errorf("%w: cannot set the size of a non-regular file", ErrInval)
		case *sa.Size > MaxFileSize:
			return pre, ip.attr(), fmt.Errorf("%w: size %d", ErrFBig, *sa.Size)
		}
	}
	budget := f.opBudget()
	for {
		t := f.begin()
		ip, err := t.live(h)
		if err != nil {
			return pre, Attr{}, err
		}
		if sa.Size != nil && *sa.Size < ip.size {
			target := *sa.Size
			used := ip.used
			done, low, err := t.freeTail(ip, divUp(target, blockSize), 8)
			if err != nil {
				t.abort()
				return pre, Attr{}, err
			}
			if !done {
				// An intermediate step: lower the size to just above what
				// is still mapped.
				if ns := min(ip.size, max(target, low*blockSize)); ns != ip.size {
					ip.size = ns
					t.writeInode(ip)
				}
				if ip.used == used {
					t.abort()
					return pre, Attr{}, fmt.Errorf("%w: truncate makes no progress (journal log too small)", ErrIO)
				}
				if err := t.commit(false); err != nil {
					if f.retry(err, budget) {
						budget = f.opBudget()
						continue
					}
					return pre, Attr{}, err
				}
				f.stepDone(ip.size)
				continue
			}
			if r := target % blockSize; r != 0 {
				// Zero the tail of the new last block so that growing the
				// file later reads zeros there.
				bn, _, err := t.bmap(ip, target/blockSize, false)
				if err != nil {
					t.abort()
					return pre, Attr{}, err
				}
				if bn != 0 {
					buf, err := t.readBlock(ip.inum, bn)
					if err != nil {
						t.abort()
						return pre, Attr{}, err
					}
					clear(buf.Data[r:])
					t.dirtyBuf(buf)
				}
			}
		}
		applySetAttr(ip, sa, now)
		t.writeInode(ip)
		if err := f.commitMeta(t); err != nil {
			if f.retry(err, budget) {
				budget = f.opBudget()
				continue
			}
			return pre, Attr{}, err
		}
		return pre, ip.attr(), nil
	}
}

// applySetAttr applies everything but the freeing of blocks.
func applySetAttr(ip *inode, sa SetAttr, now Time) {
	if sa.Size != nil && *sa.Size != ip.size {
		ip.size = *sa.Size
		ip.mtime = now
	}
	applyOwnership(ip, sa)
	switch sa.Atime {
	case ServerTime:
		ip.atime = now
	case ClientTime:
		ip.atime = sa.AtimeVal
	}
	switch sa.Mtime {
	case ServerTime:
		ip.mtime = now
	case ClientTime:
		ip.mtime = sa.MtimeVal
	}
	ip.ctime = now
}

// Lookup finds name in dir and returns the file's handle and attributes and
// the directory's attributes (also with ErrNoEnt). "." is dir itself, ".."
// its parent (the root's parent is the root).
func (f *FS) Lookup(dir Handle, name string) (Handle, Attr, Attr, error) {
	if err := checkName(name); err != nil {
		return Handle{}, Attr{}, Attr{}, err
	}
	f.gate.RLock()
	defer f.gate.RUnlock()
	defer f.unlock(f.lock(dir.Ino))
	t := f.begin()
	defer t.abort()
	d, err := t.liveDir(dir)
	if err != nil {
		return Handle{}, Attr{}, Attr{}, err
	}
	var ino Inum
	var gen uint32
	switch name {
	case ".":
		return d.handle(), d.attr(), d.attr(), nil
	case "..":
		ino = d.parent()
	default:
		e, found, _, err := t.dirLookup(d, name)
		if err != nil {
			return Handle{}, Attr{}, d.attr(), err
		}
		if !found {
			return Handle{}, Attr{}, d.attr(), fmt.Errorf("%w: %q", ErrNoEnt, name)
		}
		ino, gen = e.inum, e.gen
	}
	// The child cannot go away while dir is locked: it is read without its
	// own lock (a committed snapshot of it).
	c, err := t.named(ino, d.inum, fmt.Sprintf("entry %q", name))
	if err != nil {
		return Handle{}, Attr{}, d.attr(), err
	}
	if !c.live() || (name != ".." && c.gen != gen) {
		return Handle{}, Attr{}, d.attr(), corrupt(d.inum, 0, "entry %q names dead inode %d generation %d", name, ino, gen)
	}
	return c.handle(), c.attr(), d.attr(), nil
}

// Read returns up to count bytes at off (fewer at the end of the file, and
// at most 4 MiB); eof says the reply reaches the end of the file.
func (f *FS) Read(h Handle, off uint64, count uint32) (data []byte, eof bool, a Attr, err error) {
	return f.readAlloc(h, off, count, nil)
}

// ReadTouch is Read that also records the access as Linux's relatime
// does: atime moves to now when it is older than the file's mtime or ctime
// or more than a day older than now, so a file read over and over costs one
// metadata commit per change or per day, not one per read. The update
// commits without waiting (it becomes durable with the next operation that
// waits, or Flush); if it cannot commit, the read still succeeds and the
// returned attributes keep the old atime.
func (f *FS) ReadTouch(h Handle, off uint64, count uint32, now Time) (data []byte, eof bool, a Attr, err error) {
	return f.readAlloc(h, off, count, &now)
}

func (f *FS) readAlloc(h Handle, off uint64, count uint32, now *Time) ([]byte, bool, Attr, error) {
	buf := make([]byte, min(count, maxRead))
	n, eof, a, err := f.ReadAt(h, off, buf, now, nil)
	if err != nil {
		return nil, false, a, err
	}
	return buf[:n:n], eof, a, nil
}

// atimeStale says whether a read at now should move ip's atime (relatime).
func atimeStale(ip *inode, now Time) bool {
	return ip.atime.before(ip.mtime) || ip.atime.before(ip.ctime) || uint64(ip.atime.Sec)+24*3600 <= uint64(now.Sec)
}

func (a Time) before(b Time) bool { return a.Sec < b.Sec || a.Sec == b.Sec && a.Nsec < b.Nsec }

// ReadAt reads up to len(dst) bytes at off into dst (fewer at the end of
// the file, and at most 4 MiB) and returns how many; eof says they reach
// the end of the file. With now it updates atime as ReadTouch does. check,
// if not nil, is called with the file's attributes before anything is
// read (under the file's lock): its error fails the read (a permission
// check, say). The returned attributes are the file's after the read,
// also on failure once the file was found.
func (f *FS) ReadAt(h Handle, off uint64, dst []byte, now *Time, check func(Attr) error) (n int, eof bool, a Attr, err error) {
	f.gate.RLock()
	defer f.gate.RUnlock()
	defer f.unlock(f.lock(h.Ino))
	t := f.begin()
	defer t.abort()
	ip, err := t.live(h)
	if err != nil {
		return 0, false, Attr{}, err
	}
	if check != nil {
		if err := check(ip.attr()); err != nil {
			return 0, false, ip.attr(), err
		}
	}
	if err := regular(ip); err != nil {
		return 0, false, ip.attr(), err
	}
	if off >= ip.size || len(dst) == 0 {
		return 0, off >= ip.size, ip.attr(), nil
	}
	n = int(min(uint64(len(dst)), ip.size-off, maxRead))
	if err := t.readData(ip, off, dst[:n]); err != nil {
		return 0, false, ip.attr(), err
	}
	if now != nil && atimeStale(ip, *now) {
		old := ip.atime
		ip.atime = *now
		t.writeInode(ip)
		if t.commit(false) != nil {
			ip.atime = old
		}
	}
	return n, off+uint64(n) >= ip.size, ip.attr(), nil
}

// readData fills dst with ip's data at off (within the file): whole
// blocks straight into dst, each run of consecutive blocks in one journal
// read, the partial blocks at either end through a block buffer; holes
// read as zeros.
func (t *tx) readData(ip *inode, off uint64, dst []byte) error {
	end := off + uint64(len(dst))
	first, last := off/blockSize, (end-1)/blockSize
	var tmp []byte
	defer func() {
		if tmp != nil {
			wal.PutBlock(tmp)
		}
	}()
	// A run of consecutive mapped blocks [runL, runL+runLen) at runBn.
	var runL, runBn, runLen uint64
	flush := func() error {
		if runLen == 0 {
			return nil
		}
		defer func() { runLen = 0 }()
		if !t.f.sb.isDataBlock(runBn) || !t.f.sb.isDataBlock(runBn+runLen-1) {
			return corrupt(ip.inum, runBn, "block pointers %d..%d outside the data area", runBn, runBn+runLen-1)
		}
		// Whole blocks of the run go straight into dst; a block cut by
		// off or end goes through tmp.
		lo, hi := runL, runL+runLen // logical blocks
		if off > lo*blockSize {
			if err := t.readPartial(ip, runBn, lo, off, end, dst, &tmp); err != nil {
				return err
			}
			lo++
		}
		if hi > lo && end < hi*blockSize {
			if err := t.readPartial(ip, runBn+(hi-1-runL), hi-1, off, end, dst, &tmp); err != nil {
				return err
			}
			hi--
		}
		if hi > lo {
			d := dst[lo*blockSize-off : hi*blockSize-off]
			if err := t.f.j.ReadBlocks(runBn+(lo-runL), d); err != nil {
				return ioErr(fmt.Sprintf("read blocks %d..%d", runBn+(lo-runL), runBn+(hi-runL)-1), err)
			}
		}
		return nil
	}
	for L := first; L <= last; L++ {
		bn, _, err := t.bmap(ip, L, false)
		if err != nil {
			return err
		}
		if bn != 0 && runLen > 0 && bn == runBn+runLen {
			runLen++
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if bn != 0 {
			runL, runBn, runLen = L, bn, 1
			continue
		}
		// A hole: zeros.
		lo, hi := max(L*blockSize, off), min((L+1)*blockSize, end)
		clear(dst[lo-off : hi-off])
	}
	return flush()
}

// readPartial copies the part of logical block L (at bn) that lies in
// [off, end) into dst (which holds [off, end)), reading the block into
// *tmp (a block buffer made on first use).
func (t *tx) readPartial(ip *inode, bn, L, off, end uint64, dst []byte, tmp *[]byte) error {
	if *tmp == nil {
		*tmp = wal.GetBlock()
	}
	if err := t.f.j.ReadBlocks(bn, *tmp); err != nil {
		return ioErr(fmt.Sprintf("read block %d of inode %d", bn, ip.inum), err)
	}
	lo, hi := max(L*blockSize, off), min((L+1)*blockSize, end)
	copy(dst[lo-off:hi-off], (*tmp)[lo-L*blockSize:hi-L*blockSize])
	return nil
}

func regular(ip *inode) error {
	switch ip.typ {
	case TypeReg:
		return nil
	case TypeDir:
		return fmt.Errorf("%w: inode %d", ErrIsDir, ip.inum)
	default:
		return fmt.Errorf("%w: inode %d is not a regular file", ErrInval, ip.inum)
	}
}

// directMin is the smallest write whose new whole blocks are written
// directly (see tx.writeFresh).
const directMin = 32 << 10

// Write stores data at off and sets mtime and ctime to now. With stable the
// data is durable on return. More data than one journal operation holds is
// written in chunks, each atomic, in file order.
func (f *FS) Write(h Handle, off uint64, data []byte, stable bool, now Time) (WCC, Attr, error) {
	return f.WriteChecked(h, off, data, stable, now, nil)
}

// WriteChecked is Write that first calls check, if not nil, with the
// file's attributes (under the file's lock): its error fails the write,
// which then changes nothing (a permission check, say).
func (f *FS) WriteChecked(h Handle, off uint64, data []byte, stable bool, now Time, check func(Attr) error) (WCC, Attr, error) {
	f.gate.RLock()
	defer f.gate.RUnlock()
	defer f.unlock(f.lock(h.Ino))
	t := f.begin()
	ip, err := t.live(h)
	if err != nil {
		t.abort()
		return WCC{}, Attr{}, err
	}
	pre := ip.wcc()
	fail := func(err error) (WCC, Attr, error) {
		a := ip.attr()
		t.abort()
		return pre, a, err
	}
	if check != nil {
		if err := check(ip.attr()); err != nil {
			return fail(err)
		}
	}
	if err := regular(ip); err != nil {
		return fail(err)
	}
	end := off + uint64(len(data))
	if end < off || end > MaxFileSize {
		return fail(fmt.Errorf("%w: write to %d+%d", ErrFBig, off, len(data)))
	}
	if len(data) == 0 {
		return fail(nil)
	}
	budget := f.opBudget()
	// Big writes put new whole blocks straight home (written once, not
	// twice); small ones log them: a direct write costs the next group
	// commit an extra barrier, more than logging a few blocks.
	direct := len(data) >= directMin
	var attr Attr
	for pos := 0; pos < len(data); {
		if t == nil { // the first chunk uses the operation that checked h
			t = f.begin()
			if ip, err = t.live(h); err != nil {
				t.abort()
				return pre, Attr{}, err
			}
		}
		start := pos
		for pos < len(data) && (pos == start || !t.full(8)) {
			p := off + uint64(pos)
			L, boff := p/blockSize, p%blockSize
			k := min(blockSize-int(boff), len(data)-pos)
			bn, fresh, err := t.bmap(ip, L, true)
			if err != nil {
				t.abort()
				return pre, Attr{}, err
			}
			switch {
			case fresh && k == blockSize && direct:
				err = t.writeFresh(bn, data[pos:pos+k])
			case k == blockSize:
				err = t.writeBlock(bn, data[pos:pos+k])
			case fresh:
				b := make([]byte, blockSize)
				copy(b[boff:], data[pos:pos+k])
				err = t.writeBlock(bn, b)
			default:
				var buf *journal.Buf
				if buf, err = t.readBlock(ip.inum, bn); err == nil {
					copy(buf.Data[boff:], data[pos:pos+k])
					t.dirtyBuf(buf)
				}
			}
			if err != nil {
				t.abort()
				return pre, Attr{}, err
			}
			pos += k
		}
		ip.size = max(ip.size, off+uint64(pos))
		ip.mtime, ip.ctime = now, now
		t.writeInode(ip)
		attr = ip.attr()
		err := t.commit(stable && pos == len(data))
		t = nil
		if err != nil {
			if f.retry(err, budget) {
				budget, pos = f.opBudget(), start
				continue
			}
			return pre, Attr{}, err
		}
		if pos < len(data) {
			f.stepDone(uint64(pos))
		}
	}
	return pre, attr, nil
}

// Create makes a regular file. Guarded fails with ErrExist if name exists;
// Unchecked on an existing regular file applies attr.Size to it (and
// succeeds); Exclusive stores verf in the new file, and a retry with the
// same verf finds the file and succeeds (another verf: ErrExist).
func (f *FS) Create(dir Handle, name string, mode CreateMode, attr SetAttr, verf uint64, uid, gid uint32, now Time) (Handle, Attr, WCC, Attr, error) {
	if err := newName(name); err != nil {
		return Handle{}, Attr{}, WCC{}, Attr{}, err
	}
	if attr.Size != nil && *attr.Size > MaxFileSize {
		return Handle{}, Attr{}, WCC{}, Attr{}, fmt.Errorf("%w: size %d", ErrFBig, *attr.Size)
	}
	f.gate.RLock()
	defer f.gate.RUnlock()
	keys := f.lock(dir.Ino)
	t := f.begin()
	d, err := t.liveDir(dir)
	if err != nil {
		f.unlock(keys)
		return Handle{}, Attr{}, WCC{}, Attr{}, err
	}
	pre := d.wcc()
	e, found, disc, err := t.dirLookup(d, name)
	if err != nil {
		f.unlock(keys)
		return Handle{}, Attr{}, pre, d.attr(), err
	}
	if !found {
		h, a, dattr, err := f.addEntry(t, d, name, disc, TypeReg, attr, uid, gid, now, func(t *tx, ip *inode) error {
			ip.mode = 0644
			if mode == Exclusive {
				ip.verf = verf
				return nil
			}
			return applyCreateAttr(ip, attr, now)
		})
		f.unlock(keys)
		return h, a, pre, dattr, err
	}
	// The name exists.
	c, err := t.named(e.inum, d.inum, fmt.Sprintf("entry %q", name))
	dattr := d.attr()
	f.unlock(keys)
	if err != nil {
		return Handle{}, Attr{}, pre, dattr, err
	}
	h := Handle{Ino: e.inum, Gen: e.gen}
	switch {
	case mode == Guarded || c.typ != TypeReg:
		return Handle{}, Attr{}, pre, dattr, fmt.Errorf("%w: %q", ErrExist, name)
	case mode == Exclusive:
		if c.verf != verf {
			return Handle{}, Attr{}, pre, dattr, fmt.Errorf("%w: %q (another create verifier)", ErrExist, name)
		}
		return h, c.attr(), pre, dattr, nil
	case attr.Size == nil:
		return h, c.attr(), pre, dattr, nil
	}
	keys = f.lock(e.inum)
	defer f.unlock(keys)
	_, a, err := f.setAttrLocked(h, SetAttr{Size: attr.Size}, nil, now)
	return h, a, pre, dattr, err
}

// applyOwnership applies the mode, uid and gid a SetAttr carries.
func applyOwnership(ip *inode, sa SetAttr) {
	if sa.Mode != nil {
		ip.mode = *sa.Mode & 07777
	}
	if sa.UID != nil {
		ip.uid = *sa.UID
	}
	if sa.GID != nil {
		ip.gid = *sa.GID
	}
}

// applyCreateAttr applies the initial attributes given to a create.
func applyCreateAttr(ip *inode, sa SetAttr, now Time) error {
	if sa.Size != nil {
		if ip.typ != TypeReg && *sa.Size != 0 {
			return fmt.Errorf("%w: size of a non-regular file", ErrInval)
		}
		ip.size = *sa.Size
	}
	applyOwnership(ip, sa)
	if sa.Atime == ClientTime {
		ip.atime = sa.AtimeVal
	}
	if sa.Mtime == ClientTime {
		ip.mtime = sa.MtimeVal
	}
	return nil
}

// addEntry creates an inode of type typ, lets init set it up, links it into
// d (locked, name checked absent) and commits. It consumes t.
func (f *FS) addEntry(t *tx, d *inode, name string, disc int, typ FileType, attr SetAttr, uid, gid uint32, now Time, init func(*tx, *inode) error) (Handle, Attr, Attr, error) {
	dattr0 := d.attr()
	fail := func(err error) (Handle, Attr, Attr, error) {
		t.abort()
		return Handle{}, Attr{}, dattr0, err
	}
	if typ == TypeDir && d.nlink >= f.linkMax {
		return fail(fmt.Errorf("%w: directory %d has %d links", ErrMLink, d.inum, d.nlink))
	}
	ip, err := t.allocInode(typ, now)
	if err != nil {
		return fail(err)
	}
	ip.uid, ip.gid = uid, gid
	if err := init(t, ip); err != nil {
		return fail(err)
	}
	if err := t.dirAdd(d, name, ip, disc); err != nil {
		return fail(err)
	}
	if typ == TypeDir {
		d.nlink++
	}
	d.mtime, d.ctime = now, now
	t.writeInode(d)
	t.writeInode(ip)
	if err := f.commitMeta(t); err != nil {
		return Handle{}, Attr{}, dattr0, err
	}
	return ip.handle(), ip.attr(), d.attr(), nil
}

// mkEntry is the common part of Mkdir, Symlink and Mknod.
func (f *FS) mkEntry(dir Handle, name string, typ FileType, attr SetAttr, uid, gid uint32, now Time, init func(*tx, *inode) error) (Handle, Attr, WCC, Attr, error) {
	if err := newName(name); err != nil {
		return Handle{}, Attr{}, WCC{}, Attr{}, err
	}
	f.gate.RLock()
	defer f.gate.RUnlock()
	defer f.unlock(f.lock(dir.Ino))
	t := f.begin()
	d, err := t.liveDir(dir)
	if err != nil {
		return Handle{}, Attr{}, WCC{}, Attr{}, err
	}
	pre := d.wcc()
	_, found, disc, err := t.dirLookup(d, name)
	if err == nil && found {
		err = fmt.Errorf("%w: %q", ErrExist, name)
	}
	if err != nil {
		return Handle{}, Attr{}, pre, d.attr(), err
	}
	h, a, dattr, err := f.addEntry(t, d, name, disc, typ, attr, uid, gid, now, init)
	return h, a, pre, dattr, err
}

// Mkdir makes a directory (mode 0755 unless attr sets it).
func (f *FS) Mkdir(dir Handle, name string, attr SetAttr, uid, gid uint32, now Time) (Handle, Attr, WCC, Attr, error) {
	if attr.Size != nil && *attr.Size != 0 {
		return Handle{}, Attr{}, WCC{}, Attr{}, fmt.Errorf("%w: size of a directory", ErrInval)
	}
	return f.mkEntry(dir, name, TypeDir, attr, uid, gid, now, func(t *tx, ip *inode) error {
		ip.mode, ip.nlink, ip.ptr[1] = 0755, 2, uint32(dir.Ino)
		if err := applyCreateAttr(ip, SetAttr{Mode: attr.Mode, UID: attr.UID, GID: attr.GID, Atime: attr.Atime, Mtime: attr.Mtime, AtimeVal: attr.AtimeVal, MtimeVal: attr.MtimeVal}, now); err != nil {
			return err
		}
		return t.newDirRoot(ip)
	})
}

// Symlink makes a symbolic link to target (1 to MaxSymlink bytes, kept in
// one data block).
func (f *FS) Symlink(dir Handle, name, target string, attr SetAttr, uid, gid uint32, now Time) (Handle, Attr, WCC, Attr, error) {
	switch {
	case target == "":
		return Handle{}, Attr{}, WCC{}, Attr{}, fmt.Errorf("%w: empty symlink target", ErrInval)
	case len(target) > MaxSymlink:
		return Handle{}, Attr{}, WCC{}, Attr{}, fmt.Errorf("%w: symlink target of %d bytes", ErrNameTooLong, len(target))
	}
	return f.mkEntry(dir, name, TypeLnk, attr, uid, gid, now, func(t *tx, ip *inode) error {
		ip.mode = 0777
		if err := applyCreateAttr(ip, SetAttr{Mode: attr.Mode, UID: attr.UID, GID: attr.GID, Atime: attr.Atime, Mtime: attr.Mtime, AtimeVal: attr.AtimeVal, MtimeVal: attr.MtimeVal}, now); err != nil {
			return err
		}
		bn, err := t.allocBlock()
		if err != nil {
			return err
		}
		b := make([]byte, blockSize)
		copy(b, target)
		if err := t.writeBlock(bn, b); err != nil {
			return err
		}
		ip.ptr[0], ip.used, ip.size = uint32(bn), 1, uint64(len(target))
		return nil
	})
}

// Mknod makes a device, socket or FIFO (t: TypeChr, TypeBlk, TypeSock,
// TypeFifo; others are ErrInval). The device number is kept for TypeChr and
// TypeBlk.
func (f *FS) Mknod(dir Handle, name string, t FileType, rdevMajor, rdevMinor uint32, attr SetAttr, uid, gid uint32, now Time) (Handle, Attr, WCC, Attr, error) {
	switch t {
	case TypeChr, TypeBlk, TypeSock, TypeFifo:
	default:
		return Handle{}, Attr{}, WCC{}, Attr{}, fmt.Errorf("%w: mknod of type %d", ErrInval, t)
	}
	if attr.Size != nil && *attr.Size != 0 {
		return Handle{}, Attr{}, WCC{}, Attr{}, fmt.Errorf("%w: size of a special file", ErrInval)
	}
	return f.mkEntry(dir, name, t, attr, uid, gid, now, func(_ *tx, ip *inode) error {
		ip.mode = 0644
		if t == TypeChr || t == TypeBlk {
			ip.maj, ip.minor = rdevMajor, rdevMinor
		}
		return applyCreateAttr(ip, attr, now)
	})
}

// Readlink returns a symbolic link's target.
func (f *FS) Readlink(h Handle) (string, Attr, error) {
	f.gate.RLock()
	defer f.gate.RUnlock()
	defer f.unlock(f.lock(h.Ino))
	t := f.begin()
	defer t.abort()
	ip, err := t.live(h)
	if err != nil {
		return "", Attr{}, err
	}
	if ip.typ != TypeLnk {
		return "", ip.attr(), fmt.Errorf("%w: inode %d is not a symlink", ErrInval, h.Ino)
	}
	if ip.size > maxSymlink || ip.ptr[0] == 0 {
		return "", ip.attr(), corrupt(ip.inum, 0, "symlink of size %d with block %d", ip.size, ip.ptr[0])
	}
	buf, err := t.readBlock(ip.inum, uint64(ip.ptr[0]))
	if err != nil {
		return "", ip.attr(), err
	}
	return string(buf.Data[:ip.size]), ip.attr(), nil
}

// Remove removes a non-directory entry (ErrIsDir for a directory). The file
// is freed when its last link goes.
func (f *FS) Remove(dir Handle, name string, now Time) (WCC, Attr, error) {
	return f.unlink(dir, name, now, false)
}

// Rmdir removes an empty directory: ErrNotDir for another type,
// ErrNotEmpty if it has entries. "." is ErrInval and ".." ErrExist (".."
// names a directory that is never empty: it holds dir).
func (f *FS) Rmdir(dir Handle, name string, now Time) (WCC, Attr, error) {
	return f.unlink(dir, name, now, true)
}

func (f *FS) unlink(dir Handle, name string, now Time, rmdir bool) (WCC, Attr, error) {
	if err := checkName(name); err != nil {
		return WCC{}, Attr{}, err
	}
	if name == "." || (name == ".." && !rmdir) {
		return WCC{}, Attr{}, fmt.Errorf("%w: cannot remove %q", ErrInval, name)
	}
	if name == ".." {
		return WCC{}, Attr{}, fmt.Errorf("%w: cannot remove %q", ErrExist, name)
	}
	f.gate.RLock()
	defer f.gate.RUnlock()
	budget := f.opBudget()
	for {
		// Find the child under the directory lock, then lock both in order
		// and check that the entry has not changed meanwhile.
		keys := f.lock(dir.Ino)
		t := f.begin()
		d, err := t.liveDir(dir)
		var e dent
		var found bool
		if err == nil {
			e, found, _, err = t.dirLookup(d, name)
		}
		f.unlock(keys)
		if err != nil {
			return WCC{}, Attr{}, err
		}
		if !found {
			return d.wcc(), d.attr(), fmt.Errorf("%w: %q", ErrNoEnt, name)
		}
		keys = f.lock(dir.Ino, e.inum)
		t = f.begin()
		if d, err = t.liveDir(dir); err != nil {
			f.unlock(keys)
			return WCC{}, Attr{}, err
		}
		e2, found, _, err := t.dirLookup(d, name)
		if err != nil || !found || e2 != e {
			f.unlock(keys)
			if err != nil {
				return WCC{}, Attr{}, err
			}
			continue // changed under us: start again
		}
		pre, dattr0 := d.wcc(), d.attr()
		slot, err := f.unlinkOp(t, d, e, rmdir, now)
		if err != nil {
			t.abort()
			f.unlock(keys)
			return pre, dattr0, err
		}
		if err := f.commitMeta(t); err != nil {
			f.unlock(keys)
			if f.retry(err, budget) {
				budget = f.opBudget()
				continue
			}
			return pre, Attr{}, err
		}
		dattr := d.attr()
		f.locks.Release(uint64(dir.Ino))
		if slot >= 0 {
			err = f.reclaimLocked(e.inum, slot)
		}
		f.locks.Release(uint64(e.inum))
		return pre, dattr, err
	}
}

// unlinkOp removes entry e from d in t (rmdir: e must be an empty
// directory). It returns the orphan slot if the child's blocks are left for
// reclaim, else -1.
func (f *FS) unlinkOp(t *tx, d *inode, e dent, rmdir bool, now Time) (int, error) {
	if e.inum == d.inum || e.inum == rootInum {
		return -1, corrupt(d.inum, 0, "entry %q names the directory itself or the root", e.name)
	}
	c, err := t.named(e.inum, d.inum, fmt.Sprintf("entry %q", e.name))
	if err != nil {
		return -1, err
	}
	if !c.live() || c.gen != e.gen {
		return -1, corrupt(d.inum, 0, "entry %q names dead inode %d generation %d", e.name, e.inum, e.gen)
	}
	if rmdir {
		if c.typ != TypeDir {
			return -1, fmt.Errorf("%w: %q", ErrNotDir, e.name)
		}
		empty, err := t.dirEmpty(c)
		if err != nil {
			return -1, err
		}
		if !empty {
			return -1, fmt.Errorf("%w: %q", ErrNotEmpty, e.name)
		}
	} else if c.typ == TypeDir {
		return -1, fmt.Errorf("%w: %q", ErrIsDir, e.name)
	}
	if err := t.dirRemove(d, e.key); err != nil {
		return -1, err
	}
	d.mtime, d.ctime = now, now
	if rmdir {
		d.nlink--
	}
	t.writeInode(d)
	return t.dropLink(c, now)
}

// dropLink removes one link to c (whose entry is gone). A directory (empty)
// or a file losing its last link is freed: at once if its blocks fit in
// this operation, otherwise it goes to the orphan table and the returned
// slot (>= 0) must be passed to reclaimLocked after the commit.
func (t *tx) dropLink(c *inode, now Time) (int, error) {
	if c.typ == TypeDir {
		if err := t.freeBlock(c.inum, uint64(c.ptr[0])); err != nil {
			return -1, err
		}
		return -1, t.freeInode(c)
	}
	c.nlink--
	c.ctime = now
	t.writeInode(c)
	if c.nlink > 0 {
		return -1, nil
	}
	done, low, err := t.freeTail(c, 0, 8)
	if err != nil {
		return -1, err
	}
	if done {
		return -1, t.freeInode(c)
	}
	c.size = min(c.size, low*blockSize)
	t.writeInode(c)
	if err := t.takeOrphanSlot(c.inum); err != nil {
		return -1, err
	}
	return t.takenSlots[len(t.takenSlots)-1], nil
}

// reclaim frees an orphan inode recorded in slot.
func (f *FS) reclaim(inum Inum, slot int) error {
	defer f.unlock(f.lock(inum))
	return f.reclaimLocked(inum, slot)
}

// reclaimLocked frees the blocks of unlinked inode inum in steps, then the
// inode and its orphan slot. The caller holds inum's lock.
func (f *FS) reclaimLocked(inum Inum, slot int) error {
	budget := f.opBudget()
	for {
		t := f.begin()
		ip, err := t.named(inum, 0, fmt.Sprintf("orphan table slot %d", slot))
		if err != nil {
			return err
		}
		if ip.typ == TypeDir && ip.nlink == 0 {
			// Directories are freed at once, never through the table:
			// their block map is not a file's.
			return corrupt(inum, 0, "orphan table slot %d names a directory", slot)
		}
		if ip.typ == 0 || ip.nlink != 0 {
			// Not an orphan (cannot happen: the slot is cleared with the
			// inode's release); just drop the slot.
			if err := t.clearOrphanSlot(slot); err != nil {
				t.abort()
				return err
			}
			return t.commit(false)
		}
		used := ip.used
		done, low, err := t.freeTail(ip, 0, 4)
		if err == nil && done {
			if err = t.freeInode(ip); err == nil {
				err = t.clearOrphanSlot(slot)
			}
		} else if err == nil {
			ip.size = min(ip.size, low*blockSize)
			t.writeInode(ip)
			if ip.used == used {
				err = fmt.Errorf("%w: freeing makes no progress (journal log too small)", ErrIO)
			}
		}
		if err != nil {
			t.abort()
			return err
		}
		if err := t.commit(false); err != nil {
			if f.retry(err, budget) {
				budget = f.opBudget()
				continue
			}
			return err
		}
		if done {
			return nil
		}
		f.stepDone(0)
	}
}

// Rename moves fromDir/fromName to toDir/toName, replacing an existing
// toName: a file by a file, a directory by an empty directory (ErrNotDir
// for a directory over a file, ErrIsDir for a file over a directory,
// ErrNotEmpty over a non-empty directory). Moving a directory into its own
// subtree is ErrInval, as is "." or ".." on either side. Renaming a name
// onto another link of the same file does nothing.
func (f *FS) Rename(fromDir Handle, fromName string, toDir Handle, toName string, now Time) (fromWCC WCC, fromAttr Attr, toWCC WCC, toAttr Attr, err error) {
	for _, n := range []string{fromName, toName} {
		if err := checkName(n); err != nil {
			return WCC{}, Attr{}, WCC{}, Attr{}, err
		}
		if isDot(n) {
			return WCC{}, Attr{}, WCC{}, Attr{}, fmt.Errorf("%w: cannot rename %q", ErrInval, n)
		}
	}
	f.gate.RLock()
	defer f.gate.RUnlock()
	cross := fromDir.Ino != toDir.Ino
	if cross {
		// Serialises every change of a directory's parent, so the
		// ancestry check below sees a stable tree.
		f.renameMu.Lock()
		defer f.renameMu.Unlock()
	}
	budget := f.opBudget()
	for {
		keys := f.lock(fromDir.Ino, toDir.Ino)
		t := f.begin()
		src, dst, dstFound, err := f.renameLookup(t, fromDir, fromName, toDir, toName)
		f.unlock(keys)
		if err != nil {
			return WCC{}, Attr{}, WCC{}, Attr{}, err
		}
		inums := []Inum{fromDir.Ino, toDir.Ino, src.inum}
		if dstFound {
			inums = append(inums, dst.inum)
		}
		keys = f.lock(inums...)
		t = f.begin()
		src2, dst2, dstFound2, err := f.renameLookup(t, fromDir, fromName, toDir, toName)
		if err != nil {
			f.unlock(keys)
			return WCC{}, Attr{}, WCC{}, Attr{}, err
		}
		if src2 != src || dstFound2 != dstFound || dst2 != dst {
			f.unlock(keys)
			continue
		}
		fd, _ := t.inode(fromDir.Ino)
		td, _ := t.inode(toDir.Ino)
		fpre, tpre := fd.wcc(), td.wcc()
		fattr0, tattr0 := fd.attr(), td.attr()
		slot, noop, err := f.renameOp(t, fd, td, src, dst, dstFound, toName, now)
		if err != nil || noop {
			t.abort()
			f.unlock(keys)
			return fpre, fattr0, tpre, tattr0, err
		}
		if err := f.commitMeta(t); err != nil {
			f.unlock(keys)
			if f.retry(err, budget) {
				budget = f.opBudget()
				continue
			}
			return fpre, Attr{}, tpre, Attr{}, err
		}
		fattr, tattr := fd.attr(), td.attr()
		if slot >= 0 {
			for _, k := range keys {
				if k != uint64(dst.inum) {
					f.locks.Release(k)
				}
			}
			err = f.reclaimLocked(dst.inum, slot)
			f.locks.Release(uint64(dst.inum))
		} else {
			f.unlock(keys)
		}
		return fpre, fattr, tpre, tattr, err
	}
}

func (f *FS) renameLookup(t *tx, fromDir Handle, fromName string, toDir Handle, toName string) (src, dst dent, dstFound bool, err error) {
	fd, err := t.liveDir(fromDir)
	if err != nil {
		return
	}
	td, err := t.liveDir(toDir)
	if err != nil {
		return
	}
	src, found, _, err := t.dirLookup(fd, fromName)
	if err != nil {
		return
	}
	if !found {
		err = fmt.Errorf("%w: %q", ErrNoEnt, fromName)
		return
	}
	dst, dstFound, _, err = t.dirLookup(td, toName)
	return
}

// renameOp makes the rename in t; all the inodes involved are locked.
func (f *FS) renameOp(t *tx, fd, td *inode, src, dst dent, dstFound bool, toName string, now Time) (slot int, noop bool, err error) {
	if src.inum == fd.inum || src.inum == rootInum {
		return -1, false, corrupt(fd.inum, 0, "entry %q names the directory itself or the root", src.name)
	}
	if dstFound && (dst.inum == td.inum || dst.inum == rootInum) {
		return -1, false, corrupt(td.inum, 0, "entry %q names the directory itself or the root", dst.name)
	}
	s, err := t.named(src.inum, fd.inum, fmt.Sprintf("entry %q", src.name))
	if err != nil {
		return -1, false, err
	}
	if !s.live() || s.gen != src.gen {
		return -1, false, corrupt(fd.inum, 0, "entry %q names dead inode %d generation %d", src.name, src.inum, src.gen)
	}
	var dn *inode
	if dstFound {
		if dst.inum == src.inum {
			return -1, true, nil // two links to one file: nothing to do
		}
		if dn, err = t.named(dst.inum, td.inum, fmt.Sprintf("entry %q", dst.name)); err != nil {
			return -1, false, err
		}
		if !dn.live() || dn.gen != dst.gen {
			return -1, false, corrupt(td.inum, 0, "entry %q names dead inode %d generation %d", dst.name, dst.inum, dst.gen)
		}
		switch {
		case s.typ == TypeDir && dn.typ != TypeDir:
			return -1, false, fmt.Errorf("%w (%w): %q", ErrNotDir, ErrIncompatible, toName)
		case s.typ != TypeDir && dn.typ == TypeDir:
			return -1, false, fmt.Errorf("%w (%w): %q", ErrIsDir, ErrIncompatible, toName)
		case dn.typ == TypeDir:
			empty, err := t.dirEmpty(dn)
			if err != nil {
				return -1, false, err
			}
			if !empty {
				return -1, false, fmt.Errorf("%w (%w): %q", ErrNotEmpty, ErrIncompatible, toName)
			}
		}
	}
	moveDir := s.typ == TypeDir && fd.inum != td.inum
	if moveDir {
		if err := f.checkNotAncestor(t, s.inum, td.inum); err != nil {
			return -1, false, err
		}
		if !dstFound && td.nlink >= f.linkMax {
			return -1, false, fmt.Errorf("%w: directory %d has %d links", ErrMLink, td.inum, td.nlink)
		}
	}
	if err := t.dirRemove(fd, src.key); err != nil {
		return -1, false, err
	}
	if dstFound {
		err = t.dirSet(td, dst.key, s)
	} else {
		err = t.dirAdd(td, toName, s, -1)
	}
	if err != nil {
		return -1, false, err
	}
	if moveDir {
		s.ptr[1] = uint32(td.inum)
		fd.nlink--
		td.nlink++
	}
	s.ctime = now
	fd.mtime, fd.ctime = now, now
	td.mtime, td.ctime = now, now
	t.writeInode(s)
	t.writeInode(fd)
	t.writeInode(td)
	slot = -1
	if dstFound {
		if dn.typ == TypeDir {
			td.nlink--
		}
		if slot, err = t.dropLink(dn, now); err != nil {
			return -1, false, err
		}
	}
	return slot, false, nil
}

// checkNotAncestor fails with ErrInval if dir is inside the subtree of
// moving (or is it). The caller holds renameMu, so no directory's parent
// changes meanwhile; directories on the path are read unlocked.
func (f *FS) checkNotAncestor(t *tx, moving, dir Inum) error {
	cur := dir
	for i := uint64(0); ; i++ {
		if cur == moving {
			return fmt.Errorf("%w: cannot move directory %d into its own subtree", ErrInval, moving)
		}
		if cur == rootInum {
			return nil
		}
		if i > f.sb.ninodes {
			return corrupt(cur, 0, "directory parent loop")
		}
		if cur == 0 || uint64(cur) >= f.sb.ninodes {
			return corrupt(0, 0, "a directory's parent field names inode %d, outside the inode table", cur)
		}
		var ip *inode
		if c, ok := t.inodes[cur]; ok {
			ip = c
		} else {
			buf, err := f.j.Begin().ReadBuf(f.sb.inodeAddr(cur), inodeBits)
			if err != nil {
				return ioErr("read inode", err)
			}
			ip = decodeInode(cur, buf.Data)
		}
		if ip.typ != TypeDir {
			return corrupt(cur, 0, "parent of a directory is not a directory (type %d)", ip.typ)
		}
		cur = ip.parent()
	}
}

// Link adds name in dir as a new link to h (ErrIsDir for a directory).
func (f *FS) Link(h Handle, dir Handle, name string, now Time) (Attr, WCC, Attr, error) {
	if err := newName(name); err != nil {
		return Attr{}, WCC{}, Attr{}, err
	}
	f.gate.RLock()
	defer f.gate.RUnlock()
	defer f.unlock(f.lock(h.Ino, dir.Ino))
	t := f.begin()
	d, err := t.liveDir(dir)
	if err != nil {
		return Attr{}, WCC{}, Attr{}, err
	}
	pre := d.wcc()
	ip, err := t.live(h)
	if err != nil {
		return Attr{}, pre, d.attr(), err
	}
	if ip.typ == TypeDir {
		return ip.attr(), pre, d.attr(), fmt.Errorf("%w: cannot link a directory", ErrIsDir)
	}
	if ip.nlink >= f.linkMax {
		return ip.attr(), pre, d.attr(), fmt.Errorf("%w: inode %d has %d links", ErrMLink, ip.inum, ip.nlink)
	}
	attr0, dattr0 := ip.attr(), d.attr()
	_, found, disc, err := t.dirLookup(d, name)
	if err == nil && found {
		err = fmt.Errorf("%w: %q", ErrExist, name)
	}
	if err == nil {
		err = t.dirAdd(d, name, ip, disc)
	}
	if err != nil {
		t.abort()
		return attr0, pre, dattr0, err
	}
	ip.nlink++
	ip.ctime = now
	d.mtime, d.ctime = now, now
	t.writeInode(ip)
	t.writeInode(d)
	if err := f.commitMeta(t); err != nil {
		return Attr{}, pre, Attr{}, err
	}
	return ip.attr(), pre, d.attr(), nil
}

// cookieVerf is the READDIR cookie verifier: constant, since cookies never
// become invalid.
func (f *FS) cookieVerf() uint64 { return (f.sb.salt ^ magic) | 1 }

// ReadDir lists dir from cookie (0: the start) returning at most
// maxEntries entries, "." and ".." first (cookies 1 and 2). Each entry's
// Cookie resumes the listing after it. A non-zero cookie with a verifier
// other than 0 or the one returned earlier is ErrBadCookie. With plus,
// Attr is filled (a zero Attr.Type means the attributes were unavailable).
func (f *FS) ReadDir(dir Handle, cookie uint64, verf uint64, maxEntries int, plus bool) (entries []DirEntry, eof bool, newVerf uint64, dirAttr Attr, err error) {
	if maxEntries <= 0 {
		return nil, false, 0, Attr{}, fmt.Errorf("%w: readdir of %d entries", ErrInval, maxEntries)
	}
	f.gate.RLock()
	defer f.gate.RUnlock()
	defer f.unlock(f.lock(dir.Ino))
	t := f.begin()
	defer t.abort()
	d, err := t.liveDir(dir)
	if err != nil {
		return nil, false, 0, Attr{}, err
	}
	cv := f.cookieVerf()
	if cookie != 0 && verf != 0 && verf != cv {
		return nil, false, cv, d.attr(), ErrBadCookie
	}
	add := func(name string, ino Inum, gen uint32, ck uint64) {
		e := DirEntry{Name: name, Ino: ino, Cookie: ck, Handle: Handle{Ino: ino, Gen: gen}}
		if plus {
			// The entry's inode is live while dir is locked; read a
			// committed snapshot of it without its lock.
			if c, err := t.inode(ino); err == nil && c.live() && c.gen == gen {
				e.Attr = c.attr()
			}
		}
		entries = append(entries, e)
	}
	if cookie == 0 {
		add(".", d.inum, d.gen, 1)
	}
	if cookie <= 1 {
		p, err := t.named(d.parent(), d.inum, "parent field")
		if err != nil {
			return nil, false, cv, d.attr(), err
		}
		add("..", p.inum, p.gen, 2)
	}
	if len(entries) > maxEntries {
		return entries[:maxEntries], false, cv, d.attr(), nil
	}
	more := false
	var bad error
	err = t.walkDir(d, max(cookie, 2), func(e rawDent) bool {
		if len(entries) == maxEntries {
			more = true
			return false
		}
		if e.inum == 0 || uint64(e.inum) >= f.sb.ninodes {
			bad = corrupt(d.inum, 0, "entry %q names inode %d, outside the inode table of %d", e.name, e.inum, f.sb.ninodes)
			return false
		}
		add(string(e.name), e.inum, e.gen, e.key)
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, false, cv, d.attr(), err
	}
	return entries, !more, cv, d.attr(), nil
}

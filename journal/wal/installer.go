package wal

// The installer goroutine copies logged updates home and frees their log
// space. It holds mu to pick the groups to install and to publish the new
// memStart and ringStart, and not while it writes (reads of those blocks
// meanwhile find them in memory: memStart has not moved).
//
// Crash at any point: until the first barrier after the home writes, a
// home block holds its old or its new contents (4 KiB writes are atomic),
// and the log still holds every installed update, so recovery replays
// them over it: the data region ends with the logged value either way.
// The on-disk start moves (SetStart) only after that barrier, so no record
// is dropped from the log before its blocks are durable at home; and the
// ring space before the new start is reused (ringStart moves under mu)
// only after a second barrier made the new start durable, so recovery
// never meets a record overwritten by a newer one at the position the old
// start names.

import (
	"fmt"
	"slices"

	"strata/journal/circular"
)

func (w *WAL) installer() {
	defer w.wg.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	latest := map[uint64][]byte{}
	for {
		for w.err == nil && !w.shouldInstall() && !(w.closing && w.diskEnd == w.memEnd()) {
			w.instCond.Wait()
		}
		if w.err != nil || len(w.groups) == 0 {
			return
		}
		last := w.groups[len(w.groups)-1]
		ngroups := len(w.groups)
		ups := w.memLog[:last.end-w.memStart]
		hook := w.hookBeforeInstall
		w.mu.Unlock()
		if hook != nil {
			hook()
		}
		clear(latest)
		for _, u := range ups {
			latest[u.Addr] = u.Data
		}
		err := w.writeHome(latest)
		if err == nil {
			err = w.d.Barrier()
		}
		// The start may move only once the installed blocks are durable, and
		// the ring space may be reused only once the new start is.
		if err == nil {
			err = w.log.SetStart(last.ringEnd)
		}
		if err == nil {
			err = w.d.Barrier()
		}
		w.mu.Lock()
		if err != nil {
			w.fail(fmt.Errorf("wal: installer: %w", err))
			return
		}
		w.stats.Barriers += 2
		w.stats.Installed += uint64(len(latest))
		for i, u := range ups {
			if w.index[u.Addr] == w.memStart+uint64(i) {
				delete(w.index, u.Addr)
			}
			PutBlock(u.Data) // installed and unreachable once dropped below
		}
		clear(latest)
		// Copy the tail so the installed prefix's array can be collected.
		w.memLog = append([]circular.Update(nil), w.memLog[len(ups):]...)
		w.memStart = last.end
		w.ringStart = last.ringEnd
		w.groups = w.groups[ngroups:]
		w.installGen++
		w.spaceCond.Broadcast()
		w.logCond.Signal()
	}
}

// shouldInstall says whether installing now is worth its two barriers:
// installation is deferred until the ring or memory is half used (or someone
// waits for space, or the WAL is closing), so that one installation covers
// many group commits and writes each hot block home once. Caller holds mu.
func (w *WAL) shouldInstall() bool {
	if len(w.groups) == 0 {
		return false
	}
	return w.closing || w.logWaiting || w.appWaiting > 0 ||
		w.ringEnd-w.ringStart >= w.logBlocks/2 ||
		w.memEnd()-w.memStart >= w.memLimit/2
}

// writeHome writes blocks to their home locations, coalescing runs of
// consecutive addresses into one write.
func (w *WAL) writeHome(blocks map[uint64][]byte) error {
	addrs := make([]uint64, 0, len(blocks))
	for a := range blocks {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	var buf []byte
	for i := 0; i < len(addrs); {
		j := i + 1
		for j < len(addrs) && addrs[j] == addrs[j-1]+1 && j-i < 256 {
			j++
		}
		var data []byte
		if j-i == 1 {
			data = blocks[addrs[i]]
		} else {
			buf = buf[:0]
			for _, a := range addrs[i:j] {
				buf = append(buf, blocks[a]...)
			}
			data = buf
		}
		if err := w.d.Write(addrs[i], data); err != nil {
			return err
		}
		i = j
	}
	return nil
}

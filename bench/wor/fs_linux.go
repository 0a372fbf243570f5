package wor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// fsType names the file system dir is on (statfs), so that the report
// shows where the journals and etcd's WAL were synced: a tmpfs would make
// every fdatasync free.
func fsType(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "file system unknown: " + err.Error()
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC:
		return "ext2/3/4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.TMPFS_MAGIC:
		return "tmpfs: syncs cost nothing"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	case 0x2fc12fc1:
		return "zfs"
	case unix.NFS_SUPER_MAGIC:
		return "nfs"
	}
	return fmt.Sprintf("file system type %#x", uint32(st.Type))
}

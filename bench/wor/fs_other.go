//go:build !linux

package wor

// fsType names the file system dir is on (Linux only).
func fsType(dir string) string { return "file system unknown" }

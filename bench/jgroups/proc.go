package jgroups

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUTime returns the CPU time (user and system) process pid has used so
// far, its exited threads included (Linux's /proc/PID/stat counts them),
// or -1 if /proc cannot tell. Both benchmarks take the difference over a
// measured run to show what each system spends per call: on a machine
// with few CPUs that decides a throughput, and every wake-up of a
// sleeping thread shows in it.
func CPUTime(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command name (field 2) may hold spaces: count from its ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	// In clock ticks of 1/100 s (USER_HZ, 100 on every Linux the
	// benchmarks run on).
	return time.Duration(u+st) * 10 * time.Millisecond
}

package sbench

import (
	"fmt"
	"os/exec"
	"strconv"
)

// Pinned returns argv prefixed so that the program runs on CPU cpu only
// (util-linux taskset), or argv unchanged when cpu < 0. A Go program so
// started sizes GOMAXPROCS to 1 and a JVM its thread pools to one CPU:
// every system of a benchmark gets the same one core per process.
func Pinned(cpu int, argv []string) ([]string, error) {
	if cpu < 0 {
		return argv, nil
	}
	ts, err := exec.LookPath("taskset")
	if err != nil {
		return nil, fmt.Errorf("sbench: pinning to a CPU needs taskset (Debian util-linux): %w", err)
	}
	return append([]string{ts, "-c", strconv.Itoa(cpu)}, argv...), nil
}

package nfsbench

// fio measures the disk's own sequential write bandwidth, printed beside
// the largefile figures as information (no ratio depends on it).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"strata/bench/kit"
)

// FioSeqWrite measures the disk under dir with fio (Debian fio, installed
// if missing): one job writes size bytes sequentially in bs-byte pwrite
// calls and fsyncs at the end, the same shape as the largefile workload
// (which writes 64 KiB UNSTABLE writes and then COMMITs). It returns the
// write bandwidth in MB/s (10^6 bytes per second) with the fsync included.
func FioSeqWrite(ctx context.Context, dir string, size int64, bs int, log io.Writer) (float64, error) {
	if _, err := exec.LookPath("fio"); err != nil {
		if err := kit.AptInstall(ctx, log, "fio"); err != nil {
			return 0, fmt.Errorf("fio: %w", err)
		}
	}
	sub, err := os.MkdirTemp(dir, "fio-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(sub)
	cmd := exec.CommandContext(ctx, "fio", "--name=seqwrite", "--directory="+sub, "--rw=write",
		"--bs="+strconv.Itoa(bs), "--size="+strconv.FormatInt(size, 10), "--ioengine=psync",
		"--end_fsync=1", "--output-format=json")
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("fio in %s: %w", filepath.Dir(sub), err)
	}
	return parseFio(out)
}

// parseFio returns the first job's write bandwidth in MB/s from fio's JSON.
func parseFio(out []byte) (float64, error) {
	var rep struct {
		Jobs []struct {
			Write struct {
				BwBytes float64 `json:"bw_bytes"`
			} `json:"write"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return 0, fmt.Errorf("fio: parsing its JSON output: %w", err)
	}
	if len(rep.Jobs) == 0 || rep.Jobs[0].Write.BwBytes <= 0 {
		return 0, fmt.Errorf("fio: no write bandwidth in its output")
	}
	return rep.Jobs[0].Write.BwBytes / 1e6, nil
}

// FioVersion is what `fio --version` prints ("" if fio is not installed).
func FioVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "fio", "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

package kit

import (
	"bufio"
	"strings"
	"testing"
)

func TestFindCounter(t *testing.T) {
	page := `# HELP strata_wor_journal_barriers_total Journal barriers.
# TYPE strata_wor_journal_barriers_total counter
strata_wor_journal_barriers_total_extra 7
strata_wor_journal_barriers_total 1.234e+06
etcd_disk_wal_fsync_duration_seconds_count 42
`
	for name, want := range map[string]uint64{"strata_wor_journal_barriers_total": 1234000, "etcd_disk_wal_fsync_duration_seconds_count": 42} {
		got, err := FindCounter(bufio.NewScanner(strings.NewReader(page)), name, "test")
		if err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", name, got, err, want)
		}
	}
	if _, err := FindCounter(bufio.NewScanner(strings.NewReader(page)), "missing", "test"); err == nil {
		t.Error("a missing metric gave no error")
	}
}

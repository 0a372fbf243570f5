package kit

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ScrapeCounter reads the value of the unlabelled metric name from the
// Prometheus text page at url (a server's /metrics: how benchmarks count
// both sides' disk syncs).
func ScrapeCounter(ctx context.Context, url, name string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("metrics %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("metrics %s: %s", url, resp.Status)
	}
	return FindCounter(bufio.NewScanner(resp.Body), name, url)
}

// FindCounter finds "name VALUE" among the lines of sc (a Prometheus text
// page; where names it in errors).
func FindCounter(sc *bufio.Scanner, name, where string) (uint64, error) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, fmt.Errorf("metrics %s: %s: %w", where, name, err)
		}
		return uint64(f), nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metrics %s: %w", where, err)
	}
	return 0, fmt.Errorf("metrics %s: no %s", where, name)
}

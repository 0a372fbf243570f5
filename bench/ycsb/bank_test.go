package ycsb

import (
	"context"
	"sync"
	"testing"
	"time"
)

// memBank is a bank in memory whose every third transfer loses a race.
type memBank struct {
	mu    sync.Mutex
	bal   map[string]int64
	calls int
}

func (b *memBank) Transfer(_ context.Context, from, to string, amount int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if b.calls%3 == 0 {
		return ErrConflict
	}
	if b.bal[from] < amount {
		return ErrInsufficient
	}
	b.bal[from] -= amount
	b.bal[to] += amount
	return nil
}

// RunBank drives transfers from many clients, retries conflicts, counts
// only the measured window, and moves money without making or losing it.
func TestRunBank(t *testing.T) {
	b := &memBank{bal: map[string]int64{}}
	for i := range 10 {
		b.bal[BankAccount(i)] = 20
	}
	res, err := RunBank(context.Background(), b, BankConfig{Accounts: 10, Clients: 4, Warmup: 20 * time.Millisecond, Measure: 100 * time.Millisecond, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Transfers == 0 || res.Retries == 0 || res.OpsPerSec <= 0 {
		t.Fatalf("result %+v: no transfers or no retries counted", res)
	}
	total := int64(0)
	for _, v := range b.bal {
		total += v
	}
	if total != 200 {
		t.Fatalf("total %d after the run, want 200", total)
	}
	if _, err := RunBank(context.Background(), b, BankConfig{Accounts: 1, Clients: 1, Measure: time.Second}); err == nil {
		t.Fatal("one account accepted")
	}
}

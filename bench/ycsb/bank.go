package ycsb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// The bank workload of `strata bench tx`: concurrent transfers of a
// random amount between two random accounts of Accounts, each one
// transaction, run by WormTX on Strata's side and by etcd's Txn on the
// peer's (the same generator on both sides: this file is part of the
// source hash the peer's client is checked against).

// Bank is a system that moves money atomically.
type Bank interface {
	// Transfer moves amount from one account to another in one
	// transaction. It returns ErrConflict when the transaction lost a
	// race and had no effect (the driver retries it), ErrInsufficient
	// when from holds less than amount.
	Transfer(ctx context.Context, from, to string, amount int64) error
}

// Bank outcomes a Bank reports.
var (
	ErrConflict     = errors.New("bank: conflict, no effect")
	ErrInsufficient = errors.New("bank: insufficient balance")
)

// BankConfig is one bank cell.
type BankConfig struct {
	Accounts  int   // accounts "acct0".."acctN-1", each loaded with Initial
	Initial   int64 // opening balance
	Clients   int   // concurrent clients, one transfer outstanding each
	Warmup    time.Duration
	Measure   time.Duration
	Seed      uint64
	OpTimeout time.Duration
}

// BankResult is a cell's outcome.
type BankResult struct {
	Transfers    int64   `json:"transfers"` // committed in the window
	Insufficient int64   `json:"insufficient"`
	Retries      int64   `json:"retries"` // conflicts retried
	OpsPerSec    float64 `json:"ops_per_sec"`
	P50us        float64 `json:"p50_us"` // per transfer, retries included
	P99us        float64 `json:"p99_us"`
}

// BankAccount names account i.
func BankAccount(i int) string { return fmt.Sprintf("acct%d", i) }

// RunBank runs the workload against b and reports the measured window.
func RunBank(ctx context.Context, b Bank, cfg BankConfig) (BankResult, error) {
	if cfg.Accounts < 2 || cfg.Clients < 1 || cfg.Measure <= 0 {
		return BankResult{}, fmt.Errorf("bank: %d accounts, %d clients, window %v", cfg.Accounts, cfg.Clients, cfg.Measure)
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = DefaultOpTimeout
	}
	start := time.Now().Add(cfg.Warmup)
	end := start.Add(cfg.Measure)
	var mu sync.Mutex
	var res BankResult
	var lat []float64
	var firstErr error
	var wg sync.WaitGroup
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(c)+1))
			for ctx.Err() == nil && time.Now().Before(end) {
				from := rng.IntN(cfg.Accounts)
				to := (from + 1 + rng.IntN(cfg.Accounts-1)) % cfg.Accounts
				amount := int64(1 + rng.IntN(10))
				t0 := time.Now()
				retries := int64(0)
				var err error
				for try := 0; ; try++ {
					octx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
					err = b.Transfer(octx, BankAccount(from), BankAccount(to), amount)
					cancel()
					if !errors.Is(err, ErrConflict) || try == 1000 {
						break
					}
					retries++
					time.Sleep(time.Duration(1+rng.IntN(100<<min(try, 6))) * time.Microsecond)
				}
				done := time.Now()
				if done.Before(start) || done.After(end) {
					if err != nil && !errors.Is(err, ErrInsufficient) && !errors.Is(err, ErrConflict) && ctx.Err() == nil {
						mu.Lock()
						firstErr = cmpOr(firstErr, err)
						mu.Unlock()
						return
					}
					continue
				}
				mu.Lock()
				res.Retries += retries
				switch {
				case err == nil:
					res.Transfers++
					lat = append(lat, float64(done.Sub(t0).Microseconds()))
				case errors.Is(err, ErrInsufficient):
					res.Insufficient++
				case errors.Is(err, ErrConflict):
				default:
					firstErr = cmpOr(firstErr, err)
				}
				mu.Unlock()
				if err != nil && !errors.Is(err, ErrInsufficient) && !errors.Is(err, ErrConflict) {
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.OpsPerSec = float64(res.Transfers) / cfg.Measure.Seconds()
	if len(lat) > 0 {
		slices.Sort(lat)
		res.P50us = lat[len(lat)/2]
		res.P99us = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return res, nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

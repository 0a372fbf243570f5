package mcast

import (
	"context"
	"sync"
	"testing"
	"time"

	"strata/stack"
)

// Two members in this process over UDP loopback each cast a few thousand
// 1 KB casts; each member delivers every cast of both exactly once, in its
// sender's order, and reports as much. No timing is asserted.
func TestMperfInProcess(t *testing.T) { mperfInProcess(t, 2) }

// A group of one (`bench mcast --members 1`): the member casts many times
// the stack's cast window and delivers every cast once, in order. It
// stalled for good after one window until 2026-11-27 (the group layers
// below gms started from an empty view, so its casts never became stable).
func TestMperfAlone(t *testing.T) { mperfInProcess(t, 1) }

func mperfInProcess(t *testing.T, members int) {
	const count, size = 3000, 1024
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// seen[i][sender] lists the cast numbers member i delivered from sender.
	seen := make([]map[stack.Addr][]uint64, members)
	var mu sync.Mutex
	cfgFor := func(i int, contact string) MemberConfig {
		seen[i] = map[stack.Addr][]uint64{}
		return MemberConfig{Members: members, Size: size, Count: count, Listen: "udp:127.0.0.1:0", Contact: contact,
			onData: func(from stack.Addr, seq uint64) {
				mu.Lock()
				seen[i][from] = append(seen[i][from], seq)
				mu.Unlock()
			}}
	}
	var ms []*Member
	for i := range members {
		contact := ""
		if i > 0 {
			contact = string(ms[0].Addr())
		}
		m, err := Join(ctx, cfgFor(i, contact))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ms = append(ms, m)
	}
	res := make([]MemberResult, members)
	errs := make([]error, members)
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() { defer wg.Done(); res[i], errs[i] = m.Run(ctx) }()
	}
	wg.Wait()
	for i := range ms {
		if errs[i] != nil {
			t.Fatalf("member %d: %v", i, errs[i])
		}
	}

	mu.Lock()
	defer mu.Unlock()
	ranks := map[int]bool{}
	for i, r := range res {
		t.Logf("member %d (rank %d): %d casts in %.3fs, %.0f msgs/s", i, r.Rank, r.Received, r.Seconds, r.MsgsPerSec)
		ranks[r.Rank] = true
		if r.Received != int64(members*count) || r.Duplicates != 0 || r.OutOfOrder != 0 || r.Members != members {
			t.Errorf("member %d: %+v", i, r)
		}
		if len(r.PerSender) != members {
			t.Errorf("member %d delivered from %d senders, want %d", i, len(r.PerSender), members)
		}
		for s, n := range r.PerSender {
			if n != count {
				t.Errorf("member %d delivered %d casts from %s, want %d", i, n, s, count)
			}
		}
		if r.MsgsPerSec <= 0 || r.Seconds <= 0 {
			t.Errorf("member %d: no rate: %+v", i, r)
		}
		// Exactly once, in order: 1, 2, ..., count from every member.
		for _, sender := range ms {
			got := seen[i][sender.Addr()]
			if len(got) != count {
				t.Errorf("member %d delivered %d casts from %s, want %d", i, len(got), sender.Addr(), count)
				continue
			}
			for k, seq := range got {
				if seq != uint64(k+1) {
					t.Errorf("member %d: cast %d from %s has number %d, want %d (not FIFO or not exactly once)", i, k, sender.Addr(), seq, k+1)
					break
				}
			}
		}
	}
	for r := range members {
		if !ranks[r] {
			t.Errorf("ranks %v, want 0 to %d", ranks, members-1)
		}
	}
}

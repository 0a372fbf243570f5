package mpcalgo

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestEchoSystems: both systems complete their round trips in both modes,
// with one time per measured round trip, and the generated run drops no
// message.
func TestEchoSystems(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, mode := range []string{Relaxed, TwoPhase, LastAgent} {
		o := echoOpts{mode: mode, n: 300, warmup: 20}
		lat, st, err := runGenerated(ctx, o)
		if err != nil {
			t.Fatalf("%s generated: %v", mode, err)
		}
		if len(lat) != o.n || st.Dropped != 0 {
			t.Fatalf("%s generated: %d times, %d dropped", mode, len(lat), st.Dropped)
		}
		hl, err := runHandwritten(ctx, o)
		if err != nil {
			t.Fatalf("%s handwritten: %v", mode, err)
		}
		if len(hl) != o.n {
			t.Fatalf("%s handwritten: %d times", mode, len(hl))
		}
		for _, d := range append(lat, hl...) {
			if d <= 0 {
				t.Fatalf("%s: non-positive round trip %v", mode, d)
			}
		}
	}
}

// TestReport: a small run prints both systems per mode, the ratios
// oriented hand-written/generated, and valid JSON.
func TestReport(t *testing.T) {
	rep, err := Run(context.Background(), Config{Rounds: 2, N: 100, Warmup: 10, Modes: []string{Relaxed, TwoPhase}, Values: false})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results.(*Results)
	if len(res.Summary) != 4 || len(res.Cells) != 8 {
		t.Fatalf("%d summaries, %d cells", len(res.Summary), len(res.Cells))
	}
	firsts := map[string]int{}
	for _, c := range res.Cells {
		if c.First {
			firsts[c.Mode+c.System]++
		}
	}
	for _, k := range []string{Relaxed + Generated, Relaxed + Handwritten} {
		if firsts[k] != 1 {
			t.Fatalf("%s went first %d times in 2 rounds, want 1 (alternation)", k, firsts[k])
		}
	}
	for _, mode := range []string{Relaxed, TwoPhase} {
		for _, key := range []string{"rtt generated/handwritten " + mode, "p50 generated/handwritten " + mode} {
			if rep.Ratios[key] <= 0 {
				t.Fatalf("no ratio %q: %v", key, rep.Ratios)
			}
		}
	}
	var b bytes.Buffer
	if err := Print(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "overhead of generated code over hand-written, two-phase") {
		t.Fatalf("printed:\n%s", b.String())
	}
	b.Reset()
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Config{Rounds: 1, N: 100, Warmup: 1, Modes: []string{"bogus"}}); err == nil {
		t.Fatal("unknown mode accepted")
	}
}

// TestRatioOrientation: with one round the ratio is the hand-written
// mean over the generated one (> 1: generated faster) and the overhead is
// the generated mean over the hand-written one, minus 1.
func TestRatioOrientation(t *testing.T) {
	rep, err := Run(context.Background(), Config{Rounds: 1, N: 200, Warmup: 10, Modes: []string{Relaxed}})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results.(*Results)
	var g, h float64
	for _, c := range res.Cells {
		if c.System == Generated {
			g = c.MeanUs
		} else {
			h = c.MeanUs
		}
	}
	if g <= 0 || h <= 0 {
		t.Fatalf("means %v, %v", g, h)
	}
	if got, want := rep.Ratios["rtt generated/handwritten relaxed"], h/g; got < want-0.002 || got > want+0.002 {
		t.Fatalf("ratio %v, want hand-written/generated = %v", got, want)
	}
	if got, want := res.OverheadPct[Relaxed], 100*(g/h-1); got < want-0.01 || got > want+0.01 {
		t.Fatalf("overhead %v%%, want %v%%", got, want)
	}
}

func benchEcho(b *testing.B, sys, mode string) {
	o := echoOpts{mode: mode, n: b.N, warmup: 100}
	b.ReportAllocs()
	var err error
	if sys == Generated {
		_, _, err = runGenerated(context.Background(), o)
	} else {
		_, err = runHandwritten(context.Background(), o)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// Benchmarks for profiles (go test -bench Echo -cpuprofile ...): b.N
// round trips, nodes included.
func BenchmarkEchoGeneratedRelaxed(b *testing.B)    { benchEcho(b, Generated, Relaxed) }
func BenchmarkEchoGeneratedTwoPhase(b *testing.B)   { benchEcho(b, Generated, TwoPhase) }
func BenchmarkEchoHandwrittenRelaxed(b *testing.B)  { benchEcho(b, Handwritten, Relaxed) }
func BenchmarkEchoHandwrittenTwoPhase(b *testing.B) { benchEcho(b, Handwritten, TwoPhase) }
func BenchmarkEchoGeneratedLastAgent(b *testing.B)  { benchEcho(b, Generated, LastAgent) }

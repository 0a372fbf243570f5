package memlimit

import (
	"fmt"
	"testing"
)

func TestEnv(t *testing.T) {
	total := Total()
	if total == 0 {
		t.Fatal("Total: the machine's memory is unknown")
	}
	t.Setenv("GOMEMLIMIT", "")
	got := Env(0.125)
	want := fmt.Sprintf("GOMEMLIMIT=%d", uint64(float64(total)*0.125))
	if len(got) != 1 || got[0] != want {
		t.Fatalf("Env(0.125) = %q, want [%q]", got, want)
	}
	if got := Env(0); got != nil {
		t.Fatalf("Env(0) = %q, want none", got)
	}
	if got := Env(2); len(got) != 1 || got[0] != fmt.Sprintf("GOMEMLIMIT=%d", total) {
		t.Fatalf("Env(2) = %q, want the whole memory", got)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	if got := Env(0.125); got != nil {
		t.Fatalf("with GOMEMLIMIT set, Env = %q, want none (inherited)", got)
	}
}

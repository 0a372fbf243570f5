package nfsbench

import "testing"

func TestParseFio(t *testing.T) {
	mb, err := parseFio([]byte(`{"fio version":"fio-3.33","jobs":[{"jobname":"seqwrite","write":{"io_bytes":1048576,"bw_bytes":468000000,"bw":457031}}]}`))
	if err != nil || mb != 468 {
		t.Fatalf("parseFio = %v, %v; want 468", mb, err)
	}
	for _, bad := range []string{``, `{}`, `{"jobs":[]}`, `{"jobs":[{"write":{"bw_bytes":0}}]}`, `not json`} {
		if _, err := parseFio([]byte(bad)); err == nil {
			t.Errorf("parseFio(%q) accepted", bad)
		}
	}
}

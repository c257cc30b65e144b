package benchstat

import "testing"

func TestOf(t *testing.T) {
	s := Of([]float64{3, 1, 2, 5, 4})
	if s != (Summary{Median: 3, Min: 1, Max: 5, N: 5}) {
		t.Fatalf("Of = %+v", s)
	}
	if m := Of([]float64{4, 1, 2, 3}).Median; m != 2.5 {
		t.Fatalf("even median = %v, want 2.5", m)
	}
	if got := s.Format("%.1f"); got != "3.0 (1.0–5.0)" {
		t.Fatalf("Format = %q", got)
	}
	if got := Of([]float64{2}).Format("%.1f"); got != "2.0" {
		t.Fatalf("Format of one run = %q", got)
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want string
	}{
		{[]float64{0.6, 0.7, 0.8}, "met"},
		{[]float64{0.4, 0.6, 0.7}, "not clearly met (the slowest run is below)"},
		{[]float64{0.3, 0.4, 0.7}, "not met"},
	} {
		if got := Of(c.xs).Verdict(0.5); got != c.want {
			t.Errorf("Verdict(%v) = %q, want %q", c.xs, got, c.want)
		}
	}
}

func TestRatiosPairRuns(t *testing.T) {
	got := Ratios([]float64{2, 3}, []float64{1, 2})
	if got[0] != 2 || got[1] != 1.5 {
		t.Fatalf("Ratios = %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Ratios of unequal lengths did not panic")
		}
	}()
	Ratios([]float64{1}, nil)
}

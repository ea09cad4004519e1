package checkpoint

import (
	"math"
	"testing"
)

func observeAll(p *AdaptivePolicy, pressures ...float64) []Mode {
	out := make([]Mode, len(pressures))
	for i, v := range pressures {
		out[i] = p.Observe(v)
	}
	return out
}

// Pins the hysteresis both ways: N consecutive pressured windows to go unaligned, M consecutive calm ones to
// come back, and a broken run restarts the count.
func TestAdaptiveHysteresisBothWays(t *testing.T) {
	p := NewAdaptivePolicy(AdaptiveConfig{PressureThreshold: 0.5, WindowsToUnaligned: 3, WindowsToAligned: 2})
	A, U := Aligned, Unaligned
	for _, step := range []struct {
		pressure float64
		want     Mode
	}{
		{0.6, A}, {0.7, A}, {0.1, A}, // a run of two, broken
		{0.5, A}, {0.9, A}, {1.0, U}, // threshold itself is pressured; third in a row switches
		{0.2, U}, {0.9, U}, // a calm run of one, broken
		{0.2, U}, {0.0, A}, // two calm in a row switch back
	} {
		if got := p.Observe(step.pressure); got != step.want {
			t.Fatalf("history %v: Observe(%v) = %s, want %s", p.History(), step.pressure, got, step.want)
		}
	}
	if p.Switches() != 2 || p.Mode() != Aligned {
		t.Fatalf("switches %d mode %s, want 2 and aligned", p.Switches(), p.Mode())
	}
}

// Pins that a one-window spike never flips the mode, in either direction, even when configured with runs of one
// (clamped to two) - a policy that flips on noise makes every checkpoint pay for the other protocol.
func TestAdaptiveOneWindowSpikeNeverFlips(t *testing.T) {
	for _, cfg := range []AdaptiveConfig{{}, {PressureThreshold: 0.5, WindowsToUnaligned: 1, WindowsToAligned: 1}} {
		p := NewAdaptivePolicy(cfg)
		for i := range 40 {
			v := 0.0
			if i%2 == 0 {
				v = 1
			}
			if m := p.Observe(v); m != Aligned {
				t.Fatalf("cfg %+v: window %d flipped to %s on alternating spikes", cfg, i, m)
			}
		}
		observeAll(p, 1, 1, 1) // now unaligned
		if p.Mode() != Unaligned {
			t.Fatalf("cfg %+v: sustained pressure did not switch", cfg)
		}
		for i := range 40 {
			v := 1.0
			if i%2 == 0 {
				v = 0
			}
			if m := p.Observe(v); m != Unaligned {
				t.Fatalf("cfg %+v: window %d flipped back on a one-window dip", cfg, i)
			}
		}
		if p.Switches() != 1 {
			t.Fatalf("cfg %+v: switches %d, want 1", cfg, p.Switches())
		}
	}
}

// Pins that a broken pressure probe (NaN) never pushes the job into unaligned mode.
func TestAdaptiveNaNIsCalm(t *testing.T) {
	p := NewAdaptivePolicy(AdaptiveConfig{WindowsToUnaligned: 2})
	if m := observeAll(p, math.NaN(), math.NaN(), math.NaN()); m[2] != Aligned {
		t.Fatal("NaN pressure switched to unaligned")
	}
}

// Pins the bounded diagnostic history: only the newest HistorySize observations, oldest first, with the switch
// marked on the window that caused it.
func TestAdaptiveHistoryIsBounded(t *testing.T) {
	p := NewAdaptivePolicy(AdaptiveConfig{PressureThreshold: 0.5, WindowsToUnaligned: 2, WindowsToAligned: 2, HistorySize: 4})
	if len(p.History()) != 0 {
		t.Fatal("history not empty at start")
	}
	observeAll(p, 0.1, 0.2)
	if h := p.History(); len(h) != 2 || h[0].Pressure != 0.1 || h[1].Pressure != 0.2 {
		t.Fatalf("partial history %+v", h)
	}
	observeAll(p, 0.3, 0.4, 0.9, 0.9, 0.8)
	h := p.History()
	if len(h) != 4 {
		t.Fatalf("history holds %d, want 4", len(h))
	}
	want := []Observation{
		{Pressure: 0.4, Mode: Aligned},
		{Pressure: 0.9, Pressured: true, Mode: Aligned},
		{Pressure: 0.9, Pressured: true, Mode: Unaligned, Switched: true},
		{Pressure: 0.8, Pressured: true, Mode: Unaligned},
	}
	for i := range want {
		if h[i] != want[i] {
			t.Fatalf("history[%d] = %+v, want %+v", i, h[i], want[i])
		}
	}
}

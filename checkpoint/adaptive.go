package checkpoint

import (
	"math"
	"sync"
)

// AdaptiveConfig tunes AdaptivePolicy. Zero fields take the defaults noted.
type AdaptiveConfig struct {
	// PressureThreshold: a window whose pressure (0..1, channel occupancy) is >= this is pressured. Default 0.8.
	PressureThreshold float64
	// WindowsToUnaligned consecutive pressured windows switch to unaligned. Default 3, at least 2.
	WindowsToUnaligned int
	// WindowsToAligned consecutive calm windows switch back to aligned. Default 3, at least 2.
	WindowsToAligned int
	// HistorySize bounds the observations kept for diagnostics. Default 64.
	HistorySize int
}

func (c AdaptiveConfig) withDefaults() AdaptiveConfig {
	if c.PressureThreshold <= 0 {
		c.PressureThreshold = 0.8
	}
	if c.WindowsToUnaligned == 0 {
		c.WindowsToUnaligned = 3
	}
	if c.WindowsToAligned == 0 {
		c.WindowsToAligned = 3
	}
	// A run of one would let a one-window spike flip the mode, which the policy promises never happens.
	c.WindowsToUnaligned = max(c.WindowsToUnaligned, 2)
	c.WindowsToAligned = max(c.WindowsToAligned, 2)
	if c.HistorySize <= 0 {
		c.HistorySize = 64
	}
	return c
}

// Observation is one window the policy saw.
type Observation struct {
	Pressure  float64
	Pressured bool
	// Mode is the mode decided for the checkpoint of this window.
	Mode Mode
	// Switched is true when this window flipped the mode.
	Switched bool
}

// AdaptivePolicy decides aligned versus unaligned per checkpoint from measured pressure, with hysteresis both
// ways: it switches to unaligned only after WindowsToUnaligned consecutive pressured windows and back only after
// WindowsToAligned consecutive calm ones, so one spike never flips the mode and the mode cannot oscillate faster
// than the configured runs. Correctness does not depend on the decision: each checkpoint runs entirely under the
// mode pinned by its first barrier delivery, so the policy only chooses between two individually sound protocols.
// Safe for concurrent use.
type AdaptivePolicy struct {
	mu       sync.Mutex
	cfg      AdaptiveConfig
	mode     Mode
	run      int // consecutive windows that argue against the current mode
	switches uint64
	history  []Observation // ring of cfg.HistorySize
	next     int           // ring write position
	filled   bool
}

// NewAdaptivePolicy starts aligned.
func NewAdaptivePolicy(cfg AdaptiveConfig) *AdaptivePolicy {
	cfg = cfg.withDefaults()
	return &AdaptivePolicy{cfg: cfg, history: make([]Observation, cfg.HistorySize)}
}

// Observe records one window's pressure (call it once per checkpoint trigger) and returns the mode for that
// checkpoint. NaN counts as calm: a broken probe must not push the job into unaligned mode.
func (p *AdaptivePolicy) Observe(pressure float64) Mode {
	m, _ := p.observe(pressure)
	return m
}

func (p *AdaptivePolicy) observe(pressure float64) (Mode, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pressured := !math.IsNaN(pressure) && pressure >= p.cfg.PressureThreshold
	switched := false
	switch {
	case p.mode == Aligned && pressured, p.mode == Unaligned && !pressured:
		p.run++
	default:
		p.run = 0
	}
	if p.mode == Aligned && p.run >= p.cfg.WindowsToUnaligned {
		p.mode, p.run, switched = Unaligned, 0, true
	} else if p.mode == Unaligned && p.run >= p.cfg.WindowsToAligned {
		p.mode, p.run, switched = Aligned, 0, true
	}
	if switched {
		p.switches++
	}
	p.history[p.next] = Observation{Pressure: pressure, Pressured: pressured, Mode: p.mode, Switched: switched}
	p.next++
	if p.next == len(p.history) {
		p.next, p.filled = 0, true
	}
	return p.mode, switched
}

// Mode is the current decision.
func (p *AdaptivePolicy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Switches counts mode flips so far. A healthy job switches rarely; a count climbing every few checkpoints means
// the threshold sits on the workload's noise.
func (p *AdaptivePolicy) Switches() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.switches
}

// History returns the most recent observations, oldest first, at most HistorySize of them.
func (p *AdaptivePolicy) History() []Observation {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.filled {
		return append([]Observation(nil), p.history[:p.next]...)
	}
	out := make([]Observation, 0, len(p.history))
	out = append(out, p.history[p.next:]...)
	return append(out, p.history[:p.next]...)
}

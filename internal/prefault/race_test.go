//go:build race

package prefault

// The race detector maps shadow memory for each page an access reaches, which the fault counts would include.
const raceEnabled = true

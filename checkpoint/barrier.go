package checkpoint

import "fmt"

// Mode is how a multi-input operator treats a barrier.
type Mode uint8

const (
	// Aligned pauses each input that delivered barrier N until every alive input did (Chandy-Lamport).
	Aligned Mode = iota
	// Unaligned forwards barrier N on its first delivery and captures the records still in flight on the other
	// inputs into the checkpoint, to replay them on restore.
	Unaligned
)

func (m Mode) String() string {
	switch m {
	case Aligned:
		return "aligned"
	case Unaligned:
		return "unaligned"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// ParseMode reads "aligned" or "unaligned".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "aligned":
		return Aligned, nil
	case "unaligned":
		return Unaligned, nil
	}
	return Aligned, fmt.Errorf("unknown checkpoint mode %q (want aligned or unaligned)", s)
}

// Barrier is the in-band checkpoint marker. It travels FIFO with data and watermarks on every channel: what
// precedes barrier N on a channel belongs to checkpoint N, what follows it to N+1.
type Barrier struct {
	ID uint64
	// Terminal marks the final checkpoint a bounded job takes after end of input. Terminal barriers are always
	// treated as aligned: no more records are coming.
	Terminal bool
	Mode     Mode
}

func (b Barrier) String() string {
	t := ""
	if b.Terminal {
		t = ",terminal"
	}
	return fmt.Sprintf("barrier(%d,%s%s)", b.ID, b.Mode, t)
}

// ParticipantID names one checkpoint participant: a subtask, "<operator>-<subtask>".
type ParticipantID string

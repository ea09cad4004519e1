package exec

// PoisonNoZeroBuffers fills the uncleared value buffers of the gathers with 0xa5 until the returned function is
// called, so that a byte a gather leaves unwritten shows in its output.
func PoisonNoZeroBuffers() (restore func()) {
	poisonNoZero = true
	return func() { poisonNoZero = false }
}

package exec

import "time"

// SetAlignWarnAfter sets how long watermark alignment holds a source before it warns, until restore is called.
func SetAlignWarnAfter(d time.Duration) (restore func()) {
	old := alignWarnAfter
	alignWarnAfter = d
	return func() { alignWarnAfter = old }
}

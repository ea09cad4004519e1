package crash

// The tests of this package run the clinksql binary, which they build; importing what it is made of puts those
// packages in the test cache key, so a change there re-runs the tests instead of reporting a cached pass.
import (
	_ "github.com/clinksql/clinksql/engine"
	_ "github.com/clinksql/clinksql/pgwire"
)

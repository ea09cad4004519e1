package kafka

import (
	"testing"

	"github.com/clinksql/clinksql/exec"
)

// A real broker's DescribeTransactions answers (kfake gives only Ongoing and Empty): a decided transaction of the
// handle's producer whose markers may not be written yet decides; everything else is left to the control records.
func TestVerdictFromRealBrokerStates(t *testing.T) {
	h := Handle{ProducerID: 7, ProducerEpoch: 3}
	cases := []struct {
		st     *txnState
		want   exec.Verdict
		decide bool
	}{
		{&txnState{"PrepareCommit", 7, 3}, exec.VerdictCommitted, true},
		{&txnState{"PrepareCommit", 7, 4}, exec.VerdictCommitted, true}, // KIP-890: the end bumped the epoch
		{&txnState{"PrepareAbort", 7, 4}, exec.VerdictAborted, true},
		{&txnState{"PrepareCommit", 8, 3}, exec.VerdictUnknown, false},  // another producer
		{&txnState{"PrepareCommit", 7, 5}, exec.VerdictUnknown, false},  // a later transaction of the id
		{&txnState{"CompleteCommit", 7, 4}, exec.VerdictUnknown, false}, // markers written: they prove it
		{&txnState{"CompleteAbort", 7, 4}, exec.VerdictUnknown, false},
		{&txnState{"Ongoing", 7, 3}, exec.VerdictUnknown, false},
		{&txnState{"Empty", 7, 4}, exec.VerdictUnknown, false},
		{nil, exec.VerdictUnknown, false}, // TRANSACTIONAL_ID_NOT_FOUND
	}
	for _, c := range cases {
		v, ok := verdictFromState(c.st, h)
		if v != c.want || ok != c.decide {
			t.Errorf("verdictFromState(%+v) = %v, %v; want %v, %v", c.st, v, ok, c.want, c.decide)
		}
	}
}

// A handle this version did not write is refused, not resolved as something else.
func TestParseHandleRefusesForeignHandles(t *testing.T) {
	for _, b := range []string{``, `{}`, `{"v":2,"txn":"a","topic":"t","parts":[{"p":0}]}`, `{"v":1,"txn":"a","topic":"t"}`} {
		if _, err := ParseHandle([]byte(b)); err == nil {
			t.Errorf("ParseHandle(%q) accepted it", b)
		}
	}
}

// Package kafkatest runs franz-go's fake Kafka cluster (pkg/kfake) as its own process for tests: the
// kfakeserver command beside it, built once per test process (Binary; a package's TestMain calls Main to remove
// it), started on free loopback ports (Start, Launch), stopped (SIGTERM), killed (-9), paused (SIGSTOP) and
// resumed like a real broker, and restarted on the same ports (with DataDir its state survives).
//
// The helpers create topics, grow them, produce records plainly or in a transaction, and read topics to their
// last stable offset with a read_committed consumer (ConsumeAll).
//
// It is a harness, not a test package: connectors have no test-only paths, and tests reach the cluster only
// over the wire.
package kafkatest

// What kfake answers differently from a real broker (measured by the TestKfake* tests with raw requests,
// franz-go's EndTxn v5):
//
//   - DescribeTransactions reports only Ongoing or Empty: after its end a committed and an aborted transaction
//     look alike (a real broker says CompleteCommit / CompleteAbort). Only a receipt or a marker proves a commit.
//   - A fence (InitProducerID of the same transactional id) aborts the open transaction at once and answers
//     the next epoch; a real broker answers CONCURRENT_TRANSACTIONS until its asynchronous abort is done.
//   - A late EndTxn(commit) with the old epoch answers by history: fenced once while open INVALID_TXN_STATE,
//     fenced twice PRODUCER_FENCED, after its commit completed NONE (taken as a retry of that commit), after
//     its commit and a fence PRODUCER_FENCED. None of them means "aborted".
//   - EndTxn does not check that the transactional id matches the producer id (a real broker answers
//     INVALID_PRODUCER_ID_MAPPING): send the right one anyway.
//   - Transaction timeouts above transaction.max.timeout.ms (900 s) are refused with INVALID_TRANSACTION_TIMEOUT,
//     as on a real broker.
//   - Ending a transaction writes a control batch (COMMIT or ABORT) in each of its partitions with the
//     transaction's producer id and (pre-bump) epoch, visible to a read_uncommitted Fetch, as a real broker does:
//     a COMMIT marker of (producer id, epoch) proves that transaction committed.
//   - A wrong SASL password closes the connection (the client sees EOF) where a real broker answers
//     SASL_AUTHENTICATION_FAILED.

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

// Package blackhole is connector = 'blackhole': a sink that discards every row. It is still a valid two-phase sink
// (every phase is a no-op), so a job that ends in it checkpoints like any other; it is not transactional (it
// publishes nothing), and it takes updating results as they are. It has no options.
//
// It must never hold on to a batch (Write releases it at once).
package blackhole

// Package natstest runs a real nats-server with JetStream for tests, as a process of its own: the binary is built
// from the nats-server Go module pinned in go.mod (a `tool` of the module) into the user's cache directory
// (<cache>/clinksql-natstest/nats-server-<Version>), once, under a lock file so that test binaries running in
// parallel do not build it twice; later runs reuse it (NATS_SERVER names another binary). Each server listens on a free loopback port with a
// temporary store directory (-js -sd), optionally with a user and password.
//
// Kill (SIGKILL) keeps the store for Restart (same port, same store: JetStream recovers its streams and durable
// consumers); Pause and Resume stop and continue the process (SIGSTOP, SIGCONT), a broker that hangs. On Linux
// the server dies with the test process (Pdeathsig). Helpers connect (Connect) and create streams.
//
// It is a harness, not a test package: connectors have no test-only paths, and tests reach the server only over
// the wire. It must never be imported by the engine.
package natstest

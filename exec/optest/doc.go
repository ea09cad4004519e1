// Package optest is the test harness of the operators (imported by tests and benchmarks only): Harness drives any
// exec.Operator directly, without the job runtime, over memory or Pebble state with barriers and restores; Case
// (one input) and ScriptCase (any number of inputs, as a script) rerun a test over many batch shapes
// (cockroach's colexectestutils.RunTests, plus barriers, watermarks and restores); RunKeyedBench measures a keyed
// operator. Every run uses a checked allocator and must leave nothing allocated.
//
// It must never be imported by non-test code, and never hide a difference between shapes: every shape of a case
// must produce the same rows.
package optest

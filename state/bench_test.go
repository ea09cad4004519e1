package state

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkKeyedStateUpdates measures the per-row path of keyed state: random updates of 100k distinct keys
// (16-byte keys, 64-byte values) through Put, with a Capture every 100 ms of wall time and each capture persisted
// FIFO on a second goroutine, as the snapshot worker does (queue of one: a slow persist backpressures Capture).
func BenchmarkKeyedStateUpdates(b *testing.B) {
	b.Setenv("CLINK_STATE_FSYNC", "0")
	const nkeys = 100_000
	dir := b.TempDir()
	be, err := OpenPebble(Options{Dir: filepath.Join(dir, "work")})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, nkeys)
	for i := range keys {
		var u [13]byte
		binary.BigEndian.PutUint64(u[:], uint64(i))
		keys[i] = KeyedKey(i%DefaultKeyGroups, 1, u[:])
	}

	snaps := make(chan Snapshot, 1)
	done := make(chan error, 1)
	go func() {
		var prev string
		for s := range snaps {
			d := filepath.Join(dir, fmt.Sprintf("chk-%d", s.ID()))
			if err := s.Persist(d); err != nil {
				done <- err
				return
			}
			if prev != "" {
				OS.RemoveAll(prev) // retention: keep the newest two
			}
			prev = d
		}
		done <- nil
	}()

	rng := rand.New(rand.NewPCG(1, 2))
	var id uint64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	start := time.Now()
	next := start.Add(100 * time.Millisecond)
	for i := 0; i < b.N; i++ {
		v := make([]byte, 64)
		binary.LittleEndian.PutUint64(v, uint64(i))
		be.Put(keys[rng.IntN(nkeys)], v)
		if i&1023 == 0 && time.Now().After(next) {
			id++
			s, err := be.Capture(id)
			if err != nil {
				b.Fatal(err)
			}
			snaps <- s
			next = time.Now().Add(100 * time.Millisecond)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	close(snaps)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "state_keyed_updates_per_sec:updates/s")
	b.ReportMetric(float64(id), "state_keyed_captures:count")
	// CPU of the whole process (persist, Pebble compactions, GC) per update: comparable across runs on a busy machine.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "state_keyed_cpu_per_update:ns")
	if err := be.Close(); err != nil {
		b.Fatal(err)
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPersistDelta measures one checkpoint's persist of 1M new keys (11-byte keyed keys of a sequence, spread
// over the key groups, 6-byte values) written as one Batch: collect, sort and write the delta. ns/op is wall time
// (the stripes are written concurrently); persist_cpu_ms is the process's CPU per persist.
func BenchmarkPersistDelta(b *testing.B) {
	if os.Getenv("CLINK_STATE_FSYNC") == "" {
		b.Setenv("CLINK_STATE_FSYNC", "0")
	}
	const n = 1 << 20
	dir := b.TempDir()
	be, err := OpenPebble(Options{Dir: filepath.Join(dir, "work"), SharedDir: filepath.Join(dir, "shared")})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	var cpu time.Duration
	base := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		wb := NewBatch(n, n*20)
		for j := 0; j < n; j++ {
			var u [8]byte
			binary.BigEndian.PutUint64(u[:], uint64(base+j)^1<<63)
			wb.Put(KeyedKey(int(uint64(base+j)*0x9E3779B97F4A7C15>>49)%DefaultKeyGroups, 1, u[:]), []byte{1, 2, 3, 4, 5, 6})
		}
		base += n
		WriteBatch(be, wb)
		s, err := be.Capture(uint64(i + 1))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := processCPU()
		if err := s.Persist(filepath.Join(dir, fmt.Sprintf("chk-%d", i+1))); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - cpu0
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "persist_cpu_ms")
}

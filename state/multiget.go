package state

import (
	"bytes"
	"errors"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// MultiGetter is a Backend that looks up many keys at once: GetMany calls fn(i, value) for every keys[i] that is
// live, in no particular order, and not at all for an absent or deleted key. value must not be modified and is
// valid until the next Put or Delete of the same key; keys stay the caller's (the backend keeps no reference).
// fn must not call the backend. An operator that looks up the keys of a whole batch calls it once per batch
// instead of Get per row: the Pebble backend checks its in-memory layers under one lock and reads the keys none
// of them holds in ascending key order through one Pebble iterator.
type MultiGetter interface {
	GetMany(keys [][]byte, fn func(i int, value []byte) error) error
}

// GetMany looks keys up in b: b's own GetMany when it has one, else a Get per key.
func GetMany(b Backend, keys [][]byte, fn func(i int, value []byte) error) error {
	if m, ok := b.(MultiGetter); ok {
		return m.GetMany(keys, fn)
	}
	for i, k := range keys {
		v, ok, err := b.Get(k)
		if err != nil {
			return err
		}
		if ok {
			if err := fn(i, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *memBackend) GetMany(keys [][]byte, fn func(i int, value []byte) error) error {
	for i, k := range keys {
		if e, ok := b.t.get(k); ok {
			if err := fn(i, e.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// found is one key of a GetMany that an in-memory layer or Pebble answered.
type found struct {
	i int32
	v []byte
}

// GetMany walks the layers as Get does, but once for the whole batch: the dirty map, the key filter (a key it
// rejects is in no other layer: a new key costs two probes), the dirty runs; then, under one lock, the pending
// snapshots, the clean generations and the read cache; then Pebble, for the keys none of them holds, in ascending
// key order through one iterator whose SeekPrefixGE consults each table's bloom filter (an absent key usually
// reads no data block) and keeps the tables of one level open from one key to the next.
func (b *pebbleBackend) GetMany(keys [][]byte, fn func(i int, value []byte) error) error {
	miss := b.missBuf[:0]
	filter := b.filterOn()
	hs := b.hashBuf[:0]
	for i, k := range keys {
		if filter && i%filterPrefetch == 0 { // hash the next keys and start their filter blocks' cache misses
			hs = b.filter.prefetch(keys[i:min(i+filterPrefetch, len(keys))], hs[:0])
		}
		e, ok := b.dirty.get(k)
		if !ok {
			if filter && !b.filter.mayContainHash(hs[i%filterPrefetch]) {
				continue // in no older layer
			}
			e, ok = b.getDirtyRuns(k)
		}
		if ok {
			if !e.del {
				if err := fn(i, e.v); err != nil {
					return err
				}
			}
			continue
		}
		miss = append(miss, int32(i))
	}
	b.hashBuf = hs
	if len(miss) == 0 {
		b.missBuf = miss
		return b.checkOpen()
	}
	hits := b.hitBuf[:0]
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errClosed
	}
	rest := miss[:0]
outer:
	for _, i := range miss {
		k := keys[i]
		if e, ok := b.getPending(k); ok {
			if !e.del {
				hits = append(hits, found{i, e.v})
			}
			continue
		}
		for g := len(b.gens) - 1; g >= 0 && !unindexed(b.gens[g]); g-- {
			if e, ok := b.gens[g].get(k); ok {
				if !e.del {
					hits = append(hits, found{i, e.v})
				}
				continue outer
			}
		}
		if v, ok := b.reads[string(k)]; ok {
			hits = append(hits, found{i, v})
			continue
		}
		rest = append(rest, i)
	}
	b.mu.Unlock()
	miss = rest
	// Safe outside the lock, as in Get: a concurrent Persist only moves the snapshots that were pending above into
	// Pebble, and none of them holds a key of miss.
	nread := len(hits)
	if len(miss) > 0 {
		var err error
		if hits, err = b.readPebble(keys, miss, hits); err != nil {
			return err
		}
	}
	b.missBuf = miss
	if len(hits) > nread {
		b.cacheReads(keys, hits[nread:])
	}
	for j := range hits {
		if err := fn(int(hits[j].i), hits[j].v); err != nil {
			clear(hits)
			b.hitBuf = hits[:0]
			return err
		}
	}
	clear(hits) // drop the references to values
	b.hitBuf = hits[:0]
	return nil
}

// readPebble appends the keys of miss (indexes into keys) that Pebble holds to hits, reading them in ascending
// key order. The values are copies.
func (b *pebbleBackend) readPebble(keys [][]byte, miss []int32, hits []found) ([]found, error) {
	if err := b.fault.get(); err != nil {
		return hits, b.pebbleErr("get", err)
	}
	if len(miss) == 1 { // a point Get sets up less than an iterator
		v, closer, err := b.db.Get(keys[miss[0]])
		if errors.Is(err, pebble.ErrNotFound) {
			return hits, nil
		}
		if err != nil {
			return hits, b.pebbleErr("get", err)
		}
		hits = append(hits, found{miss[0], slices.Clone(v)})
		closer.Close()
		return hits, nil
	}
	slices.SortFunc(miss, func(x, y int32) int { return bytes.Compare(keys[x], keys[y]) })
	it, err := b.db.NewIter(&pebble.IterOptions{
		LowerBound: keys[miss[0]],
		UpperBound: append(slices.Clip(keys[miss[len(miss)-1]]), 0), // just past the last key
	})
	if err != nil {
		return hits, b.pebbleErr("get", err)
	}
	var prev []byte
	for _, i := range miss {
		k := keys[i]
		if prev != nil && bytes.Equal(prev, k) { // the same key twice: the caller gets it once per index
			if n := len(hits); n > 0 && bytes.Equal(keys[hits[n-1].i], k) {
				hits = append(hits, found{i, hits[n-1].v})
			}
			continue
		}
		prev = k
		// Every seek clears the iterator's error (Pebble keeps only the last positioning's), so it is checked
		// after each: a key whose block could not be read is an error, never a key that is absent.
		if it.SeekPrefixGE(k) && bytes.Equal(it.Key(), k) {
			var v []byte
			if v, err = it.ValueAndErr(); err != nil {
				break
			}
			hits = append(hits, found{i, slices.Clone(v)})
		} else if err = it.Error(); err != nil {
			break
		}
	}
	if err == nil {
		err = it.Error()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return hits, b.pebbleErr("get", err)
	}
	return hits, nil
}

// cacheReads keeps values read from Pebble in the read cache, as Get does.
func (b *pebbleBackend) cacheReads(keys [][]byte, hits []found) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	for _, h := range hits {
		k := keys[h.i]
		if _, ok := b.reads[string(k)]; !ok {
			b.reads[string(k)] = h.v
			b.readBytes += int64(len(k) + len(h.v) + memEntryOverhead)
		}
	}
	b.evict()
}

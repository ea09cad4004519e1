package state

import "github.com/cespare/xxhash/v2"

// KeyHashVersion names the key hash below. A job records it in its manifest; a restore refuses state written under
// another version, since a different hash would route keys away from the key groups that hold their state.
const KeyHashVersion = 1

// DefaultKeyGroups is the number of key groups of a job unless it says otherwise. It is fixed for the life of a
// job: it bounds the parallelism a restore may rescale to.
const DefaultKeyGroups = 128

// HashKey is the fixed, process-independent key hash (xxhash64, seed 0) over a key's canonical byte encoding.
// Never hash/maphash, whose seed changes per process.
func HashKey(key []byte) uint64 { return xxhash.Sum64(key) }

// MixInt64 hashes an 8-byte integer key without encoding it: the murmur3 64-bit finalizer. Column-at-a-time key
// hashing combines per-column hashes with CombineHash.
func MixInt64(v uint64) uint64 {
	v ^= v >> 33
	v *= 0xff51afd7ed558ccd
	v ^= v >> 33
	v *= 0xc4ceb9fe1a85ec53
	v ^= v >> 33
	return v
}

// CombineHash folds the hash of the next key column into the running hash of the previous ones.
func CombineHash(acc, h uint64) uint64 { return MixInt64(acc*31 + h) }

// KeyGroupOf maps a key hash to its key group in [0, groups).
func KeyGroupOf(hash uint64, groups int) int { return int(hash % uint64(groups)) }

// SubtaskOf maps a key group to the subtask that owns it: contiguous ranges, as Flink assigns them.
func SubtaskOf(keyGroup, groups, parallelism int) int { return keyGroup * parallelism / groups }

// KeyGroupRange is the half-open range [Start, End) of key groups a subtask owns.
type KeyGroupRange struct{ Start, End int }

// RangeOf returns the key groups subtask owns at the given parallelism; the inverse of SubtaskOf.
func RangeOf(subtask, groups, parallelism int) KeyGroupRange {
	return KeyGroupRange{
		Start: (subtask*groups + parallelism - 1) / parallelism,
		End:   ((subtask+1)*groups + parallelism - 1) / parallelism,
	}
}

// Contains reports whether kg is in the range.
func (r KeyGroupRange) Contains(kg int) bool { return kg >= r.Start && kg < r.End }

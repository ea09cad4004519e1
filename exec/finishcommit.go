package exec

import "sync"

// CommitFinisher is implemented by a sink that has work to do once a checkpoint is committed by every subtask of
// its node, not only its own (a partitioned file sink writes a partition's _SUCCESS file only when every
// subtask's files of the partition are in it, and the watermark of the whole node passed the partition's time).
//
// After every sink subtask of the job returned nil from Commit(id), the runtime calls FinishCommit(id, wm) on each
// subtask that implements it, one after another on the coordinator's goroutine, concurrently with Write. wm is
// the node's watermark at checkpoint id: the minimum over the node's subtasks of the combined input watermark each
// had when it took barrier id (a subtask that finished before id counts as MaxWatermark). When a commit failed,
// FinishCommit is not called: the incarnation fails, and the next one's recovery commits the staged files.
//
// An error fails the incarnation like a failed commit. What FinishCommit does must therefore be idempotent, and
// what it did not get to must be found again after a restart: from the sink's checkpointed state (TaskContext.State,
// written at PreCommit), restored, and acted on at the next completed checkpoint.
type CommitFinisher interface {
	FinishCommit(id uint64, wm int64) error
}

// barrierWatermarks records, for one sink node of an incarnation, the input watermark each subtask had at each
// barrier it took, until the checkpoint's commit asks for the node's minimum.
type barrierWatermarks struct {
	mu   sync.Mutex
	subs []map[uint64]int64 // subtask -> checkpoint id -> watermark at the barrier
	last []uint64           // subtask -> the highest id it recorded
}

func newBarrierWatermarks(parallelism int) *barrierWatermarks {
	b := &barrierWatermarks{subs: make([]map[uint64]int64, parallelism), last: make([]uint64, parallelism)}
	for i := range b.subs {
		b.subs[i] = map[uint64]int64{}
	}
	return b
}

// record is called by subtask sub when it took barrier id with input watermark wm.
func (b *barrierWatermarks) record(sub int, id uint64, wm int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.subs[sub][id] = wm
	b.last[sub] = max(b.last[sub], id)
}

// at returns the node's watermark at checkpoint id: the minimum over the subtasks of the watermark each recorded
// at id. A subtask with no record at id took no part in it: it finished before (its inputs ended, its watermark
// is MaxWatermark) if it recorded nothing above id either; otherwise (it cannot have acked id) the minimum is
// unknown and MinWatermark is the safe answer.
func (b *barrierWatermarks) at(id uint64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	wm := MaxWatermark
	for sub, m := range b.subs {
		w, ok := m[id]
		if !ok {
			if b.last[sub] > id {
				return MinWatermark
			}
			continue
		}
		wm = min(wm, w)
	}
	return wm
}

// forget drops the records of checkpoints up to id, once its commit is done.
func (b *barrierWatermarks) forget(id uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.subs {
		for k := range m {
			if k <= id {
				delete(m, k)
			}
		}
	}
}

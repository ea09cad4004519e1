package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clinksql/clinksql/exec"
)

// Slots is the size of an exactly-once subtask's producer pool: the open transaction, and the sealed ones waiting
// for their checkpoints to complete (at most two undecided checkpoints, one more for a commit broadcast that lags).
// Open initialises every slot's id, which fences whatever a dead incarnation left open on any of them.
const Slots = 4

// txnSink is the exactly-once Kafka sink of one subtask (the seed's two-phase-commit sink whose commit cannot be
// re-executed after a crash):
//
//   - Open initialises the transactional ids <prefix>-<job>-<subtask>-<slot> of its pool (InitProducerID), which
//     aborts what a dead incarnation left open on them. That is right only after the runtime's in-doubt resolution
//     settled the dead incarnation's staged transactions, which the runtime guarantees runs first; and only when a
//     broker answers: Open refuses otherwise (a blind fence erases whether a transaction committed).
//   - Write begins a transaction on a free slot at the first row after a barrier and produces into it.
//   - PreCommit(N) flushes (every record acknowledged), stages the transaction under N with its resume handle
//     (transactional id, producer id, epoch, the offsets written per partition) and leaves the slot busy; the
//     next Write begins the next transaction on another slot while N waits for its commit.
//   - Commit(N) commits the staged transactions <= N in order and calls TaskContext.Receipt the instant the
//     broker acknowledged each; Abort(N) aborts N's.
//   - Close leaves staged transactions open: a restart's in-doubt resolution commits them.
type txnSink struct {
	sinkBase
	resolver *Resolver
	prefix   string // <prefix>-<job>-<subtask>-

	slots []*slot
	open  *txn // the transaction Write produces into (subtask goroutine)

	// mu guards the slots' busy flags and staged, which Commit and Abort change from the coordinator's goroutine;
	// free is signalled when a slot frees or the sink closes.
	mu     sync.Mutex
	free   *sync.Cond
	staged []*txn // ascending checkpoint ids
	closed bool
	// commitMu serialises Commit and Abort.
	commitMu sync.Mutex
}

var (
	_ exec.InDoubtSink     = (*txnSink)(nil)
	_ exec.InDoubtResolver = (*txnSink)(nil)
)

// slot is one transactional producer of the pool.
type slot struct {
	n     int
	txnID string
	cl    *kgo.Client
	busy  bool // holds the open transaction or a staged one
	// broken: a commit or abort on it failed, so kgo would re-initialise its id at the next BeginTransaction and
	// abort a transaction whose fate is unknown; it is never used again in this incarnation.
	broken bool
}

// txn is one transaction: its slot, what was written, and once staged its checkpoint and handle.
type txn struct {
	slot *slot
	ckpt uint64
	// Written by the slot's promises (called serially by kgo), read after Flush.
	mu     sync.Mutex
	parts  []partRange // by partition number; First < 0 for none
	err    error
	acked  int64
	bytes  int64 // of the records acknowledged: committed bytes once the transaction commits
	handle []byte
	// failed: a commit attempt on the slot's client did not confirm; a retry goes through the resolver.
	failed bool
}

type partRange struct{ First, Last int64 }

// Handle is the resume handle of a staged transaction: what another process needs to commit it (EndTxn with the
// dead producer's identity) or to find its control records.
type Handle struct {
	Version         int    `json:"v"`
	TransactionalID string `json:"txn"`
	ProducerID      int64  `json:"pid"`
	ProducerEpoch   int16  `json:"epoch"`
	Topic           string `json:"topic"`
	// Partitions are the partitions written, with the first and last offsets of the transaction's records.
	Partitions []HandlePartition `json:"parts"`
}

// HandlePartition is one partition of a Handle.
type HandlePartition struct {
	Partition int32 `json:"p"`
	First     int64 `json:"first"`
	Last      int64 `json:"last"`
}

// ParseHandle decodes a handle.
func ParseHandle(b []byte) (Handle, error) {
	var h Handle
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("kafka sink: unreadable transaction handle: %w", err)
	}
	if h.Version != 1 || h.TransactionalID == "" || h.Topic == "" || len(h.Partitions) == 0 {
		return h, fmt.Errorf("kafka sink: transaction handle %q is not one this version wrote", b)
	}
	return h, nil
}

func (t *txn) promise(r *kgo.Record, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		if t.err == nil {
			t.err = err
		}
		return
	}
	p := int(r.Partition)
	for len(t.parts) <= p {
		t.parts = append(t.parts, partRange{First: -1})
	}
	pr := &t.parts[p]
	if pr.First < 0 || r.Offset < pr.First {
		pr.First = r.Offset
	}
	if r.Offset > pr.Last {
		pr.Last = r.Offset
	}
	t.acked++
	t.bytes += recordBytes(r)
}

func (s *txnSink) Open(ctx *exec.TaskContext) (err error) {
	if err := s.start(ctx); err != nil {
		return err
	}
	defer s.stopIfFailed(&err) // the runtime does not Close a sink whose Open failed
	if ctx.Receipt == nil {
		// The runtime writes receipts only for a node marked CommitNotRecoverable: without them a restart could not
		// tell a committed checkpoint from an unresolved one.
		return errors.New("kafka sink: an exactly-once sink runs only in a sink node marked commit-not-recoverable (no commit receipts)")
	}
	s.free = sync.NewCond(&s.mu)
	s.prefix = fmt.Sprintf("%s-%s-%d-", s.cfg.TransactionalIDPrefix, ctx.Job, ctx.Subtask)
	opts, err := s.clientOpts()
	if err != nil {
		return err
	}
	admin, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka sink: %w", err)
	}
	err = s.probe(admin)
	admin.Close()
	if err != nil {
		return fmt.Errorf("%w (an exactly-once sink opens only when a broker answers: initialising its transactions blind would abort ones whose fate is not known yet)", err)
	}
	initCtx, cancel := context.WithTimeout(context.Background(), OpenTimeout)
	defer cancel()
	for n := range Slots {
		id := fmt.Sprintf("%s%d", s.prefix, n)
		opts, _ := s.clientOpts(kgo.TransactionalID(id), kgo.TransactionTimeout(s.cfg.TransactionTimeout))
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			s.closeSlots()
			return fmt.Errorf("kafka sink: %w", err)
		}
		s.slots = append(s.slots, &slot{n: n, txnID: id, cl: cl})
		// InitProducerID: fences the dead incarnation's producer of this id and aborts what it left open.
		if _, _, err := cl.ProducerID(initCtx); err != nil {
			s.closeSlots()
			return fmt.Errorf("kafka sink: initialising transactional id '%s': %w", id, err)
		}
	}
	return nil
}

func (s *txnSink) closeSlots() {
	for _, sl := range s.slots {
		sl.cl.Close()
	}
	s.slots = nil
}

// begin takes a free slot (waiting for a commit to free one) and begins a transaction on it.
func (s *txnSink) begin() (*txn, error) {
	s.mu.Lock()
	var sl *slot
	for sl == nil {
		if s.closed {
			s.mu.Unlock()
			return nil, errors.New("kafka sink: closed")
		}
		usable := 0
		for _, c := range s.slots {
			if !c.broken {
				usable++
			}
			if !c.busy && !c.broken {
				sl = c
				break
			}
		}
		if usable == 0 {
			s.mu.Unlock()
			return nil, errors.New("kafka sink: every transactional producer of the subtask failed a commit or abort; the job restarts to resolve them")
		}
		if sl == nil {
			s.free.Wait()
		}
	}
	sl.busy = true
	s.mu.Unlock()
	if err := sl.cl.BeginTransaction(); err != nil {
		s.release(sl, true)
		return nil, fmt.Errorf("kafka sink: beginning a transaction on '%s': %w", sl.txnID, err)
	}
	return &txn{slot: sl}, nil
}

// release frees a slot; broken ones are never used again.
func (s *txnSink) release(sl *slot, broken bool) {
	s.mu.Lock()
	sl.busy = false
	sl.broken = sl.broken || broken
	s.free.Broadcast()
	s.mu.Unlock()
}

func (s *txnSink) Write(b exec.Batch) error {
	defer b.Release()
	recs, err := s.records(b)
	if err != nil || len(recs) == 0 {
		return err
	}
	if s.open == nil {
		if s.open, err = s.begin(); err != nil {
			return err
		}
	}
	t := s.open
	t.mu.Lock()
	err = t.err
	t.mu.Unlock()
	if err != nil {
		return fmt.Errorf("kafka sink: producing to topic '%s' in transaction '%s': %w", s.cfg.Topic, t.slot.txnID, err)
	}
	for i := range recs {
		t.slot.cl.Produce(s.prodCtx, &recs[i], t.promise)
	}
	return nil
}

// PreCommit seals the open transaction under checkpoint id: every record acknowledged, the handle built. A
// checkpoint without rows stages nothing.
func (s *txnSink) PreCommit(id uint64) error {
	t := s.open
	if t == nil {
		return nil
	}
	cl := t.slot.cl
	if err := s.flush(cl); err != nil {
		return fmt.Errorf("kafka sink: flushing transaction '%s': %w", t.slot.txnID, err)
	}
	t.mu.Lock()
	err := t.err
	h := Handle{Version: 1, TransactionalID: t.slot.txnID, Topic: s.cfg.Topic}
	for p, pr := range t.parts {
		if pr.First >= 0 {
			h.Partitions = append(h.Partitions, HandlePartition{Partition: int32(p), First: pr.First, Last: pr.Last})
		}
	}
	t.mu.Unlock()
	if err != nil {
		return fmt.Errorf("kafka sink: producing to topic '%s' in transaction '%s': %w", s.cfg.Topic, t.slot.txnID, err)
	}
	if len(h.Partitions) == 0 {
		return fmt.Errorf("kafka sink: transaction '%s' flushed without an acknowledged record", t.slot.txnID)
	}
	pid, epoch, err := cl.ProducerID(s.prodCtx)
	if err != nil {
		return fmt.Errorf("kafka sink: the producer id of transaction '%s': %w", t.slot.txnID, err)
	}
	h.ProducerID, h.ProducerEpoch = pid, epoch
	if t.handle, err = json.Marshal(h); err != nil {
		return err
	}
	t.ckpt = id
	s.mu.Lock()
	s.staged = append(s.staged, t)
	s.mu.Unlock()
	s.open = nil
	return nil
}

// Handle returns the handle PreCommit(id) staged, nil when it staged nothing.
func (s *txnSink) Handle(id uint64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.staged {
		if t.ckpt == id {
			return t.handle, nil
		}
	}
	return nil, nil
}

// Commit commits the staged transactions <= id in order, each receipted the instant the broker acknowledged it.
// A commit that fails leaves its slot broken and the transaction staged: a later Commit retries it through the
// resolver (EndTxn with its identity, then the proofs), and a restart's in-doubt resolution does the same.
func (s *txnSink) Commit(id uint64) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	for {
		s.mu.Lock()
		var t *txn
		if len(s.staged) > 0 && s.staged[0].ckpt <= id {
			t = s.staged[0]
		}
		s.mu.Unlock()
		if t == nil {
			return nil
		}
		if err := s.commitOne(t); err != nil {
			return err
		}
		// The broker acknowledged: the receipt comes before anything else.
		if err := s.ctx.Receipt(t.ckpt); err != nil {
			return fmt.Errorf("kafka sink: the commit receipt of checkpoint %d: %w", t.ckpt, err)
		}
		t.mu.Lock()
		s.Add(t.bytes)
		t.mu.Unlock()
		s.mu.Lock()
		s.staged = s.staged[1:]
		s.mu.Unlock()
		s.release(t.slot, false)
	}
}

func (s *txnSink) commitOne(t *txn) error {
	if !t.failed {
		err := t.slot.cl.EndTransaction(s.prodCtx, kgo.TryCommit)
		if err == nil {
			return nil
		}
		t.failed = true
		s.mu.Lock()
		t.slot.broken = true
		s.mu.Unlock()
		return fmt.Errorf("kafka sink: committing transaction '%s' of checkpoint %d: %w", t.slot.txnID, t.ckpt, err)
	}
	v, err := s.resolver.ResolveCommit(s.prodCtx, t.handle)
	if err != nil {
		return fmt.Errorf("kafka sink: committing transaction '%s' of checkpoint %d again: %w", t.slot.txnID, t.ckpt, err)
	}
	if v != exec.VerdictCommitted {
		return fmt.Errorf("kafka sink: transaction '%s' of checkpoint %d is %s after its commit failed", t.slot.txnID, t.ckpt, v)
	}
	return nil
}

// Abort aborts the staged transaction of checkpoint id (a failed checkpoint). On a broken slot it leaves the
// transaction to the next Open's fence.
func (s *txnSink) Abort(id uint64) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	var t *txn
	for i, c := range s.staged {
		if c.ckpt == id {
			t = c
			s.staged = append(s.staged[:i:i], s.staged[i+1:]...)
			break
		}
	}
	broken := t != nil && t.slot.broken
	s.mu.Unlock()
	if t == nil || broken {
		return nil
	}
	if err := t.slot.cl.EndTransaction(s.prodCtx, kgo.TryAbort); err != nil {
		s.release(t.slot, true)
		return fmt.Errorf("kafka sink: aborting transaction '%s' of checkpoint %d: %w", t.slot.txnID, id, err)
	}
	s.release(t.slot, false)
	return nil
}

// Close leaves every transaction as it is: staged ones are barrier-sealed and the restart's in-doubt resolution
// decides them; the open one is aborted by the next Open's fence (or the broker's timeout).
func (s *txnSink) Close() error {
	if s.cancel == nil {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	if s.free != nil {
		s.free.Broadcast()
	}
	s.mu.Unlock()
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.cancel()
	s.closeSlots()
	return nil
}

// ResolveCommit and Describe make the sink (an instance that is never opened) the runtime's resolver.
func (s *txnSink) ResolveCommit(ctx context.Context, handle []byte) (exec.Verdict, error) {
	return s.resolver.ResolveCommit(ctx, handle)
}

func (s *txnSink) Describe(ctx context.Context, handle []byte) (exec.Verdict, error) {
	return s.resolver.Describe(ctx, handle)
}

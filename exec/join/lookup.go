package join

import (
	"container/list"
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/rowcodec"
)

// LookupJoin: Flink's lookup join, `l JOIN dim FOR SYSTEM_TIME AS OF l.proc_time AS d ON l.k = d.id` over a table of
// an external system (exec.LookupTable). Contract:
//
//   - Input: one, the left side (append-only: a row kind other than Insert fails the operator); the right side is
//     the table, read per batch: the batch's distinct non-NULL keys that the cache does not hold (or holds past
//     their TTL) are looked up in one LookupTable.Lookup call, tried again up to MaxRetries times on an error
//     (Backoff apart, doubling), then the operator fails (the job restarts).
//   - Match: processing time: a left row joins the table's rows of its key (keys equal, a NULL key never matches)
//     as the table held them when looked up, or as cached, and Residual TRUE over the pair; INNER drops a left row
//     without a match, LEFT pads it with NULLs. Only JoinInner and JoinLeft.
//   - Cache: per subtask, the rows of up to CacheRows keys' rows (a key the table does not hold is cached too and
//     counts as one row), least recently used evicted first; an entry older than CacheTTL (0: no limit) is looked
//     up again. CacheRows 0: no cache, every batch looks its keys up.
//   - Output: JoinOutputSchema, inserts only, per input batch in row order, each row with its matches in the
//     order Lookup returned them; batches of at most emitRows rows. Watermarks pass unchanged (the left's time
//     columns are its own).
//   - State: none (the cache is not checkpointed: a restored job looks keys up again). Nothing is written to the
//     state backend.
//
// It must never query the table per row, hold a batch past Process, or keep a row in the cache beyond CacheRows.

// LookupJoinConfig is a lookup join: JoinSpec's Right is the table's schema and RightKeys its key columns (the
// order of the key records given to Lookup).
type LookupJoinConfig struct {
	JoinSpec
	Table      func(subtask int) exec.LookupTable
	CacheRows  int
	CacheTTL   time.Duration
	MaxRetries int
	// Backoff is the pause before the first retry (doubling after); 0 means 100ms.
	Backoff time.Duration
	// Now is the cache's clock; nil means time.Now. Tests inject one.
	Now func() time.Time
}

type lookupPlan struct {
	*timeSpec
	cfg     LookupJoinConfig
	keySchm *arrow.Schema // the key record's schema: the right's key fields
}

// NewLookupJoin validates cfg and returns the operator factory and its output schema (JoinOutputSchema). Errors are
// sqlerr errors as NewTemporalJoin's.
func NewLookupJoin(cfg LookupJoinConfig) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	if cfg.Type != JoinInner && cfg.Type != JoinLeft {
		return nil, nil, errTimeJoin("a lookup join is INNER or LEFT, not %s", cfg.Type)
	}
	if cfg.Table == nil {
		return nil, nil, internalf("lookup join", "no table")
	}
	if cfg.CacheRows < 0 || cfg.CacheTTL < 0 || cfg.MaxRetries < 0 {
		return nil, nil, internalf("lookup join", "negative cache or retry setting")
	}
	spec, err := planTimeJoin(cfg.JoinSpec, "lookup join")
	if err != nil {
		return nil, nil, err
	}
	fields := make([]arrow.Field, len(cfg.RightKeys))
	for i, k := range cfg.RightKeys {
		fields[i] = cfg.Right.Field(k)
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &lookupPlan{timeSpec: spec, cfg: cfg, keySchm: arrow.NewSchema(fields, nil)}
	return func(sub int) exec.Operator { return &lookupJoin{p: p, sub: sub} }, spec.out, nil
}

type lookupJoin struct {
	exec.NoTimers
	p     *lookupPlan
	sub   int
	ctx   *exec.TaskContext
	table exec.LookupTable
	cache *lookupCache

	out  *array.RecordBuilder
	dec  [2]rowDecoder
	cand *array.RecordBuilder // residual candidates
	cdec [2]rowDecoder
	ectx expr.Context // the residual's: the job's clock for PROCTIME(), user functions opened once

	// Per batch.
	keys, left, rkeys, rrows rowcodec.KeyRows
	nullKey                  []bool
	keyOf                    []string // per left row: its key's canonical bytes ("" for a NULL key)
	found                    map[string][][]byte
	asked                    map[string]bool // the keys of reps
	reps                     []int32         // a left row of each key to look up
}

var _ exec.Operator = (*lookupJoin)(nil)

func (j *lookupJoin) Open(ctx *exec.TaskContext) error {
	j.ctx = ctx
	j.table = j.p.cfg.Table(j.sub)
	j.cache = newLookupCache(j.p.cfg.CacheRows, j.p.cfg.CacheTTL)
	j.ectx = expr.Context{Alloc: ctx.Alloc, Mode: j.p.spec.Mode, BadValues: ctx.Errors, Clock: ctx.Clock}
	j.found = map[string][][]byte{}
	j.asked = map[string]bool{}
	return nil
}

// keyString is the canonical key bytes of left row i (keys loaded).
func (j *lookupJoin) keyString(keys *rowcodec.KeyRows, i int) string {
	if j.p.keyEnc.Mode == rowcodec.KeyInt {
		return string(rowcodec.AppendIntKey(nil, keys.Ints[i], false))
	}
	return string(keys.BytesOf(i))
}

func (j *lookupJoin) Process(input int, b exec.Batch, out exec.Emitter) error {
	defer b.Release()
	if input != 0 {
		return fmt.Errorf("lookup join: input %d (it has one)", input)
	}
	for _, k := range b.Kinds {
		if k != exec.Insert {
			return fmt.Errorf("lookup join: input row of kind %s (the input must be append-only)", k)
		}
	}
	n := b.Rows()
	if n == 0 {
		return nil
	}
	p := j.p
	rec := b.Rec
	if err := j.keys.Load(&p.keyEnc, rec, p.keys[0]); err != nil {
		return err
	}
	if err := j.left.Load(&p.rowEnc[0], rec, p.cols[0]); err != nil {
		return err
	}
	nullKey := nullKeyRows(rec, p.keys[0], &j.nullKey)
	now := p.cfg.Now()
	clear(j.found)
	clear(j.asked)
	j.keyOf, j.reps = j.keyOf[:0], j.reps[:0]
	for i := 0; i < n; i++ {
		if nullKey != nil && nullKey[i] {
			j.keyOf = append(j.keyOf, "")
			continue
		}
		k := j.keyString(&j.keys, i)
		j.keyOf = append(j.keyOf, k)
		if _, ok := j.found[k]; ok {
			continue
		}
		if rows, ok := j.cache.get(k, now); ok {
			j.found[k] = rows
			continue
		}
		j.found[k] = nil
		j.asked[k] = true
		j.reps = append(j.reps, int32(i))
	}
	if len(j.reps) > 0 {
		if err := j.lookup(rec, now); err != nil {
			return err
		}
	}
	return j.emit(out)
}

// lookup queries the keys of the rows in reps and records their rows in found and the cache.
func (j *lookupJoin) lookup(rec arrow.RecordBatch, now time.Time) error {
	p := j.p
	taker := exec.NewColumnTaker(j.ctx.Alloc, j.reps)
	defer taker.Release()
	cols := make([]arrow.Array, len(p.keys[0]))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for c, k := range p.keys[0] {
		a, err := taker.Take(rec.Column(k))
		if err != nil {
			return err
		}
		cols[c] = a
	}
	keyRec := array.NewRecordBatch(p.keySchm, cols, int64(len(j.reps)))
	defer keyRec.Release()
	var res arrow.RecordBatch
	var err error
	pause := p.cfg.Backoff
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err = j.table.Lookup(ctx, j.ctx.Alloc, keyRec)
		cancel()
		if err == nil || attempt >= p.cfg.MaxRetries {
			break
		}
		time.Sleep(pause)
		pause *= 2
	}
	if err != nil {
		return fmt.Errorf("lookup join: %w", err)
	}
	defer res.Release()
	if !res.Schema().Equal(p.schemas[1]) {
		return fmt.Errorf("lookup join: the table returned %s, want %s", res.Schema(), p.schemas[1])
	}
	if res.NumRows() > 0 {
		if err := j.rkeys.Load(&p.keyEnc, res, p.keys[1]); err != nil {
			return err
		}
		if err := j.rrows.Load(&p.rowEnc[1], res, p.cols[1]); err != nil {
			return err
		}
		nulls := nullKeyRows(res, p.keys[1], &j.nullKey)
		for i := 0; i < int(res.NumRows()); i++ {
			if nulls != nil && nulls[i] {
				continue
			}
			k := j.keyString(&j.rkeys, i)
			if !j.asked[k] {
				continue // not a key this lookup asked for
			}
			j.found[k] = append(j.found[k], append([]byte(nil), j.rrows.BytesOf(i)...))
		}
	}
	for _, r := range j.reps {
		k := j.keyOf[r]
		j.cache.put(k, j.found[k], now)
	}
	return nil
}

// emit builds the output of the loaded batch.
func (j *lookupJoin) emit(out exec.Emitter) error {
	p := j.p
	var mask []bool
	if p.spec.Residual != nil {
		var err error
		if mask, err = j.residual(); err != nil {
			return err
		}
	}
	if j.out == nil {
		j.out = array.NewRecordBuilder(j.ctx.Alloc, p.out)
		j.dec = pairDecoders(p.timeSpec, j.out)
	}
	rows, m := 0, 0
	for i, k := range j.keyOf {
		matched := false
		if k != "" {
			for _, r := range j.found[k] {
				if mask != nil {
					ok := mask[m]
					m++
					if !ok {
						continue
					}
				}
				matched = true
				if err := j.pair(j.out, &j.dec, i, r); err != nil {
					return err
				}
				rows++
			}
		}
		if !matched && p.outer[0] {
			if err := j.pair(j.out, &j.dec, i, nil); err != nil {
				return err
			}
			rows++
		}
		if rows >= emitRows {
			if err := out.Emit(exec.Batch{Rec: j.out.NewRecordBatch()}); err != nil {
				return err
			}
			rows = 0
		}
	}
	if rows > 0 {
		return out.Emit(exec.Batch{Rec: j.out.NewRecordBatch()})
	}
	return nil
}

// residual evaluates the residual condition over every candidate pair of the batch, in emission order.
func (j *lookupJoin) residual() ([]bool, error) {
	p := j.p
	if j.cand == nil {
		j.cand = array.NewRecordBuilder(j.ctx.Alloc, p.out)
		j.cdec = pairDecoders(p.timeSpec, j.cand)
	}
	var mask []bool
	flush := func() error {
		rec := j.cand.NewRecordBatch()
		defer rec.Release()
		if rec.NumRows() == 0 {
			return nil
		}
		res, err := p.spec.Residual.Eval(&j.ectx, rec)
		if err != nil {
			return err
		}
		defer res.Release()
		bs := res.(*array.Boolean)
		for k := 0; k < bs.Len(); k++ {
			mask = append(mask, bs.IsValid(k) && bs.Value(k))
		}
		return nil
	}
	n := 0
	for i, k := range j.keyOf {
		if k == "" {
			continue
		}
		for _, r := range j.found[k] {
			if err := j.pair(j.cand, &j.cdec, i, r); err != nil {
				return nil, err
			}
			if n++; n%emitRows == 0 {
				if err := flush(); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return mask, nil
}

// pair appends left row i joined with right row bytes r (nil: NULLs).
func (j *lookupJoin) pair(b *array.RecordBuilder, dec *[2]rowDecoder, i int, r []byte) error {
	if err := dec[0].decode(j.left.BytesOf(i)); err != nil {
		return err
	}
	if r == nil {
		for _, f := range b.Fields()[j.p.schemas[0].NumFields():] {
			f.AppendNull()
		}
		return nil
	}
	return dec[1].decode(r)
}

func pairDecoders(p *timeSpec, b *array.RecordBuilder) [2]rowDecoder {
	nl := p.schemas[0].NumFields()
	return [2]rowDecoder{newRowDecoder(&p.rowEnc[0], b.Fields()[:nl]), newRowDecoder(&p.rowEnc[1], b.Fields()[nl:])}
}

func (j *lookupJoin) OnBarrier(uint64) error { return nil }

func (j *lookupJoin) Close() error {
	for _, b := range []*array.RecordBuilder{j.out, j.cand} {
		if b != nil {
			b.Release()
		}
	}
	j.out, j.cand = nil, nil
	j.ectx.Close()
	if j.table != nil {
		err := j.table.Close()
		j.table = nil
		return err
	}
	return nil
}

// lookupCache is the lookup join's LRU cache of keys' rows, bounded by rows, with a time to live.
type lookupCache struct {
	max  int
	ttl  time.Duration
	lru  list.List // of *cacheEntry, most recently used first
	m    map[string]*list.Element
	rows int
}

type cacheEntry struct {
	key  string
	rows [][]byte
	at   time.Time
}

func newLookupCache(max int, ttl time.Duration) *lookupCache {
	return &lookupCache{max: max, ttl: ttl, m: map[string]*list.Element{}}
}

func entrySize(rows [][]byte) int { return max(1, len(rows)) }

// get returns a key's cached rows, if cached and not older than the TTL.
func (c *lookupCache) get(key string, now time.Time) ([][]byte, bool) {
	e, ok := c.m[key]
	if !ok {
		return nil, false
	}
	ce := e.Value.(*cacheEntry)
	if c.ttl > 0 && now.Sub(ce.at) >= c.ttl {
		c.remove(e)
		return nil, false
	}
	c.lru.MoveToFront(e)
	return ce.rows, true
}

// put caches a key's rows (none: the table does not hold it), evicting the least recently used past max.
func (c *lookupCache) put(key string, rows [][]byte, now time.Time) {
	if c.max == 0 || entrySize(rows) > c.max {
		return
	}
	if e, ok := c.m[key]; ok {
		c.remove(e)
	}
	c.m[key] = c.lru.PushFront(&cacheEntry{key: key, rows: rows, at: now})
	c.rows += entrySize(rows)
	for c.rows > c.max {
		c.remove(c.lru.Back())
	}
}

func (c *lookupCache) remove(e *list.Element) {
	ce := e.Value.(*cacheEntry)
	c.lru.Remove(e)
	delete(c.m, ce.key)
	c.rows -= entrySize(ce.rows)
}

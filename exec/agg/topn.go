package agg

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
)

// TopN: ROW_NUMBER(), RANK() or DENSE_RANK() OVER (PARTITION BY .. ORDER BY ..) filtered by r <= N.
//
// Contract:
//
//   - Input: one logical input, append-only or (InputUpdating) a changelog: +I and +U add a row, -U and -D take one
//     copy of an equal row out. An append-only input receiving -U or -D fails the operator; a retraction of a row
//     the partition does not hold is ignored (as Flink does) and counted in TaskContext.Errors.
//   - Order: by the sort keys (Desc, NullsFirst exactly as given; floats with NaN above every number; strings and
//     binary by bytes), then by the row's canonical bytes (package rowcodec), so equal sort keys rank the same way
//     whatever the arrival order; identical rows are copies of one entry and rank next to each other. Two rows tie
//     when their sort keys are equal (equal order bytes, see topn_op.go; NULLs equal).
//   - Ranks (Postgres'): ROW_NUMBER numbers the rows 1, 2, 3, ... in that order (ties broken by the canonical
//     bytes); RANK is 1 + the number of the partition's rows with a strictly better sort key (ties share a rank,
//     with a gap after them); DENSE_RANK is 1 + the number of distinct better sort keys. The top set of a
//     partition is every row whose rank is <= N: for ROW_NUMBER exactly min(N, rows) rows, for RANK and
//     DENSE_RANK every row of a tie at the boundary too (so possibly more than N rows; DENSE_RANK keeps all rows of
//     the N best distinct sort keys).
//   - Output: the input columns, then with RankOut the rank (BIGINT, RankName), as a changelog computed per input
//     batch: for each partition the batch changed, in the order of first change, the top set before the batch is
//     compared with the top set after it. ROW_NUMBER with RankOut compares position by position (r = 1..N): the
//     same row emits nothing, two different rows -U (old, r) then +U (new, r), a row only before -D (old, r), a
//     row only after +I (new, r). RANK and DENSE_RANK with RankOut compare the two top sets as multisets of (row,
//     rank) pairs: -D for each pair that left (a row that left, or whose rank changed), then +I for each pair that
//     entered, each in rank order. Without RankOut, any function compares multisets of rows: -D for each copy that
//     left the top set, then +I for each copy that entered (each in rank order). An output batch whose rows are
//     all +I carries nil Kinds.
//   - Partitions: hashable key types (exec.HashKeys), NULLs together; a row's key group is the hash exchange's, and
//     a row of a key group the subtask does not own fails the operator. Without partition columns every row is in
//     key group 0. Every input column must have a canonical encoding (integers, dates, timestamps, floats,
//     decimals, booleans, strings, binary): rows are kept as their canonical bytes.
//   - State: see topn_op.go. Over an append-only input a partition keeps its top set only (a row's rank only grows
//     as rows arrive, so a row outside it never comes back): N rows for ROW_NUMBER, the top set with its ties for
//     RANK and DENSE_RANK. Over a changelog it keeps every row, since a retraction can bring the next row in.
//     Watermarks pass through.

// SortKey is one ORDER BY key of a Top-N.
type SortKey struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// RankFunc is the ranking function of a Top-N.
type RankFunc uint8

const (
	// RowNumber numbers the rows of a partition 1, 2, 3, ... (ties broken by the rows' canonical bytes).
	RowNumber RankFunc = iota
	// Rank is 1 + the number of rows with a strictly better sort key: ties share a rank, with a gap after them.
	Rank
	// DenseRank is 1 + the number of distinct strictly better sort keys: ties share a rank, without gaps.
	DenseRank
)

// String is the SQL name of f (as EXPLAIN shows it).
func (f RankFunc) String() string {
	switch f {
	case RowNumber:
		return "ROW_NUMBER"
	case Rank:
		return "RANK"
	case DenseRank:
		return "DENSE_RANK"
	}
	return fmt.Sprintf("RankFunc(%d)", uint8(f))
}

// TopNConfig is Rank() OVER (PARTITION BY Partition ORDER BY Order) filtered by r <= N: the rows of each
// partition whose rank is at most N, as a changelog.
type TopNConfig struct {
	Partition []int
	Order     []SortKey
	N         int64
	// Rank is the ranking function; the zero value is ROW_NUMBER.
	Rank RankFunc
	// RankOut appends the rank (BIGINT, named RankName) to each output row.
	RankOut  bool
	RankName string
	// InputUpdating says whether the input is a changelog.
	InputUpdating bool
}

// defaultMaxParts bounds the working set of partitions, as defaultMaxGroups does for groups.
const defaultMaxParts = 1 << 18

// defaultCompactMaxN is the largest N whose append-only ROW_NUMBER Top-N keeps a partition as one state entry
// (topn_op.go): a changed partition is rewritten whole at a barrier, at most N rows, which beats a Put per row that
// entered and a Delete per row pushed out while N is small. RANK and DENSE_RANK have no such bound (a tie at the
// boundary keeps all its rows), so they keep the per-entry layout.
const defaultCompactMaxN = 32

// topNPlan is the validated, immutable part of the operator, shared by its subtasks.
type topNPlan struct {
	cfg     TopNConfig
	in, out *arrow.Schema
	partEnc rowcodec.Encoding
	// rowEnc decodes a row's canonical bytes (every input column) into the output builders.
	rowEnc   rowcodec.Encoding
	allCols  []int
	maxParts int
	// compactMaxN: an append-only ROW_NUMBER Top-N with N <= compactMaxN stores each partition as one entry
	// (topNPartID).
	compactMaxN int64
}

// NewTopN validates cfg against the input schema and returns the operator factory and the output schema: the input
// columns, then the rank when RankOut. Errors are sqlerr errors: 0A000 for a partition, order or input column
// type the operator cannot handle, XX000 for a malformed config (a planner bug).
func NewTopN(cfg TopNConfig, in *arrow.Schema) (func(subtask int) exec.Operator, *arrow.Schema, error) {
	p, err := planTopN(cfg, in)
	if err != nil {
		return nil, nil, err
	}
	return func(int) exec.Operator { return newTopN(p) }, p.out, nil
}

func topNInternalf(format string, args ...any) error {
	return sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "Top-N: "+format, args...)
}

func planTopN(cfg TopNConfig, in *arrow.Schema) (*topNPlan, error) {
	if cfg.N <= 0 {
		return nil, topNInternalf("N must be positive, not %d", cfg.N)
	}
	if cfg.Rank > DenseRank {
		return nil, topNInternalf("unknown ranking function %d", cfg.Rank)
	}
	if cfg.RankOut && cfg.RankName == "" {
		return nil, topNInternalf("RankOut without a RankName")
	}
	partTypes, _, err := planKeys(in, cfg.Partition, "partition", "partition by", topNInternalf)
	if err != nil {
		return nil, err
	}
	for _, k := range cfg.Order {
		if err := checkColumn(in, k.Col, "order", topNInternalf); err != nil {
			return nil, err
		}
	}
	p := &topNPlan{cfg: cfg, in: in, partEnc: rowcodec.NewKeyEncoding(partTypes), maxParts: defaultMaxParts,
		compactMaxN: defaultCompactMaxN}
	p.rowEnc, p.allCols, err = rowcodec.RowEncoding(in, func(f arrow.Field) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos,
			"Top-N over a %s column (%q) is not supported", f.Type, f.Name)
	})
	if err != nil {
		return nil, err
	}
	fields := append(make([]arrow.Field, 0, in.NumFields()+1), in.Fields()...)
	if cfg.RankOut {
		fields = append(fields, arrow.Field{Name: cfg.RankName, Type: arrow.PrimitiveTypes.Int64})
	}
	p.out = arrow.NewSchema(fields, nil)
	return p, nil
}

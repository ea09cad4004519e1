package agg

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/rowcodec"
	"github.com/clinksql/clinksql/sqlerr"
)

// TopN: ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..) filtered by rn <= N.
//
// Contract:
//
//   - Input: one logical input, append-only or (InputUpdating) a changelog: +I and +U add a row, -U and -D take one
//     copy of an equal row out. An append-only input receiving -U or -D fails the operator; a retraction of a row
//     the partition does not hold is ignored (as Flink does) and counted in TaskContext.Errors.
//   - Order: by the sort keys (Desc, NullsFirst exactly as given; floats with NaN above every number; strings and
//     binary by bytes), then by the row's canonical bytes (package rowcodec), so equal sort keys rank the same way
//     whatever the arrival order; identical rows are copies of one entry and rank next to each other.
//   - Output: the input columns, then with RankOut the row number (BIGINT, RankName), as a changelog computed per
//     input batch: for each partition the batch changed, in the order of first change, the top N before the batch
//     is compared with the top N after it. With RankOut, position by position (r = 1..N): the same row emits
//     nothing, two different rows -U (old, r) then +U (new, r), a row only before -D (old, r), a row only after
//     +I (new, r). Without RankOut, as a multiset: -D for each copy that left the top N, then +I for each copy that
//     entered (each in rank order). An output batch whose rows are all +I carries nil Kinds.
//   - Partitions: hashable key types (exec.HashKeys), NULLs together; a row's key group is the hash exchange's, and
//     a row of a key group the subtask does not own fails the operator. Without partition columns every row is in
//     key group 0. Every input column must have a canonical encoding (integers, dates, timestamps, floats,
//     decimals, booleans, strings, binary): rows are kept as their canonical bytes.
//   - State: see topn_op.go. Over an append-only input a partition keeps its top N rows only; over a changelog it
//     keeps every row, since a retraction can bring row N+1 in. Watermarks pass through.

// SortKey is one ORDER BY key of a Top-N.
type SortKey struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// TopNConfig is ROW_NUMBER() OVER (PARTITION BY Partition ORDER BY Order) filtered by rn <= N: the first N rows
// of each partition, as a changelog.
type TopNConfig struct {
	Partition []int
	Order     []SortKey
	N         int64
	// RankOut appends the row number (BIGINT, named RankName) to each output row.
	RankOut  bool
	RankName string
	// InputUpdating says whether the input is a changelog.
	InputUpdating bool
}

// defaultMaxParts bounds the working set of partitions, as defaultMaxGroups does for groups.
const defaultMaxParts = 1 << 18

// defaultCompactMaxN is the largest N whose append-only Top-N keeps a partition as one state entry (topn_op.go): a
// changed partition is rewritten whole at a barrier, at most N rows, which beats a Put per row that entered and a
// Delete per row pushed out while N is small.
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
	// compactMaxN: an append-only Top-N with N <= compactMaxN stores each partition as one entry (topNPartID).
	compactMaxN int64
}

// NewTopN validates cfg against the input schema and returns the operator factory and the output schema: the input
// columns, then the row number when RankOut. Errors are sqlerr errors: 0A000 for a partition, order or input column
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

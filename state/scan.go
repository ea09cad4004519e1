package state

import (
	"bytes"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// cursor is one layer of a merged Scan, positioned on its next key in ascending order.
type cursor interface {
	valid() bool
	key() []byte
	current() (entry, error)
	advance() error
}

// mergeScan calls fn for each live key across cursors in ascending order. cs is ordered newest layer first: on equal
// keys the newest layer's entry wins, and a tombstone there hides the key in every older layer.
func mergeScan(cs []cursor, fn func(key, value []byte) error) error {
	tie := make([]int, 0, len(cs))
	for {
		tie = tie[:0]
		var low []byte
		for i, c := range cs {
			if !c.valid() {
				continue
			}
			k := c.key()
			switch {
			case len(tie) == 0:
				low, tie = k, append(tie, i)
			default:
				switch cmp := bytes.Compare(k, low); {
				case cmp < 0:
					low, tie = k, append(tie[:0], i)
				case cmp == 0:
					tie = append(tie, i)
				}
			}
		}
		if len(tie) == 0 {
			return nil
		}
		e, err := cs[tie[0]].current()
		if err != nil {
			return err
		}
		if !e.del {
			if err := fn(low, e.v); err != nil {
				return err
			}
		}
		for _, i := range tie {
			if err := cs[i].advance(); err != nil {
				return err
			}
		}
	}
}

// pebbleCursor adapts a bounded Pebble iterator.
type pebbleCursor struct{ it *pebble.Iterator }

func (c pebbleCursor) valid() bool { return c.it.Valid() }
func (c pebbleCursor) key() []byte { return c.it.Key() }
func (c pebbleCursor) current() (entry, error) {
	v, err := c.it.ValueAndErr()
	return entry{v: v}, err
}
func (c pebbleCursor) advance() error {
	c.it.Next()
	return c.it.Error()
}

// prefixEnd is the smallest key greater than every key with prefix p, or nil when there is none (p is all 0xFF).
func prefixEnd(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xFF {
			end := slices.Clone(p[:i+1])
			end[i]++
			return end
		}
	}
	return nil
}

package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/clinksql/clinksql/state"
)

// The checkpoint directory of a job, <data>/jobs/<job>/checkpoints, holds:
//
//	chk-<id>/<participant>/...  what each participant persisted for checkpoint id
//	COMPLETED-<id>              the durable marker that makes id a restore point (framed, state.Frame: the id)
//	HIGHWATER                   the highest id anything here ever named, written before retention deletes (framed)
//	ABANDONED-<id>              the marker of a completed checkpoint that a restore fell back from (Abandon)
//	CONFIRMED-<id>, receipts/   jobs with a sink whose commit is not recoverable (indoubt.go)
//	.<name>.part                temp files of WriteFsyncRename, never a record of anything
const (
	chkPrefix    = "chk-"
	markerPrefix = "COMPLETED-"
	abandoned    = "ABANDONED-"
	highWater    = "HIGHWATER"
)

// SubtaskDir is where participant p persists its snapshot of checkpoint id.
func SubtaskDir(dir string, id uint64, p ParticipantID) string {
	return filepath.Join(chkDir(dir, id), string(p))
}

func chkDir(dir string, id uint64) string {
	return filepath.Join(dir, chkPrefix+strconv.FormatUint(id, 10))
}

// MarkerPath is the COMPLETED marker of checkpoint id.
func MarkerPath(dir string, id uint64) string {
	return filepath.Join(dir, markerPrefix+strconv.FormatUint(id, 10))
}

func highWaterPath(dir string) string { return filepath.Join(dir, highWater) }

// IsCompleted reports whether checkpoint id has a durable COMPLETED marker: a 2PC sink's recovery commits staged
// output of id exactly when this is true.
func IsCompleted(fsys state.FS, dir string, id uint64) bool {
	fi, err := fsOrOS(fsys).Stat(MarkerPath(dir, id))
	return err == nil && fi.Mode().IsRegular()
}

// LatestCompleted is the newest checkpoint with a COMPLETED marker: the restore point. A missing directory is a
// job that never completed a checkpoint (ok = false), not an error. The marker must read back as written: a
// damaged one is a *state.CorruptError.
func LatestCompleted(fsys state.FS, dir string) (id uint64, ok bool, err error) {
	l, err := scanDir(fsys, dir)
	if err != nil {
		return 0, false, err
	}
	if len(l.completed) == 0 {
		return 0, false, nil
	}
	id = l.completed[len(l.completed)-1]
	return id, true, VerifyMarker(fsys, dir, id)
}

// VerifyMarker checks that the COMPLETED marker of id reads back as written (framed, naming id).
func VerifyMarker(fsys state.FS, dir string, id uint64) error {
	return verifyIDMarker(fsys, MarkerPath(dir, id), id)
}

// WriteMarker makes id a restore point: its COMPLETED marker, durable when this returns.
func WriteMarker(fsys state.FS, dir string, id uint64) error {
	return writeIDMarker(fsys, MarkerPath(dir, id), id)
}

// writeIDMarker writes a marker file naming checkpoint id (COMPLETED, CONFIRMED): framed, file and directory
// fsync strict.
func writeIDMarker(fsys state.FS, path string, id uint64) error {
	return state.WriteFramed(fsOrOS(fsys), path, []byte(strconv.FormatUint(id, 10)))
}

// verifyIDMarker checks that the marker at path reads back naming id; a missing or damaged one is a
// *state.CorruptError.
func verifyIDMarker(fsys state.FS, path string, id uint64) error {
	data, err := state.MustReadFramed(fsOrOS(fsys), path)
	if err != nil {
		return err
	}
	if string(data) != strconv.FormatUint(id, 10) {
		return state.Corrupt(path, nil, "names checkpoint %q", data)
	}
	return nil
}

// CompletedIDs lists the checkpoints with a COMPLETED marker, oldest first (SHOW CHECKPOINTS).
func CompletedIDs(fsys state.FS, dir string) ([]uint64, error) {
	l, err := scanDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	return l.completed, nil
}

// NextID is the first checkpoint id a new incarnation of the job may use: one above every id any durable record in
// dir names - COMPLETED and CONFIRMED markers, the high-water mark, chk-<id> directories of checkpoints that never
// completed, commit receipts and unresolved markers.
// Numbering above markers alone would let a successor reuse the id of a dead incarnation's half-written
// checkpoint, and a restore could then assemble one id from files of two vintages.
func NextID(fsys state.FS, dir string) (uint64, error) {
	l, err := scanDir(fsys, dir)
	if err != nil {
		return 0, err
	}
	return l.maxID() + 1, nil
}

// listing is what one directory scan found.
type listing struct {
	completed []uint64 // ascending
	confirmed []uint64 // ascending; CONFIRMED markers (with or without a COMPLETED one)
	chks      []uint64 // ascending; chk-<id> directories, completed or not
	abandoned []uint64 // ascending; ABANDONED markers
	highWater uint64
	receipts  uint64 // the highest id a receipt or unresolved marker names
}

// restorable lists the completed checkpoints that are also confirmed, ascending.
func (l listing) restorable() []uint64 {
	var ids []uint64
	for _, id := range l.completed {
		if slices.Contains(l.confirmed, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

func (l listing) maxID() uint64 {
	m := max(l.highWater, l.receipts)
	if n := len(l.confirmed); n > 0 && l.confirmed[n-1] > m {
		m = l.confirmed[n-1]
	}
	if n := len(l.completed); n > 0 && l.completed[n-1] > m {
		m = l.completed[n-1]
	}
	if n := len(l.chks); n > 0 && l.chks[n-1] > m {
		m = l.chks[n-1]
	}
	return m
}

func scanDir(fsys state.FS, dir string) (listing, error) {
	fsys = fsOrOS(fsys)
	var l listing
	entries, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, fmt.Errorf("checkpoint dir %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") { // WriteFsyncRename temp files (".x.part") record nothing
			continue
		}
		switch {
		case name == highWater:
			path := filepath.Join(dir, name)
			data, err := state.ReadFramed(fsys, path)
			if err != nil {
				return l, fmt.Errorf("checkpoint dir %s: %w", dir, err)
			}
			// Written whole or not at all; anything else is corruption, and guessing low would reuse ids.
			hw, err := strconv.ParseUint(string(data), 10, 64)
			if err != nil {
				return l, state.Corrupt(path, err, "not a checkpoint id")
			}
			l.highWater = hw
		case strings.HasPrefix(name, markerPrefix):
			if id, err := strconv.ParseUint(name[len(markerPrefix):], 10, 64); err == nil && !e.IsDir() {
				l.completed = append(l.completed, id)
			}
		case strings.HasPrefix(name, abandoned):
			if id, err := strconv.ParseUint(name[len(abandoned):], 10, 64); err == nil && !e.IsDir() {
				l.abandoned = append(l.abandoned, id)
			}
		case strings.HasPrefix(name, confirmedPrefix):
			if id, err := strconv.ParseUint(name[len(confirmedPrefix):], 10, 64); err == nil && !e.IsDir() {
				l.confirmed = append(l.confirmed, id)
			}
		case strings.HasPrefix(name, chkPrefix):
			if id, err := strconv.ParseUint(name[len(chkPrefix):], 10, 64); err == nil {
				l.chks = append(l.chks, id)
			}
		}
	}
	sortIDs(l.completed)
	sortIDs(l.confirmed)
	sortIDs(l.chks)
	sortIDs(l.abandoned)
	err = receiptIDs(fsys, dir, func(_ string, id uint64, _ bool) error {
		l.receipts = max(l.receipts, id)
		return nil
	})
	return l, err
}

func fsOrOS(fsys state.FS) state.FS {
	if fsys == nil {
		return state.OS
	}
	return fsys
}

// retain keeps the newest `keep` completed checkpoints of dir and deletes everything older: markers of older
// completed checkpoints and every chk-<id> directory below the oldest retained one, except ids in inFlight (a
// checkpoint still collecting acks owns its directory even if a newer one completed first). issued is the highest
// id the caller has handed out; the high-water mark covers it too.
//
// With confirmed (a job that tracks confirmations), the floor never rises above the newest confirmed checkpoint,
// the restore point of such a job: while newer checkpoints are completed but unconfirmed, purging it would leave
// nothing to restore from if in-doubt resolution cannot settle them (no confirmed checkpoint at all: nothing is
// purged). CONFIRMED markers below the floor go with their COMPLETED ones, and commit receipts below the floor
// in the same sweep (replay suppression only reads receipts above the restore point). Unresolved markers are
// never purged: only their resolution retires them.
func retain(fsys state.FS, dir string, keep int, inFlight map[uint64]bool, issued uint64, confirmed bool) error {
	l, err := scanDir(fsys, dir)
	if err != nil {
		return err
	}
	if len(l.completed) <= keep {
		return nil
	}
	floor := l.completed[len(l.completed)-keep]
	if confirmed {
		r := l.restorable()
		if len(r) == 0 {
			return nil
		}
		floor = min(floor, r[len(r)-1])
	}
	var markers, confirms, chks []uint64
	for _, id := range l.completed {
		if id < floor && !inFlight[id] {
			markers = append(markers, id)
		}
	}
	for _, id := range l.confirmed {
		if id < floor {
			confirms = append(confirms, id)
		}
	}
	var receipts []string
	if confirmed {
		err := receiptIDs(fsOrOS(fsys), dir, func(path string, id uint64, unresolved bool) error {
			if id < floor && !unresolved {
				receipts = append(receipts, path)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("checkpoint retention: %w", err)
		}
	}
	for _, id := range l.chks {
		if id < floor && !inFlight[id] {
			chks = append(chks, id)
		}
	}
	if len(markers) == 0 && len(confirms) == 0 && len(chks) == 0 && len(receipts) == 0 {
		return nil
	}
	// The high-water mark is durable before the first deletion, so the ids about to vanish stay named.
	hw := max(l.maxID(), issued)
	if hw > l.highWater {
		if err := state.WriteFramed(fsOrOS(fsys), highWaterPath(dir), []byte(strconv.FormatUint(hw, 10))); err != nil {
			return fmt.Errorf("checkpoint retention: high-water mark: %w", err)
		}
	}
	fsys = fsOrOS(fsys)
	// Markers go before their directories: a crash in between leaves an uncompleted chk dir (cleaned next time),
	// never a COMPLETED marker whose snapshot files are gone.
	for _, id := range confirms {
		if err := fsys.Remove(ConfirmedPath(dir, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("checkpoint retention: %w", err)
		}
	}
	for _, id := range markers {
		if err := fsys.Remove(MarkerPath(dir, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("checkpoint retention: %w", err)
		}
	}
	for _, id := range chks {
		if err := fsys.RemoveAll(chkDir(dir, id)); err != nil {
			return fmt.Errorf("checkpoint retention: %w", err)
		}
	}
	for _, path := range receipts {
		if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("checkpoint retention: %w", err)
		}
	}
	return nil
}

// AbandonedIDs lists the checkpoints a restore fell back past (ABANDONED markers), oldest first.
func AbandonedIDs(fsys state.FS, dir string) ([]uint64, error) {
	l, err := scanDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	return l.abandoned, nil
}

// Abandon takes completed checkpoints out of the restore points (a restore falling back past them): the
// high-water mark first covers them, so their ids are never issued again, then each COMPLETED marker is renamed
// ABANDONED-<id>, so that no sink's recovery commits their staged output (IsCompleted is false) while the files
// stay for inspection.
func Abandon(fsys state.FS, dir string, ids []uint64) error {
	fsys = fsOrOS(fsys)
	l, err := scanDir(fsys, dir)
	if err != nil {
		return err
	}
	hw := l.maxID()
	for _, id := range ids {
		hw = max(hw, id)
	}
	if hw > l.highWater {
		if err := state.WriteFramed(fsys, highWaterPath(dir), []byte(strconv.FormatUint(hw, 10))); err != nil {
			return fmt.Errorf("abandon checkpoints: high-water mark: %w", err)
		}
	}
	for _, id := range ids {
		if err := fsys.Rename(MarkerPath(dir, id), filepath.Join(dir, abandoned+strconv.FormatUint(id, 10))); err != nil {
			return fmt.Errorf("abandon checkpoint %d: %w", id, err)
		}
	}
	if state.FsyncEnabled() {
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("abandon checkpoints: fsync: %w", err)
		}
	}
	return nil
}

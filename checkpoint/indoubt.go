package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/clinksql/clinksql/state"
)

// The files of a job with a sink whose commit cannot be re-executed after a crash (the seed's commit_recoverable
// == false; the Kafka transactional sink), beside the ones dirs.go lists:
//
//	CONFIRMED-<id>                        every tracked sink subtask committed checkpoint id (framed: the id); the
//	                                      restore points of such a job
//	chk-<id>/<participant>.handle         the resume handle the sink subtask staged at barrier id, with its input
//	                                      watermark there (framed StagedHandle)
//	receipts/<operator>/sub<K>-<id>       commit receipt: the external system acknowledged subtask K's commit of
//	                                      id (framed StagedHandle, the handle's horizon)
//	receipts/<operator>/sub<K>-<id>.unresolved
//	                                      a handle in-doubt resolution could not settle (framed StagedHandle); the
//	                                      runtime consumes it before subtask K opens
const (
	confirmedPrefix  = "CONFIRMED-"
	receiptsDir      = "receipts"
	handleSuffix     = ".handle"
	unresolvedSuffix = ".unresolved"
)

// ConfirmedPath is the CONFIRMED marker of checkpoint id.
func ConfirmedPath(dir string, id uint64) string {
	return filepath.Join(dir, confirmedPrefix+strconv.FormatUint(id, 10))
}

// WriteConfirmed records durably (framed, file and directory fsync strict, like COMPLETED) that every tracked sink
// subtask committed checkpoint id.
func WriteConfirmed(fsys state.FS, dir string, id uint64) error {
	return writeIDMarker(fsys, ConfirmedPath(dir, id), id)
}

// VerifyConfirmed checks that the CONFIRMED marker of id reads back as written.
func VerifyConfirmed(fsys state.FS, dir string, id uint64) error {
	return verifyIDMarker(fsys, ConfirmedPath(dir, id), id)
}

// ConfirmedIDs lists the checkpoints with both a COMPLETED and a CONFIRMED marker, oldest first: the restore
// points of a job that tracks confirmations.
func ConfirmedIDs(fsys state.FS, dir string) ([]uint64, error) {
	l, err := scanDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	return l.restorable(), nil
}

// HandlePath is where participant p stores the resume handle it staged at barrier id: beside its snapshot, in its
// own part of chk-<id>. Nothing ever reads a participant's handle from anywhere else.
func HandlePath(dir string, id uint64, p ParticipantID) string {
	return SubtaskDir(dir, id, p) + handleSuffix
}

// ReceiptPath is the commit receipt of subtask sub of sink operator op for checkpoint id.
func ReceiptPath(dir, op string, sub int, id uint64) string {
	return filepath.Join(dir, receiptsDir, op, "sub"+strconv.Itoa(sub)+"-"+strconv.FormatUint(id, 10))
}

// UnresolvedPath is the marker of a handle of subtask sub of op, staged at id, that in-doubt resolution left
// unsettled.
func UnresolvedPath(dir, op string, sub int, id uint64) string {
	return ReceiptPath(dir, op, sub, id) + unresolvedSuffix
}

// StagedHandle is what the runtime keeps of one sink subtask's staged transaction: in the handle file, in the
// receipt of its commit and in an unresolved marker.
type StagedHandle struct {
	ID          uint64
	Participant ParticipantID
	// Horizon is the sink subtask's input watermark at barrier ID: replay suppression drops the replayed rows
	// whose row time (exec.Node.RowTimeColumn) is at or below it.
	Horizon int64
	// Handle is the sink's resume handle (InDoubtSink.Handle); empty when the subtask staged nothing.
	Handle []byte
}

const stagedHandleVersion = 1

func (h StagedHandle) encode() []byte {
	b := []byte{stagedHandleVersion}
	b = binary.BigEndian.AppendUint64(b, h.ID)
	b = binary.BigEndian.AppendUint64(b, uint64(h.Horizon))
	b = binary.BigEndian.AppendUint32(b, uint32(len(h.Participant)))
	b = append(b, h.Participant...)
	return append(b, h.Handle...)
}

// WriteStagedHandle writes h durably at path (framed, fsync).
func WriteStagedHandle(fsys state.FS, path string, h StagedHandle) error {
	fsys = fsOrOS(fsys)
	if err := fsys.MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	return state.WriteFramed(fsys, path, h.encode())
}

// ReadStagedHandle reads the StagedHandle at path and checks that it is the one of checkpoint id and participant
// p: a file that does not read back as written, or that names another checkpoint or participant (a copy of
// someone else's handle), is a *state.CorruptError naming it. A missing file is the file system's error
// (errors.Is fs.ErrNotExist).
func ReadStagedHandle(fsys state.FS, path string, id uint64, p ParticipantID) (StagedHandle, error) {
	data, err := state.ReadFramed(fsOrOS(fsys), path)
	if err != nil {
		return StagedHandle{}, err
	}
	if len(data) < 1+8+8+4 || data[0] != stagedHandleVersion {
		return StagedHandle{}, state.Corrupt(path, nil, "not a staged sink handle")
	}
	h := StagedHandle{ID: binary.BigEndian.Uint64(data[1:]), Horizon: int64(binary.BigEndian.Uint64(data[9:]))}
	n := int(binary.BigEndian.Uint32(data[17:]))
	if len(data) < 21+n {
		return StagedHandle{}, state.Corrupt(path, nil, "truncated participant name")
	}
	h.Participant = ParticipantID(data[21 : 21+n])
	h.Handle = data[21+n:]
	if h.ID != id || h.Participant != p {
		return StagedHandle{}, state.Corrupt(path, nil, "holds the handle of %s at checkpoint %d, not of %s at %d",
			h.Participant, h.ID, p, id)
	}
	return h, nil
}

// SubtaskReceipts is what receipts/<op> holds for one subtask: the checkpoint ids with a commit receipt and those
// with an unresolved marker, ascending.
type SubtaskReceipts struct {
	Receipts, Unresolved []uint64
}

// ListReceipts scans receipts/<op> for subtask sub. A missing directory holds nothing.
func ListReceipts(fsys state.FS, dir, op string, sub int) (SubtaskReceipts, error) {
	var r SubtaskReceipts
	entries, err := fsOrOS(fsys).ReadDir(filepath.Join(dir, receiptsDir, op))
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("receipts of %s: %w", op, err)
	}
	prefix := "sub" + strconv.Itoa(sub) + "-"
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		rest, unresolved := strings.CutSuffix(name[len(prefix):], unresolvedSuffix)
		id, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			continue
		}
		if unresolved {
			r.Unresolved = append(r.Unresolved, id)
		} else {
			r.Receipts = append(r.Receipts, id)
		}
	}
	sortIDs(r.Receipts)
	sortIDs(r.Unresolved)
	return r, nil
}

func sortIDs(ids []uint64) { sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] }) }

// HasReceipt reports whether subtask sub of op has a commit receipt for id.
func HasReceipt(fsys state.FS, dir, op string, sub int, id uint64) bool {
	fi, err := fsOrOS(fsys).Stat(ReceiptPath(dir, op, sub, id))
	return err == nil && fi.Mode().IsRegular()
}

// receiptIDs visits every receipt and unresolved marker of every operator: their ids count for NextID, and
// retention prunes the receipts below its floor.
func receiptIDs(fsys state.FS, dir string, visit func(path string, id uint64, unresolved bool) error) error {
	root := filepath.Join(dir, receiptsDir)
	ops, err := fsys.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint dir %s: %w", dir, err)
	}
	for _, op := range ops {
		if !op.IsDir() {
			continue
		}
		entries, err := fsys.ReadDir(filepath.Join(root, op.Name()))
		if err != nil {
			return fmt.Errorf("checkpoint dir %s: %w", dir, err)
		}
		for _, e := range entries {
			name := e.Name()
			_, rest, ok := strings.Cut(name, "-")
			if !ok || !strings.HasPrefix(name, "sub") {
				continue
			}
			rest, unresolved := strings.CutSuffix(rest, unresolvedSuffix)
			id, err := strconv.ParseUint(rest, 10, 64)
			if err != nil {
				continue
			}
			if err := visit(filepath.Join(root, op.Name(), name), id, unresolved); err != nil {
				return err
			}
		}
	}
	return nil
}

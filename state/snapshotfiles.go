package state

// SnapshotFiles lists the files a persisted snapshot at path consists of, with their sizes: the snapshot's own
// file and, for keyed state (a chain listing), every file of its chain as the listing records it. Read-only; the
// runtime uses it for a subtask's state size and for the bytes each checkpoint added.
func SnapshotFiles(fsys FS, path string, keyed bool) (map[string]int64, error) {
	fsys = orOS(fsys)
	fi, err := fsys.Stat(path)
	if err != nil {
		return nil, err
	}
	files := map[string]int64{path: fi.Size()}
	if !keyed {
		return files, nil
	}
	c, err := readChain(fsys, path)
	if err != nil {
		return nil, err
	}
	for p, s := range c.sums {
		files[p] = s.size
	}
	return files, nil
}

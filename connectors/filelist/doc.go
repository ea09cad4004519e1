// Package filelist lists the files a file or Parquet source's 'path' names (a directory, a glob pattern or one
// file), fingerprints the list, and encodes a bounded source's place in it in its offset, so that a restore over
// a list that changed fails instead of skipping or repeating rows.
//
// It must never list or read a file outside what the source's PathGuard allows (Guard checks every listed file),
// touch the file system except through the state.FS it is given, or let a restore go on over a list whose
// fingerprint differs (CheckSame refuses it, saying how the list changed).
package filelist

//go:build linux

package persistence

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bbolt reads its file through a memory mapping, so every page a read touches counts in the
// process's resident memory (RssFile) until the kernel needs it back, though it is the kernel's
// page cache, not memory Herald holds: a scheduler walking a backlog of a million posts maps the
// whole file, gigabytes. watchMapped gives the mapping's pages back whenever the process's
// file-backed resident memory passes Options.MaxMappedBytes (checked every 100 ms): madvise
// MADV_DONTNEED over the file's mapping, in a read transaction, so that bbolt cannot remap it
// meanwhile. The pages stay in the page cache (the mapping is shared and read-only: nothing is
// lost), and the next read maps them again at the cost of a minor fault each.

// watchMapped runs until the store closes.
func (s *Store) watchMapped(limit int64, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		if n, ok := fileResident(); ok && n > limit {
			_ = s.releaseMapped()
		}
	}
}

// releaseMapped gives back the pages of the bbolt file mapped into the process.
func (s *Store) releaseMapped() error {
	return s.db.View(func(tx *bolt.Tx) error {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, tx.DB().Info().Data, uintptr(tx.Size()), syscall.MADV_DONTNEED); errno != 0 {
			return errno
		}
		return nil
	})
}

// fileResident reads the process's file-backed resident memory (the third figure of
// /proc/self/statm, in pages: file-backed and shared pages).
func fileResident() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

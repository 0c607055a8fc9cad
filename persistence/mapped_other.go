//go:build !linux

package persistence

import "time"

// watchMapped does nothing where the process's mapped pages are not released (mapped_linux.go).
func (s *Store) watchMapped(int64, time.Duration) {}

func (s *Store) releaseMapped() error { return nil }
